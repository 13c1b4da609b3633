"""Servers that misbehave on the wire or around their process: the bridge fails clearly and recovers."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest
from lsprotocol import types as lsp

from lsp_bridge import Bridge, BridgeError, ServerBroken, ServerStartError, ServerTerminated, connection
from lsp_bridge.process import STDERR_LINE_BYTES, ServerProcess
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


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ("GARBAGE", "malformed message header"),
        # the answer was dropped and the request waited out its timeout (30 s), said as unanswered
        ("NOTJSON", "malformed message body"),
        ("NOTJSON ARRAY", "malformed message body"),
    ],
)
async def test_a_malformed_message_ends_the_server_and_the_next_request_restarts_it(
    tmp_path: Path, bridge_factory: Factory, fault: str, said: str
) -> None:
    bad, good = tmp_path / "bad.py", tmp_path / "good.py"
    bad.write_text(f"{fault} = 1\n")
    good.write_text("x = 1\n")
    bridge = bridge_factory(tmp_path, servers=scripted_servers())
    assert await _definition(bridge, good) == [("good.py", 1)]
    with pytest.raises(ServerTerminated, match=said):
        await _definition(bridge, bad)
    assert await _definition(bridge, good) == [("good.py", 1)]


class Spawns:
    """Each server process as it is spawned; with ``hold`` set, the spawn returns only when
    ``release`` is set (a caller cancelled then is cancelled while its process starts)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, hold: bool = False) -> None:
        self.processes: asyncio.Queue[ServerProcess] = asyncio.Queue()
        self.release = asyncio.Event()
        if not hold:
            self.release.set()
        real = connection.spawn

        async def spawn(*args: Any) -> ServerProcess:
            process = await real(*args)
            self.processes.put_nowait(process)
            await self.release.wait()
            return process

        monkeypatch.setattr(connection, "spawn", spawn)

    async def next(self) -> set[int]:
        """The next spawned server's reaper shim and the processes under it."""
        shim = psutil.Process((await self.processes.get()).pid)
        return {shim.pid, *(child.pid for child in shim.children(recursive=True))}


