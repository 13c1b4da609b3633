"""One process at a time runs turns in a session: real `lspilot run` processes on one database,
real litellm against the scripted model server."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from daemon.lease import SessionBusy
from daemon.loop import Event, Retry
from daemon.runtime import Runtime
from daemon.scripted_model import ScriptedModel, Turn
from daemon.store import Store
from tools import PermissionRequest, Reply

from .conftest import LSPILOT


@pytest.fixture
def workspace(empty_workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    return empty_workspace


def command(workspace: Path, fake: ScriptedModel, prompt: str, *extra: str) -> list[str]:
    model = ["--model", "openai/scripted", "--api-base", fake.api_base]
    return [LSPILOT, "run", prompt, "--root", str(workspace), *model, *extra]


def run(workspace: Path, fake: ScriptedModel, prompt: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command(workspace, fake, prompt, *extra),
        check=False,
        capture_output=True,
        text=True,
        env=os.environ,
        timeout=120,
    )


def test_a_second_process_is_refused_while_a_turn_runs_and_a_killed_one_leaves_no_lock(
    workspace: Path, fake: ScriptedModel
) -> None:
    fake.turns.extend(
        [
            Turn(text="first"),
            Turn(error=400, error_message="Bad model"),
            Turn(text="never finished", stall_after_chunks=1),
            Turn(text="after the crash"),
        ]
    )
    first = run(workspace, fake, "one")
    assert (first.returncode, first.stdout) == (0, "first\n"), first.stderr
    session = first.stderr.strip().splitlines()[-1].removeprefix("session ")
    failed = run(workspace, fake, "bad", "--session", session)  # a turn that ends in an error
    assert failed.returncode == 1 and "Bad model" in failed.stderr
    holder = subprocess.Popen(
        command(workspace, fake, "two", "--session", session), stdout=subprocess.DEVNULL, env=os.environ
    )
    try:
        deadline = time.monotonic() + 60
        while len(fake.requests) < 3 and time.monotonic() < deadline:  # its answer is streaming
            time.sleep(0.05)
        assert len(fake.requests) == 3
        refused = run(workspace, fake, "three", "--session", session, "--agent", "plan")
        assert refused.returncode == 1 and "Traceback" not in refused.stderr
        assert refused.stderr.startswith(f"lspilot: session {session} is in use by pid {holder.pid}, ")
        assert len(fake.requests) == 3
        listed = subprocess.run(
            [LSPILOT, "sessions", "list", "--root", str(workspace)],
            capture_output=True,
            text=True,
            check=True,
            env=os.environ,
            timeout=60,
        )
        assert listed.stdout.splitlines()[0].startswith(session)
        assert listed.stdout.splitlines()[0].endswith("  (running)")
        # the refused turn wrote nothing: its session would have gone on as the read-only plan agent
        assert listed.stdout.splitlines()[0].split()[3] == "build"
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
    after = run(workspace, fake, "four", "--session", session)  # the killed holder's lock is gone
    assert (after.returncode, after.stdout) == (0, "after the crash\n"), after.stderr
    exported = subprocess.run(
        [LSPILOT, "sessions", "export", session, "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
        env=os.environ,
    )
    messages = json.loads(exported.stdout)["messages"]
    prompts = [m["parts"][0]["text"] for m in messages if m["role"] == "user"]
    assert prompts == ["one", "bad", "two", "four"]  # "three" never reached the session


class Human:
    async def permission(self, request: PermissionRequest) -> Reply:
        return Reply("reject")

    async def question(self, question: str, options: list[str]) -> str:
        return options[0] if options else "yes"


async def test_a_turn_releases_its_session_however_it_ends(workspace: Path, fake: ScriptedModel) -> None:
    started = asyncio.Event()

    def listener(event: Event) -> None:
        if event.type == "turn.start":
            started.set()

    runtime = Runtime.open(workspace)
    loop = runtime.loop(Human(), model="openai/scripted", api_base=fake.api_base, listeners=[listener])
    loop.retry = Retry(attempts=1)
    session = loop.env.session.id
    other = Store(runtime.store.path)  # a second daemon on the same database
    fake.turns.extend([Turn(text="ok"), Turn(error=400), Turn(text="slow", delay=30)])
    assert (await loop.run_turn("fine")).stop_reason == "end"
    assert (await loop.run_turn("failing")).stop_reason == "error"
    started.clear()
    running = asyncio.create_task(loop.run_turn("cancelled"))
    await started.wait()
    busy = f"session {session} is in use by pid {os.getpid()}, "
    with pytest.raises(SessionBusy, match=busy):
        async with other.claim(session):
            pass
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    for _ in range(2):  # released after each: claimed again at once
        async with other.claim(session):
            pass
    await loop.env.close()
    other.close()
    runtime.store.close()


async def test_a_turn_meeting_a_sessions_list_probe_waits_without_stalling_the_loop(tmp_path: Path) -> None:
    # `lspilot sessions list` holds a shared lock on each lock file for an instant. A turn starting
    # in that instant tried again after time.sleep, which stalled the daemon's event loop (every
    # other request and turn) meanwhile. Here the probe ends while the claim waits: the loop ran on.
    store = Store(tmp_path / "lspilot.db")
    session = store.create_session(tmp_path)
    folder = tmp_path / "session-locks"
    folder.mkdir()
    probe = os.open(folder / f"{session}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(probe, fcntl.LOCK_SH | fcntl.LOCK_NB)  # lease.held caught in the middle
    claimed = asyncio.Event()

    async def turn() -> None:
        async with store.claim(session):
            claimed.set()

    task = asyncio.create_task(turn())
    await asyncio.sleep(0)  # the claim's first try meets the probe's lock
    assert not claimed.is_set() and not task.done()
    os.close(probe)  # the probe ends, on the loop the claim waits on
    await task
    assert claimed.is_set() and store.running() == set()
    store.close()
