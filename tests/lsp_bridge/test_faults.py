"""Servers that misbehave on the wire or around their process: the bridge fails clearly and recovers."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from lsp_bridge import Bridge, ServerTerminated
from lsp_bridge.process import STDERR_LINE_BYTES
from tests.conftest import where
from tests.lsp_bridge.test_protocol import SCRIPTED, scripted_servers

Factory = Callable[..., Bridge]


def _scripted(*flags: str) -> dict[str, dict[str, object]]:
    servers = scripted_servers()
    servers["scripted"] |= {"command": [sys.executable, str(SCRIPTED), *flags]}
    return servers


async def _definition(bridge: Bridge, path: Path) -> list[tuple[str, int]]:
    """Where the scripted server's definition at the top of ``path`` points: (file, line)."""
    answer = await bridge.definition(path, lsp.Position(line=0, character=0))
    return [where(path.parent, span) for span in answer.value]


async def test_a_server_writing_stderr_lines_longer_than_a_pipe_keeps_running(
    tmp_path: Path, bridge_factory: Factory
) -> None:
    # Reading stderr line by line failed on a line over 64 kB; nobody read stderr afterwards,
    # so the server blocked on its next write, and stopping it raised that ValueError.
    (tmp_path / "a.py").write_text("x = 1\n")
    bridge = bridge_factory(tmp_path, start_timeout=20.0, servers=_scripted("--long-stderr"))
    assert await _definition(bridge, tmp_path / "a.py") == [("a.py", 1)]
    process = bridge.connections[0].process
    assert process is not None
    await bridge.shutdown()  # raised the ValueError too
    assert list(process.stderr_tail) == ["x" * STDERR_LINE_BYTES] * 2  # the start of each line


async def test_a_line_printed_to_stdout_before_the_first_message_is_skipped(
    tmp_path: Path, bridge_factory: Factory
) -> None:
    # A banner before the first header made the header unreadable: the bridge stopped reading
    # and the server looked alive while every request waited for its timeout.
    (tmp_path / "a.py").write_text("x = 1\n")
    bridge = bridge_factory(tmp_path, start_timeout=20.0, servers=_scripted("--banner"))
    assert await _definition(bridge, tmp_path / "a.py") == [("a.py", 1)]


async def test_a_malformed_message_ends_the_server_and_the_next_request_restarts_it(
    tmp_path: Path, bridge_factory: Factory
) -> None:
    bad, good = tmp_path / "bad.py", tmp_path / "good.py"
    bad.write_text("GARBAGE = 1\n")
    good.write_text("x = 1\n")
    bridge = bridge_factory(tmp_path, servers=scripted_servers())
    assert await _definition(bridge, good) == [("good.py", 1)]
    with pytest.raises(ServerTerminated, match="malformed"):
        await _definition(bridge, bad)
    assert await _definition(bridge, good) == [("good.py", 1)]
