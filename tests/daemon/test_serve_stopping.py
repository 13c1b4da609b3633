"""`lspilot serve` stopped from outside while a turn runs a command: SIGTERM, Ctrl-C on a daemon
started by hand, and the daemon killed outright (``kill -9``, or the editor dying and taking it down)."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from daemon.scripted_model import ScriptedModel, Turn
from daemon.store import Store
from tests.fifos import read_line_async

from .serving import RawEditor, workspace

__all__ = ["workspace"]


async def _gone(pid: int) -> None:
    """Wait until process ``pid`` (not a child of ours) has exited."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    exited = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_reader(fd, exited.set)
    try:
        await exited.wait()
    finally:
        loop.remove_reader(fd)
        os.close(fd)


async def _start_waiting_turn(
    tmp_path: Path, workspace: Path, fake: ScriptedModel, command: str
) -> tuple[RawEditor, int]:
    """A daemon whose turn runs ``command``, which writes a pid to the fifo ``started`` and sleeps;
    the daemon and that pid."""
    (workspace / "lspilot.toml").write_text('[permission]\nbash = "allow"\n')
    os.mkfifo(workspace / "started")
    wait = {"command": command, "description": "Wait", "timeout": 600000}
    fake.turns.append(Turn(tool_calls=[("bash", wait)]))
    editor = await RawEditor.start(tmp_path, fake, "serve")
    await editor.initialize(workspace)
    ask = {"command": "lspilot.ask", "arguments": [{"prompt": "wait"}]}
    editor.send({"id": 2, "method": "workspace/executeCommand", "params": ask})
    pid = await read_line_async(workspace / "started", editor.proc)
    return editor, int(pid)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_a_signal_stops_the_turn_and_its_command_and_exits_although_stdin_stays_open(
    tmp_path: Path, workspace: Path, fake: ScriptedModel, signum: signal.Signals
) -> None:
    # SIGTERM (the editor, systemd) or Ctrl-C (a daemon started by hand): killed at once, the
    # daemon left the bash tool's command running (in a process group of its own) and the turn
    # unrecorded; then it waited at exit for the thread reading stdin, which the editor keeps open.
    async with asyncio.timeout(120):
        editor, pid = await _start_waiting_turn(
            tmp_path, workspace, fake, "echo $$ > started; exec sleep 300"
        )
        editor.proc.send_signal(signum)
        assert await editor.proc.wait() == 128 + signum
        await _gone(pid)
    store = Store(tmp_path / "data" / "lspilot.db")
    [session] = store.sessions(workspace.resolve())
    parts = [p for parts in store.session_parts(session["id"]).values() for p in parts]
    store.close()
    assert [(p["kind"], p["output"] or p["text"]) for p in parts[1:]] == [
        ("tool", "Error: cancelled by the user."),
        ("error", "Cancelled by the user."),
    ]


async def test_a_command_dies_with_a_daemon_killed_outright(
    tmp_path: Path, workspace: Path, fake: ScriptedModel
) -> None:
    # The commands run in process groups of their own, so kill -9 of the daemon left them running.
    # Here the sleep is the shell's grandchild, as a pipeline's or a script's commands are.
    command = "sh -c 'echo $$ > started; exec sleep 300'; echo after"
    async with asyncio.timeout(120):
        editor, pid = await _start_waiting_turn(tmp_path, workspace, fake, command)
        editor.proc.kill()
        assert await editor.proc.wait() == -signal.SIGKILL
        await _gone(pid)
