"""`lspilot run PROMPT`: one turn in the terminal, streamed as text or as JSON lines."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TextIO

from .loop import Event
from .runtime import Runtime
from .terminal import TerminalAsker

EXIT = {"end": 0, "max_steps": 1, "rejected": 1, "error": 1, "cancelled": 130}


class Renderer:
    """Human-readable events: text as it streams, a line per tool call, errors and retries."""

    def __init__(self, out: TextIO, colour: bool) -> None:
        self.out = out
        self.colour = colour
        self.line_open = False

    def _style(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.colour else text

    def _line(self, text: str) -> None:
        if self.line_open:
            self.out.write("\n")
            self.line_open = False
        self.out.write(text + "\n")
        self.out.flush()

    def __call__(self, event: Event) -> None:
        data = event.data
        if event.type == "text":
            self.out.write(data["delta"])
            self.line_open = not data["delta"].endswith("\n")
            self.out.flush()
        elif event.type == "tool" and data["state"] in ("completed", "error"):
            mark = self._style("32", "✓") if data["state"] == "completed" else self._style("31", "✗")
            title = data.get("title") or (data.get("output") or "").splitlines()[0:1]
            self._line(f"{mark} {data['tool']} {title if isinstance(title, str) else ''.join(title)}")
        elif event.type == "retry":
            self._line(self._style("33", f"… {data['error']}; retrying in {data['wait']:.1f}s"))
        elif event.type == "compaction":
            self._line(self._style("33", "… the conversation is too long for the model; summarising it"))
        elif event.type == "error":
            self._line(self._style("31", f"error: {data['message']}"))


async def run(args: argparse.Namespace) -> int:
    runtime = Runtime.open(Path(args.root).resolve())

    def as_json(event: Event) -> None:
        sys.stdout.write(json.dumps(asdict(event), default=str) + "\n")
        sys.stdout.flush()

    listener = as_json if args.json else Renderer(sys.stdout, sys.stdout.isatty())
    loop = runtime.loop(
        TerminalAsker(yes=args.yes),
        session_id=args.session,
        agent_name=args.agent,
        model=args.model,
        api_base=args.api_base,
        listeners=[listener],
    )
    try:
        await loop.initialize()
        result = await loop.run_turn(args.prompt)
    finally:
        await loop.env.close()
        runtime.store.close()
    if not args.json:
        sys.stdout.write("\n" if result.text and not result.text.endswith("\n") else "")
        print(f"session {result.session_id}", file=sys.stderr)
    return EXIT.get(result.stop_reason, 1)
