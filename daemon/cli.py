"""The `lspilot` command line: demo, and managing language servers."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from lsp_bridge import BridgeError, ServerRegistry
from lsp_bridge import install as installer

from . import config as configuration

log = logging.getLogger(__name__)


def _setup_logging(verbose: bool) -> Path:
    folder = configuration.log_dir()
    folder.mkdir(parents=True, exist_ok=True)
    logfile = folder / "lspilot.log"
    handler = logging.FileHandler(logfile)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(logging.DEBUG if verbose else logging.WARNING)
    console.setFormatter(logging.Formatter("lspilot: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO, handlers=[handler, console])
    logging.getLogger("pygls").setLevel(logging.WARNING)
    return logfile


def _servers(args: argparse.Namespace) -> int:
    cfg = configuration.load(Path.cwd())
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
    failed = 0
    for name in args.names:
        spec = registry.get(name)
        try:
            status = asyncio.run(installer.install(spec, bridge_config.data_dir))
        except BridgeError as error:
            print(f"{name}: {error}", file=sys.stderr)
            failed += 1
            continue
        print(f"{name}: {status.state} ({' '.join(status.command or [])})")
    return 1 if failed else 0


def _demo(_args: argparse.Namespace) -> int:
    from . import demo  # noqa: PLC0415 - imported only when the demo runs

    return asyncio.run(demo.run(configuration.load(Path.cwd()).bridge()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lspilot", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug output to stderr")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="show lsp_bridge on a bundled sample project")
    demo.set_defaults(run=_demo)
    servers = sub.add_parser("servers", help="list, check or install language servers")
    servers.add_argument("action", choices=["list", "status", "install"])
    servers.add_argument("names", nargs="*", help="servers to install")
    servers.set_defaults(run=_servers)
    args = parser.parse_args(argv)
    _setup_logging(args.verbose)
    try:
        return args.run(args)
    except BridgeError as error:
        print(f"lspilot: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
