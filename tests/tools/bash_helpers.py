"""Shared helpers of the bash tool tests: a workspace with the tool registered, a call of it,
whether a process is gone, and what a command raises when only analyzed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psutil

from tools import Outcome, Rule, ToolContext, execute
from tools._shell import analyze
from tools.bash import Bash
from tools.context import MetadataSink

from .conftest import Harness, make_harness

ALLOW_ALL = [Rule("bash", "*", "allow"), Rule("external_directory", "*", "allow")]


def _harness(tmp_path: Path, rules: list[Rule] | None = None, **bash: int) -> Harness:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    harness = make_harness(root, tmp_path / "data", rules)
    harness.registry.register(Bash())
    harness.env.settings = {"tools": {"bash": {"kill_grace_ms": 300, **bash}}}
    return harness


def _args(command: str, **extra: Any) -> dict[str, Any]:
    return {"command": command, "description": "test command", **extra}


async def _call(
    h: Harness, command: str, sink: MetadataSink | None = None, ctx: ToolContext | None = None, **extra: Any
) -> Outcome:
    ctx = ctx or ToolContext(h.env, "call-1", on_metadata=sink)
    return await execute(h.registry, "bash", _args(command, **extra), ctx)


def _gone(pid: int) -> bool:
    """Dead, or a zombie nobody reaps (the container's init may not)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _asks(tmp_path: Path, command: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The outside patterns and the (pattern, always) pairs ``command`` raises, ``{up}`` for the
    workspace's parent; analyzed, never run."""
    root = (tmp_path / "ws").resolve()
    root.mkdir(exist_ok=True)
    result = analyze(command, root, root)
    return [p.replace(str(root.parent), "{up}") for p in result.outside], list(dict.fromkeys(result.commands))
