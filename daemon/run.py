"""`lspilot run PROMPT`: one turn in the terminal, streamed as text or as JSON lines."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import select
import stat
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, TextIO

from . import jsontext
from .jsontext import shown
from .loop import Event
from .runtime import Runtime
from .terminal import TerminalAsker

EXIT = {"end": 0, "length": 1, "filtered": 1, "max_steps": 1, "rejected": 1, "error": 1, "cancelled": 130}


DIFF_STYLE = (("+++", "1"), ("---", "1"), ("@@", "36"), ("+", "32"), ("-", "31"))
SHOWN_LINES = 40  # of a diff or an output, per tool call
STDIN_QUIET = 3.0  # seconds of nothing on a pipe before saying what lspilot waits for


class Renderer:
    """Human-readable events: text as it streams, a line per tool call with the diff it made
    (coloured on a terminal) and the problems it caused, errors and retries. With ``outputs`` it
    also shows the start of what each other tool returned."""

    def __init__(
        self, out: TextIO, colour: bool, root: Path, *, outputs: bool = False, notes: TextIO | None = None
    ) -> None:
        self.out = out
        self.notes = notes or out  # errors, retries and compaction: not part of the answer
        self.colour = colour
        self.root = root
        self.outputs = outputs
        self.line_open = False

    def _style(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.colour and code else text

    def _line(self, text: str) -> None:
        if self.line_open:
            self.out.write("\n")
            self.line_open = False
        self.out.write(text + "\n")
        self.out.flush()

    def note(self, text: str) -> None:
        self._line(self._style("2", shown(text)))

    def _block(self, lines: list[str], style: Callable[[str], str]) -> None:
        for line in lines[:SHOWN_LINES]:
            self._line("    " + style(shown(line)))
        if len(lines) > SHOWN_LINES:
            self.note(f"    ... {len(lines) - SHOWN_LINES} more lines")

    def _diff_style(self, line: str) -> str:
        code = next((code for prefix, code in DIFF_STYLE if line.startswith(prefix)), "")
        return self._style(code, line)

    def _tool(self, data: dict[str, Any]) -> None:
        ok = data["state"] == "completed"
        mark = self._style("32", "✓") if ok else self._style("31", "✗")
        lines = str(data.get("output") or "").splitlines()
        title = data.get("title")
        if not title and lines:  # an error's first line stands as the title, and is not repeated
            title, lines = lines[0], lines[1:]
        self._line(f"{mark} {shown(data['tool'])} {shown(title or '')}")
        metadata = data.get("metadata") or {}
        if ok and metadata.get("diff"):
            self._block(metadata["diff"].splitlines(), self._diff_style)
            for path, report in (metadata.get("diagnostics") or {}).items():
                if report.get("new"):
                    where = (
                        Path(path).relative_to(self.root) if Path(path).is_relative_to(self.root) else path
                    )
                    self._line("    " + self._style("33", f"new problems in {shown(str(where))}:"))
                    self._block(report["new"], lambda line: self._style("31", line))
        elif self.outputs or not ok:
            self._block(lines, lambda line: self._style("2", line))

    def __call__(self, event: Event) -> None:
        data = event.data
        if event.type == "text":
            self.out.write(shown(data["delta"], keep="\n"))
            self.line_open = not data["delta"].endswith("\n")
            self.out.flush()
        elif event.type == "tool" and data["state"] in ("completed", "error"):
            self._tool(data)
        elif event.type == "retry":
            if data.get("discarded"):
                self._notice(self._style("33", "… the model's answer above broke off and is discarded"))
            self._notice(self._style("33", f"… {shown(data['error'])}; retrying in {data['wait']:.1f}s"))
        elif event.type == "compaction":
            self._notice(self._style("33", "… the conversation is too long for the model; summarising it"))
        elif event.type == "error":
            self._notice(self._style("31", f"error: {shown(data['message'])}"))

    def _notice(self, text: str) -> None:
        if self.notes is self.out:
            self._line(text)
            return
        if self.line_open:  # end the answer's line first, so the note does not land in the middle
            self.out.write("\n")
            self.out.flush()
            self.line_open = False
        self.notes.write(text + "\n")
        self.notes.flush()


def _piped(waiting: str) -> str:
    """What stdin holds, as bytes: text that is not UTF-8 is kept as the tools show it. A pipe
    that gives nothing, not even its end, for ``STDIN_QUIET`` seconds gets one line on stderr
    saying what lspilot waits for (``waiting``) and how not to: a slow ``cmd | lspilot run`` is still
    read whole, and a program that left its pipe open on lspilot's stdin is told why nothing
    happens (as httpie does), where giving up would send a turn without the text piped in."""
    try:
        quiet = not select.select([sys.stdin], [], [], STDIN_QUIET)[0]
    except (OSError, ValueError):  # not a descriptor select takes: read it as it is
        quiet = False
    if quiet:
        print(
            f"lspilot run: {waiting} (nothing came in {STDIN_QUIET:g} s); "
            "if nothing is meant to come, close it or give < /dev/null",
            file=sys.stderr,
            flush=True,
        )
    return sys.stdin.buffer.read().decode(errors="surrogateescape")


def _was_piped() -> bool:
    """Whether stdin is a pipe or a file (``git diff | ...``, ``< notes.txt``): not a terminal, and
    not what a script or a service leaves there (/dev/null, a socket kept open), where waiting for
    the end of input could wait forever."""
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (AttributeError, OSError, ValueError):  # no stdin at all
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode)


def prompt(given: str | None) -> str | None:
    """The turn's prompt: the one given; ``-`` or none, what is piped in; a prompt given with text
    piped in, both (the prompt first: it names the session). None when there is neither."""
    if given == "-" or (given is None and sys.stdin is not None and not sys.stdin.isatty()):
        return _piped("waiting for the prompt on stdin")
    if given is not None and _was_piped():
        context = _piped("waiting for the end of the text piped in on stdin")
        return f"{given}\n\n{context}" if context.strip() else given
    return given


async def run(args: argparse.Namespace) -> int:
    args.prompt = prompt(args.prompt)
    if args.prompt is None:
        print(
            "lspilot run: say what the agent should do: lspilot run PROMPT, or pipe it in "
            "(echo PROMPT | lspilot run)",
            file=sys.stderr,
        )
        return 2
    if not args.prompt.strip():
        print("lspilot run: the prompt is empty; say what the agent should do", file=sys.stderr)
        return 2
    root = Path(args.root).resolve()
    runtime = Runtime.open(root)

    def as_json(event: Event) -> None:
        sys.stdout.write(jsontext.valid_unicode(json.dumps(asdict(event), default=str)) + "\n")
        sys.stdout.flush()

    show = as_json if args.json else Renderer(sys.stdout, sys.stdout.isatty(), root, notes=sys.stderr)
    task = asyncio.current_task()
    assert task is not None
    unwritable: list[OSError] = []

    def listener(event: Event) -> None:
        """``show``; when the output cannot be written (the reader of ``lspilot run ... | head``
        went away, a full disk) the turn stops, instead of going on unseen, each event a traceback."""
        if unwritable:
            return
        try:
            show(event)
        except OSError as error:
            unwritable.append(error)
            task.cancel()

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
    except asyncio.CancelledError:  # Ctrl-C, SIGTERM: which session to go on with (--session)
        if unwritable:
            task.uncancel()
            return _unwritable(unwritable[0])
        if not args.json:  # there, turn.end carries it
            print(f"session {loop.env.session.id} (cancelled)", file=sys.stderr)
        raise
    finally:
        await loop.env.close()
        runtime.store.close()
    if not args.json:
        sys.stdout.write("\n" if result.text and not result.text.endswith("\n") else "")
        if result.error and result.stop_reason != "error":  # an error was shown as it happened
            print(jsontext.valid_text(result.error), file=sys.stderr)
        elif result.stop_reason == "end" and not result.text:  # else nothing says the turn is over
            print("(the model ended its turn without a word of answer)", file=sys.stderr)
        print(f"session {result.session_id}", file=sys.stderr)
    return EXIT.get(result.stop_reason, 1)


def _unwritable(error: OSError) -> int:
    """The exit status once the output could not be written and the turn was stopped."""
    if isinstance(error, BrokenPipeError):
        raise error  # as a writer killed by SIGPIPE: the CLI exits quietly with 141
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # what is buffered goes nowhere
    print(
        f"lspilot run: cannot write the output ({error.strerror or error}); the turn was stopped",
        file=sys.stderr,
    )
    return 1
