"""The ``lspilot/update`` notifications a turn sends the editor, made from its loop events."""

from __future__ import annotations

from typing import Any

from .loop import Event, Loop

OUTPUT_EXCERPT = 2000


def updates(event: Event, loop: Loop) -> list[dict[str, Any]]:
    """The ``lspilot/update`` payloads (minus session and turn ids) for one loop event."""
    data = event.data
    match event.type:
        case "text" | "reasoning":
            return [{"kind": event.type, "delta": data["delta"], "messageId": data.get("messageId")}]
        case "tool":
            call = {"kind": "toolCall", "id": data["callId"], "tool": data["tool"], "status": data["state"]}
            call |= {k: data[k] for k in ("title", "input", "metadata") if data.get(k) is not None}
            if data.get("output") is not None:
                call["output"] = data["output"][:OUTPUT_EXCERPT]
            plan = data["tool"] == "todowrite" and data["state"] == "completed"
            todos = [vars(todo) for todo in loop.env.session.todos()] if plan else []
            return [call, {"kind": "plan", "todos": todos}] if plan else [call]
        case "retry":
            return [{"kind": "status", "status": "retrying", **data}]
        case "compaction":
            return [{"kind": "status", "status": "compacting", **data}]
        case "error":
            return [{"kind": "status", "status": "error", **data}]
        case "turn.start":
            return [{"kind": "status", "status": "running", "prompt": data["prompt"]}]
        case "turn.end":
            return [{"kind": "turnEnd", "stopReason": data["stopReason"], "error": data.get("error")}]
        case _:
            return []
