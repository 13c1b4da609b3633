"""A stored session as JSON (everything) or as readable markdown (``lspilot sessions show|export``)."""

from __future__ import annotations

import json
import time
from typing import Any

from tools.context import shown_path

from .store import Store


def as_json(store: Store, session_id: str) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    parts = store.session_parts(session_id)
    for row in store.messages(session_id):
        message = dict(row)
        message["usage"] = json.loads(row["usage"]) if row["usage"] else None
        message["parts"] = []
        for part in parts.get(row["id"], []):
            item = {k: v for k, v in dict(part).items() if v is not None and k != "message_id"}
            if "metadata" in item:
                item["metadata"] = json.loads(item["metadata"])
            message["parts"].append(item)
        messages.append(message)
    root = shown_path(str(store.session_root(session_id)))  # a root that is not UTF-8 as \xNN
    return {"id": session_id, "root": root, "messages": messages}


def as_markdown(store: Store, session_id: str) -> str:
    data = as_json(store, session_id)
    out = [f"# Session {session_id}", f"Workspace: `{data['root']}`", ""]
    for message in data["messages"]:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(message["created"]))
        out.append(f"## {message['role']} ({stamp})")
        for part in message["parts"]:
            kind = part["kind"]
            if kind in ("text", "summary"):
                out.append(part.get("text", ""))
            elif kind == "reasoning":
                out.append("> " + part.get("text", "").replace("\n", "\n> "))
            elif kind == "tool":
                out.append(f"**{part['tool']}** `{part.get('input', '')}` — {part.get('state')}")
                if part.get("output"):
                    out.append("```\n" + part["output"][:4000] + "\n```")
            elif kind == "error":
                out.append(f"*{part.get('text', '')}*")
        out.append("")
    return "\n".join(out)
