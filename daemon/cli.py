"""The `lspilot` command line: serve, demo, run, tools, sessions and language servers.

Only the standard library is imported at the top: each command imports what it needs, so
`lspilot serve` answers its editor and `lspilot --help` prints without loading lsprotocol or litellm.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import re
import sys
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from . import check_command, jsontext, lsp_command, model, stopping, trust
from . import config as configuration
from .serve import VERSION

if TYPE_CHECKING:
    from .store import Store

log = logging.getLogger(__name__)


class _Formatter(logging.Formatter):
    """Records as text UTF-8 carries: a file name that is not UTF-8 (a lone surrogate in ``str``)
    is written as the tools show it (``caf\\xe9.py``); the log file handler would otherwise
    refuse the whole line and print a "Logging error" traceback instead."""

    def format(self, record: logging.LogRecord) -> str:
        return jsontext.valid_text(super().format(record))


def _setup_logging(verbose: bool) -> None:
    """The log file, and stderr for warnings (everything with ``-v``). A log file that cannot be
    written (its folder is a file, a read-only disk) leaves stderr alone, and says so there."""
    from .redact import REDACTOR  # noqa: PLC0415 - loads tools and lsp_bridge: see main

    logfile = configuration.log_dir() / "lspilot.log"
    handlers: list[logging.Handler] = []
    try:
        logfile.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(logfile, encoding="utf-8", errors="backslashreplace")
        handler.setFormatter(_Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        handlers.append(handler)
        unwritable = None
    except OSError as error:
        unwritable = error.strerror or str(error)
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(logging.DEBUG if verbose else logging.WARNING)
    console.setFormatter(_Formatter("lspilot: %(message)s"))
    handlers.append(console)
    REDACTOR.add_environment(os.environ)
    for each in handlers:
        each.addFilter(REDACTOR)
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, handlers=handlers)
    logging.getLogger("pygls").setLevel(logging.WARNING)
    if unwritable is not None:
        log.warning("cannot write the log file %s (%s): logging to stderr only", logfile, unwritable)


def _servers(args: argparse.Namespace) -> int:
    from lsp_bridge import BridgeError, ServerRegistry  # noqa: PLC0415
    from lsp_bridge import install as installer  # noqa: PLC0415

    if args.action != "install" and args.names:
        print(
            f"lspilot servers {args.action}: takes no server names (servers install NAME... does)",
            file=sys.stderr,
        )
        return 2
    cfg = configuration.load(Path(args.root).resolve())  # the project's own [lsp.servers] too
    bridge_config = cfg.bridge()
    registry = ServerRegistry.from_config(bridge_config.servers)
    if args.action in ("list", "status"):
        for spec in registry.all():
            status = installer.status(spec, bridge_config.data_dir)
            default = "default" if spec.enabled else "       "
            where = " ".join(status.command) if status.command else installer.install_command(spec)
            languages = " ".join(sorted(set(spec.language_ids.values())))
            print(f"{spec.name:28} {default} {status.state:10} {languages}")
            if args.action == "status":
                print(f"{'':37}{where}")
        return 0
    if not args.names:
        print(
            "lspilot servers install: name at least one server (see `lspilot servers list`)",
            file=sys.stderr,
        )
        return 2
    try:  # every name known before anything is installed
        specs = [(name, registry.get(name)) for name in args.names]
    except BridgeError as error:
        print(f"lspilot servers install: {error}", file=sys.stderr)
        return 2
    failed = 0
    for name, spec in specs:
        try:
            status = asyncio.run(installer.install(spec, bridge_config.data_dir))
        except BridgeError as error:
            print(f"{name}: {error}", file=sys.stderr)
            failed += 1
            continue
        print(f"{name}: {status.state} ({' '.join(status.command or [])})")
    return 1 if failed else 0


def _serve(_args: argparse.Namespace) -> int:
    from . import serve  # noqa: PLC0415

    return serve.main()


def _demo(_args: argparse.Namespace) -> int:
    from . import demo  # noqa: PLC0415 - imported only when the demo runs

    return stopping.run(demo.run(configuration.load(Path.cwd()).bridge()))


PATCH_TARGET = re.compile(r"^(?:\*\*\* (?:Update|Delete) File: |--- (?:a/)?|\+\+\+ (?:b/)?)(.+?)\s*$", re.M)


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
        arguments = json.loads(text)
    except json.JSONDecodeError as error:
        return f"the arguments are not valid JSON: {error}"
    if not isinstance(arguments, dict):
        return f"the arguments must be a JSON object ('{{...}}'), not {json.dumps(arguments)[:60]}"
    return cast(dict[str, Any], arguments)


async def _run_tool(args: argparse.Namespace) -> int:
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


def _run(args: argparse.Namespace) -> int:
    from . import run  # noqa: PLC0415 - the agent loop is imported only when a turn runs

    trust.offer_at_terminal(Path(args.root).resolve())  # before the turn's event loop: see there
    return stopping.run(run.run(args))


def _sessions(args: argparse.Namespace) -> int:
    from . import transcript  # noqa: PLC0415
    from .store import Store  # noqa: PLC0415

    root = Path(args.root).resolve()
    if args.action == "list" and args.id:
        print("lspilot sessions list: takes no session id (sessions show ID shows one)", file=sys.stderr)
        return 2
    if args.action == "list":  # a path that is no folder would list nothing, as if it had none
        configuration.check_workspace(root)
    store = Store(configuration.data_dir() / "lspilot.db")
    try:
        if args.action == "list":
            running = store.running()
            for row in store.sessions(root):
                stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(row["updated"]))
                state = "  (running)" if row["id"] in running else ""
                print(f"{row['id']}  {stamp}  {row['agent']:8} {jsontext.shown(row['title'])}{state}")
            return 0
        if not args.id:
            print(
                f"lspilot sessions {args.action}: name a session (see `lspilot sessions list`)",
                file=sys.stderr,
            )
            return 2
        if store.session_root(args.id) is None:
            print(f"lspilot sessions {args.action}: no session {args.id!r}", file=sys.stderr)
            return 2
        if args.action == "export" and args.format == "json":
            exported = json.dumps(transcript.as_json(store, args.id), indent=1)
            print(jsontext.valid_unicode(exported, lambda value: json.dumps(value, indent=1)))
        elif args.action == "export":  # to a file, as it is
            print(transcript.as_markdown(store, args.id))
        else:  # a prompt's, a file's or the model's escape sequences would act on the terminal
            print(jsontext.shown(transcript.as_markdown(store, args.id), keep="\n"))
        return 0
    finally:
        store.close()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lspilot", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug output to stderr")
    parser.add_argument("--version", action="version", version=f"lspilot {VERSION}")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="the language server editors start (LSP over stdio)")
    serve.add_argument(
        "--stdio", action="store_true", help="accepted for clients that pass it; stdio is the only transport"
    )
    serve.set_defaults(run=_serve)
    demo = sub.add_parser("demo", help="language servers, then one agent turn, on a bundled sample project")
    demo.set_defaults(run=_demo)
    tool = sub.add_parser("tool", help="run one tool through the same checks as the agent")
    tool.add_argument("name", help="tool id, e.g. read, grep, glob")
    tool.add_argument("args", nargs="?", default="{}", help="the arguments as a JSON object")
    tool.add_argument("--root", default=".", help="workspace root (default: the current directory)")
    tool.add_argument("--yes", action="store_true", help="approve every ask (configured denies still hold)")
    tool.add_argument("--json", action="store_true", help="print {title, output, metadata, error}")
    tool.add_argument("--session", help="run inside this session (its read times and todos)")
    tool.set_defaults(run=lambda a: stopping.run(_run_tool(a)))
    run = sub.add_parser("run", help="run one agent turn in the terminal")
    run.add_argument(
        "prompt",
        nargs="?",
        help="what the agent should do; none or - reads it from stdin (echo PROMPT | lspilot run); "
        "text piped in with a prompt goes along after it (git diff | lspilot run 'review this')",
    )
    run.add_argument("--model", help="litellm model name (default: the agent's, LSPILOT_MODEL, config)")
    run.add_argument("--api-base", help="the provider's base URL (default: config or LSPILOT_API_BASE)")
    run.add_argument("--root", default=".", help="workspace root (default: the current directory)")
    run.add_argument("--agent", help="build (default), plan, or one from the config")
    run.add_argument("--session", help="continue this session")
    run.add_argument("--yes", action="store_true", help="approve every ask (configured denies still hold)")
    run.add_argument("--json", action="store_true", help="print one JSON event per line")
    run.set_defaults(run=_run)
    sessions = sub.add_parser("sessions", help="list, show or export stored sessions")
    sessions.add_argument("action", choices=["list", "show", "export"])
    sessions.add_argument("id", nargs="?")
    sessions.add_argument("--root", default=".", help="workspace whose sessions to list")
    sessions.add_argument("--format", choices=["json", "markdown"], default="json", help="export format")
    sessions.set_defaults(run=_sessions)
    lsp_command.add_parser(sub)
    check_command.add_parser(sub)
    trust.add_parser(sub)
    servers = sub.add_parser("servers", help="list, check or install language servers")
    servers.add_argument("action", choices=["list", "status", "install"])
    servers.add_argument("names", nargs="*", help="servers to install")
    servers.add_argument(
        "--root", default=".", help="workspace whose config to use (default: the current directory)"
    )
    servers.set_defaults(run=_servers)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:  # Ctrl-C as lspilot starts (tools and lsp_bridge load with the log's redactor) is quiet too
        args = _parser().parse_args(argv)
        _setup_logging(args.verbose)
        return args.run(args)
    except KeyboardInterrupt:
        _interrupted()
        return 130
    except stopping.Stopped as stopped:  # SIGTERM or SIGHUP, after what was running stopped
        _interrupted()
        return stopped.status
    except BrokenPipeError:
        # The reader went away (`lspilot sessions list | head -1`): stop quietly. stdout points at
        # /dev/null from now on, so the interpreter's last flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # as a process killed by SIGPIPE
    except Exception as error:
        if not _is_user_error(error):
            raise
        print(f"lspilot: {error}", file=sys.stderr)
        return 2 if isinstance(error, configuration.UsageError) else 1
    finally:
        model.close()  # litellm's clients and the model thread, before the interpreter shuts down


def _interrupted() -> None:
    """After a turn was stopped: a model request it had begun (a coroutine litellm made on its
    executor thread and had not awaited yet) is dropped unawaited, which Python would warn of, in
    two lines, as the process exits."""
    warnings.filterwarnings("ignore", r"coroutine '.*' was never awaited", RuntimeWarning)


def _is_user_error(error: Exception) -> bool:
    """A configuration or language-server problem the user can fix: printed, not a traceback.
    (Looked up lazily: a module that was never imported cannot have raised its error.)"""
    bridge = sys.modules.get("lsp_bridge")
    return isinstance(error, configuration.ConfigError) or (
        bridge is not None and isinstance(error, bridge.BridgeError)
    )


if __name__ == "__main__":
    sys.exit(main())