def _alive(pids: set[int]) -> set[int]:
    return {pid for pid in pids if psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie"}


@pytest.mark.parametrize("while_spawning", [False, True])
async def test_a_question_cancelled_while_its_server_starts_leaves_no_process(
    tmp_path: Path, bridge_factory: Factory, monkeypatch: pytest.MonkeyPatch, while_spawning: bool
) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    spawns = Spawns(monkeypatch, hold=while_spawning)
    bridge = bridge_factory(tmp_path, servers=_scripted("--mute"))  # never initialized
    question = asyncio.create_task(_definition(bridge, tmp_path / "a.py"))
    pids = await spawns.next()
    question.cancel()
    spawns.release.set()
    with pytest.raises(asyncio.CancelledError):
        await question
    assert _alive(pids) == set()  # nothing held the server any more: it ran until lspilot exited


async def test_shutting_down_while_a_server_starts_stops_it(
    tmp_path: Path, bridge_factory: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    spawns = Spawns(monkeypatch)
    bridge = bridge_factory(tmp_path, servers=_scripted("--mute"))
    question = asyncio.create_task(_definition(bridge, tmp_path / "a.py"))
    pids = await spawns.next()
    await bridge.shutdown()
    assert _alive(pids) == set()  # it ran on, and answered once started, after the shutdown
    with pytest.raises(BridgeError, match="shut down"):
        await question


async def test_a_server_that_fails_to_initialize_is_not_restarted_for_ever(
    tmp_path: Path, bridge_factory: Factory
) -> None:
    # Failed starts did not count as crashes: every question started the server again at once.
    (tmp_path / "a.py").write_text("x = 1\n")
    bridge = bridge_factory(tmp_path, servers=_scripted("--refuse"))
    for _ in range(5):
        with pytest.raises(ServerStartError, match="cannot start here"):
            await _definition(bridge, tmp_path / "a.py")
    with pytest.raises(ServerBroken, match="scripted crashed 5 times"):
        await _definition(bridge, tmp_path / "a.py")


def _kill(bridge: Bridge) -> None:
    process = bridge.connections[0].process
    assert process is not None
    os.killpg(process.pid, signal.SIGKILL)


async def test_a_server_dying_while_a_question_waits_for_it_to_load_fails_the_question(
    tmp_path: Path, bridge_factory: Factory
) -> None:
    # The question waited for the load to end (ready_timeout) as if the server still ran.
    busy = tmp_path / "busy.py"
    busy.write_text("BUSY = 1\n")
    bridge = bridge_factory(tmp_path, ready_timeout=60.0, servers=scripted_servers())
    await _definition(bridge, busy)  # opens it: its load begins
    assert not bridge.connections[0].loading.ready
    question = asyncio.create_task(_definition(bridge, busy))
    await asyncio.sleep(0)  # up to its wait for the load
    _kill(bridge)
    with pytest.raises(ServerTerminated, match="exited with code"):
        await question


async def test_a_server_still_busy_after_ready_timeout_is_not_waited_for_again(
    tmp_path: Path, bridge_factory: Factory
) -> None:
    # Every question waited ready_timeout again (60 s by default): workspace diagnostics on a
    # project whose load outlasts it waited that long once per group of files, for minutes.
    busy = tmp_path / "busy.py"
    busy.write_text("BUSY = 1\n")
    bridge = bridge_factory(tmp_path, ready_timeout=0.5, servers=scripted_servers())
    await _definition(bridge, busy)  # opens it: a load begins that never ends
    at = lsp.Position(line=0, character=0)
    first = await bridge.definition(busy, at)
    assert not first.complete and first.notes[0].startswith("scripted was still busy (")
    assert "after 0.5s" in first.notes[0]
    bridge.config = dataclasses.replace(bridge.config, ready_timeout=600.0)
    second = await asyncio.wait_for(bridge.definition(busy, at), 60)  # not 600 s again
    assert not second.complete and "is still busy" in second.notes[0]
    assert "not waited for again" in second.notes[0]


async def test_a_server_dying_while_diagnostics_wait_for_its_publish_fails_them(
    tmp_path: Path, bridge_factory: Factory
) -> None:
    # The wait went on to diagnostics_timeout, then answered the dead server's last publish.
    a = tmp_path / "a.py"
    a.write_text("ERR\n")
    servers = _scripted("--push")
    servers["scripted"] |= {"publish_delay": 0.5}  # its publish at once is the old text's
    bridge = bridge_factory(tmp_path, diagnostics_timeout=60.0, servers=servers)
    assert [d.message for d in (await bridge.diagnostics_after_change(a)).value] == ["ERR"]
    question = asyncio.create_task(bridge.diagnostics_after_change(a, "ERR\nERR\n"))
    await asyncio.sleep(0)  # up to its wait for the publish
    _kill(bridge)
    with pytest.raises(ServerTerminated, match="exited with code"):
        await question


def _two_servers(fault: str, *also: str) -> dict[str, dict[str, object]]:
    """The scripted server twice for .py files: "scripted" as it is and "faulty" with ``fault``."""
    servers = _scripted(*also)
    servers["faulty"] = {"command": [sys.executable, str(SCRIPTED), fault, *also], "extensions": [".py"]}
    return servers


@pytest.mark.parametrize(
    ("fault", "why"),
    [("--crash", "exited with code 3"), ("--hang", "did not answer"), ("--refuse", "cannot start here")],
)
async def test_one_of_two_servers_failing_leaves_the_answer_of_the_other(
    tmp_path: Path, bridge_factory: Factory, fault: str, why: str
) -> None:
    # One server's error (gather without return_exceptions) failed the whole question; one that
    # could not start was left out of an answer that claimed to be complete.
    a = tmp_path / "a.py"
    a.write_text("x = 1\n")
    bridge = bridge_factory(tmp_path, request_timeout=2.0, servers=_two_servers(fault))
    answer = await bridge.definition(a, lsp.Position(line=0, character=0))
    assert [where(tmp_path, span) for span in answer.value] == [("a.py", 1)]
    assert not answer.complete
    assert len(answer.notes) == 1 and answer.notes[0].startswith("faulty failed") and why in answer.notes[0]
    diagnostics = await bridge.diagnostics_after_change(a, "x = 1\nERR\n")
    assert [(d.range.start.line, d.message) for d in diagnostics.value] == [(1, "ERR")]
    assert not diagnostics.complete and diagnostics.notes[0].startswith("faulty failed")


async def test_a_question_fails_when_every_server_for_the_file_failed(
    tmp_path: Path, bridge_factory: Factory
) -> None:
    a = tmp_path / "a.py"
    a.write_text("x = 1\n")
    bridge = bridge_factory(tmp_path, servers=_two_servers("--crash", "--crash"))
    with pytest.raises(ServerTerminated, match="exited with code 3"):
        await bridge.definition(a, lsp.Position(line=0, character=0))
