"""Workspace trust: whether a workspace's own configuration and tools count.

A repository's ``lspilot.toml`` and ``.lspilot/config.toml`` can send the user's API key to
another host (``api_base``), start any program (an ``[lsp.servers]`` command), or loosen the
permission rules (``bash = "allow"``), and its ``.lspilot/tools/*.py`` run inside lspilot. So they
count only in a workspace the user trusts; elsewhere only the deny and ask rules of its
``[permission]`` table apply (a repository may tighten, never loosen), and one warning says what
was left out. The trust record is the user's: one file per trusted workspace (by its real path)
under the data dir, written by ``lspilot trust``, by the answer to ``lspilot run``'s question at a
terminal, or by the editor's answer to ``lspilot serve``'s ``window/showMessageRequest``.
Nothing in a workspace can set it, and no flag (not ``--yes``) trusts implicitly.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from . import config as configuration
from .jsontext import valid_text

if TYPE_CHECKING:
    from .editor import Editor

log = logging.getLogger(__name__)

#: The actions of a rule an untrusted workspace may still set: they only tighten.
TIGHTENING = ("deny", "ask")
TRUST, NOT_NOW = "Trust", "Not now"


def _records() -> Path:
    return configuration.data_dir() / "trusted"


def _record(real: Path) -> Path:
    return _records() / hashlib.sha256(os.fsencode(real)).hexdigest()[:32]


def is_trusted(workspace: Path) -> bool:
    """The user trusts ``workspace`` (by its real path: a symlink to it is trusted with it)."""
    real = workspace.resolve()
    try:
        return _record(real).read_bytes() == os.fsencode(real)
    except OSError:
        return False


def grant(workspace: Path) -> Path:
    """Trust ``workspace``; its real path."""
    real = workspace.resolve()
    record = _record(real)
    record.parent.mkdir(parents=True, exist_ok=True)
    partial = record.with_name(f".{record.name}.{os.getpid()}")
    partial.write_bytes(os.fsencode(real))
    partial.replace(record)  # whole or not at all
    return real


def revoke(workspace: Path) -> bool:
    """Stop trusting ``workspace``; whether it was trusted."""
    real = workspace.resolve()
    if not is_trusted(real):
        return False
    _record(real).unlink(missing_ok=True)
    return True


def trusted() -> list[Path]:
    """Every trusted workspace."""
    try:
        records = [file for file in _records().iterdir() if not file.name.startswith(".")]
    except OSError:
        return []
    return sorted(Path(os.fsdecode(file.read_bytes())) for file in records if file.is_file())


def tightening(table: dict[str, Any]) -> dict[str, Any]:
    """What an untrusted workspace's configuration file still sets: the deny and ask rules of
    its ``[permission]`` table."""
    permission = table.get("permission")
    if not isinstance(permission, dict):
        return {}
    kept: dict[str, Any] = {}
    for name, value in cast(dict[str, Any], permission).items():
        if isinstance(value, dict):
            rules = {p: a for p, a in cast(dict[str, Any], value).items() if a in TIGHTENING}
            if rules:
                kept[name] = rules
        elif value in TIGHTENING:
            kept[name] = value
    return {"permission": kept} if kept else {}


def pending(workspace: Path) -> list[Path]:
    """What of ``workspace`` counts only once the user trusts it: its configuration files that
    set more than deny and ask rules, and its tools folder when it holds tools. Nothing in a
    trusted workspace, or in one without such files (it needs no trust)."""
    if is_trusted(workspace):
        return []
    found: list[Path] = []
    for file in configuration.project_files(workspace):
        try:
            table = configuration.read_file(file)
        except configuration.ConfigError:  # its own warning comes from loading it
            table = {"unreadable": True}
        if table is not None and tightening(table) != table:
            found.append(file)
    tools = workspace / ".lspilot" / "tools"
    if any(tools.glob("*.py")):
        found.append(tools)
    return found


def _names(workspace: Path, paths: list[Path]) -> str:
    return ", ".join(valid_text(str(path.relative_to(workspace))) for path in paths)


def _command(workspace: Path) -> str:
    return f"lspilot trust --root {shlex.quote(valid_text(str(workspace.resolve())))}"


def warn_untrusted(workspace: Path) -> None:
    """One warning naming what of the untrusted ``workspace`` was left out, and how to trust it."""
    left_out = pending(workspace)
    if not left_out:
        return
    tools = workspace / ".lspilot" / "tools"
    still = "; its deny and ask permission rules still apply" if left_out != [tools] else ""
    log.warning(
        "%s is not a trusted workspace: ignored %s%s. To use them: %s",
        valid_text(str(workspace)),
        _names(workspace, left_out),
        still,
        _command(workspace),
    )


def offer_at_terminal(workspace: Path) -> None:
    """``lspilot run`` at a terminal: ask once whether to trust ``workspace``, when it has
    something that counts only then. Asked before the turn's event loop starts, so Ctrl-C stops
    the question as it stops any program."""
    if not sys.stdin.isatty() or not workspace.is_dir():
        return
    left_out = pending(workspace)
    if not left_out:
        return
    sys.stderr.write(
        f"lspilot: {valid_text(str(workspace))} has its own {_names(workspace, left_out)}, which can "
        "run programs, loosen permissions and send your API key elsewhere.\n"
        "Trust this workspace? [y/N] "
    )
    sys.stderr.flush()
    answer = sys.stdin.readline()
    if not answer:
        sys.stderr.write("\n")
    if answer.strip().lower() in ("y", "yes"):
        grant(workspace)


async def offer_in_editor(workspace: Path, editor: Editor) -> bool:
    """``lspilot serve``: ask the editor (``window/showMessageRequest``) whether to trust
    ``workspace``, when it has something that counts only then; whether it is trusted now."""
    from lsprotocol.types import LogMessageParams, MessageType  # noqa: PLC0415 - serve has it loaded

    left_out = pending(workspace)
    if not left_out:
        return False
    question = (
        f"lspilot: {valid_text(str(workspace))} has its own {_names(workspace, left_out)}, which can "
        "run programs, loosen permissions and send your API key elsewhere. Trust this workspace?"
    )
    try:
        picked = await editor.show_message_request(MessageType.Warning, question, [TRUST, NOT_NOW])
    except Exception as error:  # the editor answered with an error: as "Not now"
        log.warning("could not ask the editor whether to trust %s: %s", workspace, error)
        return False
    if picked != TRUST:
        log.info("the workspace %s stays untrusted (the editor answered %r)", workspace, picked)
        return False
    grant(workspace)
    message = f"lspilot: trusted {valid_text(str(workspace))}: its {_names(workspace, left_out)} apply"
    editor.server.window_log_message(LogMessageParams(MessageType.Info, message))
    return True


def add_parser(subparsers: Any) -> None:
    """Register `lspilot trust` on the main parser's subparsers."""
    trust = subparsers.add_parser(
        "trust",
        help="trust a workspace: its lspilot.toml, .lspilot/config.toml and .lspilot/tools count",
    )
    trust.add_argument("--root", help="the workspace (default: the current directory)")
    which = trust.add_mutually_exclusive_group()
    which.add_argument("--revoke", action="store_true", help="stop trusting the workspace")
    which.add_argument("--list", action="store_true", help="list the trusted workspaces")
    trust.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.list:
        if args.root is not None:
            print("lspilot trust --list: takes no --root (it lists every workspace)", file=sys.stderr)
            return 2
        for path in trusted():
            print(valid_text(str(path)) + ("" if path.is_dir() else "  (gone)"))
        return 0
    root = Path(args.root or ".").resolve()
    try:
        print(_revoked(root) if args.revoke else _granted(root))
    except OSError as error:  # the data dir is a file, a read-only disk
        where = valid_text(str(_records()))
        print(
            f"lspilot trust: cannot write the trust record in {where}: {error.strerror or error}",
            file=sys.stderr,
        )
        return 1
    return 0


def _granted(root: Path) -> str:
    shown = valid_text(str(root))
    configuration.check_workspace(root)
    if is_trusted(root):
        return f"{shown} is trusted already"
    left_out = pending(root)
    grant(root)
    applies = f": its {_names(root, left_out)} apply from the next turn" if left_out else ""
    return f"trusted {shown}{applies}"


def _revoked(root: Path) -> str:
    shown = valid_text(str(root))
    if not revoke(root):
        return f"{shown} was not trusted"
    return f"{shown} is no longer trusted: of its configuration only deny and ask rules apply"
