"""The `lspilot` command line: serve, demo, run, tools, sessions and language servers.

Only the standard library and light modules of lspilot are imported at the top: each command
imports what it needs, so `lspilot serve` answers its editor and `lspilot --help` prints without
loading lsprotocol or litellm, and Ctrl-C as it starts is already in ``main``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import time
import warnings
from pathlib import Path

from . import check_command, jsontext, lsp_command, model, stopping, tool_command, trust
from . import config as configuration
from .entry import InterruptsAfter
from .output import Unwritable, why, written
from .serve import VERSION

log = logging.getLogger(__name__)


class _Formatter(logging.Formatter):
    """Records as text UTF-8 carries: a file name that is not UTF-8 (a lone surrogate in ``str``)
    is written as the tools show it (``caf\\xe9.py``); the log file handler would otherwise
    refuse the whole line and print a "Logging error" traceback instead."""

    def format(self, record: logging.LogRecord) -> str:
        return jsontext.valid_text(super().format(record))


class _LogFile(logging.FileHandler):
    """The log file. Once it cannot be written (a full disk) it is dropped, saying so on stderr,
    instead of a "--- Logging error ---" traceback there for every record."""

    dropped = False

    def emit(self, record: logging.LogRecord) -> None:
        if not self.dropped:
            super().emit(record)

    def handleError(self, record: logging.LogRecord) -> None:
        error = sys.exc_info()[1]
        if not isinstance(error, OSError) or self.dropped:
            return super().handleError(record)
        self.dropped = True
        log.warning(NO_LOG_FILE, self.baseFilename, why(error))


NO_LOG_FILE = "cannot write the log file %s (%s): logging to stderr only"


def _setup_logging(verbose: bool) -> None:
    """The log file, and stderr for warnings (everything with ``-v``). A log file that cannot be
    written (its folder is a file, a read-only or full disk) leaves stderr alone, and says so there."""
    with InterruptsAfter():
        from .redact import REDACTOR  # noqa: PLC0415 - loads tools and lsp_bridge: see main

    logfile = configuration.log_dir() / "lspilot.log"
    handlers: list[logging.Handler] = []
    try:
        logfile.parent.mkdir(parents=True, exist_ok=True)
        handler = _LogFile(logfile, encoding="utf-8", errors="backslashreplace")
        handler.setFormatter(_Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        handlers.append(handler)
        unwritable = None
    except OSError as error:
        unwritable = why(error)
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
        log.warning(NO_LOG_FILE, logfile, unwritable)


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
        lines: list[str] = []
        for spec in registry.all():
            status = installer.status(spec, bridge_config.data_dir)
            default = "default" if spec.enabled else "       "
            where = " ".join(status.command) if status.command else installer.install_command(spec)
            languages = " ".join(sorted(set(spec.language_ids.values())))
            lines.append(f"{spec.name:28} {default} {status.state:10} {languages}")
            if args.action == "status":
                lines.append(f"{'':37}{where}")
        with written("servers"):
            print("\n".join(lines))
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


def _run(args: argparse.Namespace) -> int:
    with InterruptsAfter():
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
    store = Store(configuration.data_dir() / "lspilot.db", reading=True)  # also on a read-only disk
    try:
        if args.action == "list":
            running = store.running()
            with written("sessions list"):
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
            text = jsontext.valid_unicode(exported, lambda value: json.dumps(value, indent=1))
        elif args.action == "export":  # to a file, as it is
            text = transcript.as_markdown(store, args.id)
        else:  # a prompt's, a file's or the model's escape sequences would act on the terminal
            text = jsontext.shown(transcript.as_markdown(store, args.id), keep="\n")
        with written(f"sessions {args.action}"):
            print(text)
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
    tool_command.add_parser(sub)
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
    except Unwritable as unwritable:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # what is buffered goes nowhere
        print(unwritable, file=sys.stderr)
        return 1
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
