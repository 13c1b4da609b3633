"""`lspilot tool NAME 'JSON'`: one tool through the same wrapper, permissions and config as the
agent's calls, optionally inside a stored session (its read times and todos). `lspilot lsp` comes
through here too.

Kept import-light: tools and lsp_bridge load only when the command runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from . import config as configuration
from . import jsontext, stopping
from .output import written

if TYPE_CHECKING:
    from .store import Store

PATCH_TARGET = re.compile(r"^(?:\*\*\* (?:Update|Delete) File: |--- (?:a/)?|\+\+\+ (?:b/)?)(.+?)\s*$", re.M)


def add_parser(subparsers: Any) -> None:
    """Register `lspilot tool` on the main parser's subparsers."""
    tool = subparsers.add_parser("tool", help="run one tool through the same checks as the agent")
    tool.add_argument("name", help="tool id, e.g. read, grep, glob")
    tool.add_argument("args", nargs="?", default="{}", help="the arguments as a JSON object")
    tool.add_argument("--root", default=".", help="workspace root (default: the current directory)")
    tool.add_argument("--yes", action="store_true", help="approve every ask (configured denies still hold)")
    tool.add_argument("--json", action="store_true", help="print {title, output, metadata, error}")
    tool.add_argument("--session", help="run inside this session (its read times and todos)")
    tool.set_defaults(run=lambda a: stopping.run(run_tool(a)))


def _named_files(value: Any, ctx_root: Path) -> list[Path]:
    """Existing files named anywhere in a tool's arguments, also as the targets of a patch: the
    user who typed them has seen them."""
    if isinstance(value, dict):
        return [f for v in value.values() for f in _named_files(v, ctx_root)]  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [f for v in value for f in _named_files(v, ctx_root)]  # pyright: ignore[reportUnknownVariableType]
    if not isinstance(value, str) or not value or len(value) > 1_000_000:
        return []
    names = PATCH_TARGET.findall(value) if "\n" in value else [value]
    found: list[Path] = []
    for name in names:
        path = Path(name).expanduser()
        path = path if path.is_absolute() else ctx_root / path
        try:
            if len(name) < 4096 and path.is_file():
                found.append(path.resolve())
        except OSError:
            pass
    return found


def _unusable_session(db: Store, session_id: str, workspace: Path) -> str | None:
    """Why ``lspilot tool --session`` cannot run in the session from ``workspace``, if it cannot.
    Its read times and todos are of its own project; one that was moved goes on from here."""
    home = db.session_root(session_id)
    if home is None:
        return f"no session {session_id!r}"
    if home != workspace and home.exists():
        shown = jsontext.valid_text(str(home))
        return f"session {session_id} belongs to {shown}; use it there (--root {shown})"
    if home != workspace:
        db.set_root(session_id, workspace)
    return None


def _tool_arguments(text: str) -> dict[str, Any] | str:
    """The arguments of ``lspilot tool``, or why they are none."""
    try:
        arguments = jsontext.loads(text)
    except ValueError as error:
        return f"the arguments are not valid JSON: {error}"
    if not isinstance(arguments, dict):
        return f"the arguments must be a JSON object ('{{...}}'), not {json.dumps(arguments)[:60]}"
    return cast(dict[str, Any], arguments)


async def run_tool(args: argparse.Namespace) -> int:
    from tools import InitContext, MemorySession, ToolContext, execute  # noqa: PLC0415

    from . import store as storage  # noqa: PLC0415
    from . import tooling  # noqa: PLC0415
    from .lease import SessionBusy  # noqa: PLC0415
    from .terminal import TerminalAsker  # noqa: PLC0415

    arguments = _tool_arguments(args.args)
    root = Path(args.root).resolve()
    cfg = configuration.load(root)
    registry = tooling.registry(cfg)
    known = sorted(set(registry.tools) - {"invalid"})  # "invalid" answers the model's typos
    if isinstance(arguments, str) or args.name not in known:  # the tool's errors are for the model
        unknown = f"no tool called {args.name!r}; tools: {', '.join(known)}"
        print(f"lspilot tool: {arguments if isinstance(arguments, str) else unknown}", file=sys.stderr)
        return 2
    db: storage.Store | None = None
    claimed = contextlib.AsyncExitStack()
    if args.session:
        db = storage.Store(configuration.data_dir() / "lspilot.db")
        problem = _unusable_session(db, args.session, cfg.workspace)
        if problem:
            print(f"lspilot tool: {problem}", file=sys.stderr)
            return 2
        try:  # its read times and todos are written as a turn writes them: one process at a time
            await claimed.enter_async_context(db.claim(args.session))
        except SessionBusy as error:
            print(f"lspilot tool: {error}", file=sys.stderr)
            return 1
        session: Any = storage.StoredSession(db, args.session)
    else:
        session = MemorySession("cli")
        for file in _named_files(arguments, root):
            session.record_read(file)
    env = tooling.environment(cfg, session, TerminalAsker(yes=args.yes))
    await registry.initialize(InitContext(root, env.agent, cfg.raw))  # what fails is warned of
    try:
        outcome = await execute(registry, args.name, arguments, ToolContext(env, "cli"))
    finally:
        await env.close()
        await claimed.aclose()
        if db:
            db.close()
    with written("tool", ran=args.name):  # what it did is done, and stored in its session
        if args.json:
            result = outcome.result
            answer = {
                "title": result.title if result else None,
                "output": result.output if result else None,
                "metadata": result.metadata if result else {},
                "error": outcome.error,
            }
            print(jsontext.valid_unicode(json.dumps(answer, default=str)))
        elif outcome.result is not None:
            print(outcome.result.output)
            for attachment in outcome.result.attachments:
                print(f"[attachment {attachment.filename}: {attachment.mime}, {len(attachment.data)} bytes]")
        else:
            print(f"error: {outcome.error}", file=sys.stderr)
    return 1 if outcome.error else 0
