"""An "always" saved while another lspilot process of the project holds the approvals' lock (stopped
with Ctrl-Z in the middle of its save, or on a slow disk): the event loop goes on (in ``serve`` the
editor still gets answers), the approval is in force at once, and it reaches the file: with the
lock when it is free, without it when it stays held too long or lspilot stops first."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from tools import DEFAULT_RULES, ApprovalStore, PermissionEngine, PermissionRequest, Reply
from tools import approvals as approvals_module

from .conftest import ScriptedHuman

ROOT = Path(__file__).resolve().parents[2]
PROJECT = Path("/projects/p")

# Another lspilot in the middle of a save: the lock taken and the file read, then (on a byte on
# stdin) the file written with what it read and its own approval, as ApprovalStore does.
_HOLDER = """
import fcntl, json, os, sys
path = sys.argv[1]
descriptor = os.open(path + ".lock", os.O_RDONLY | os.O_CREAT, 0o600)
fcntl.flock(descriptor, fcntl.LOCK_EX)
try:
    with open(path) as file:
        read = json.load(file)["allow"]
except FileNotFoundError:
    read = []
print("locked", flush=True)
if sys.stdin.buffer.read(1) == b"w":
    with open(path + ".tmp", "w") as out:
        json.dump({"version": 2, "allow": [*read, {"permission": "bash", "pattern": "make *"}]}, out)
    os.replace(path + ".tmp", path)
"""

# A `lspilot run` whose last ask is answered "always" while another process holds the lock.
_RUN = """
import asyncio, sys
from pathlib import Path
from tools import DEFAULT_RULES, ApprovalStore, PermissionEngine, PermissionRequest, Reply

class Always:
    async def permission(self, request):
        return Reply("always")

async def main():
    store = ApprovalStore.for_project(Path(sys.argv[1]), Path(sys.argv[2]))
    engine = PermissionEngine(DEFAULT_RULES, store, Always())
    await engine.ask(PermissionRequest("bash", ["npm test"], ["npm test *"], "npm test"))

asyncio.run(main())
"""


class Holder:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert self.process.stdout is not None and self.process.stdout.readline() == b"locked\n"

    def release(self, *, write: bool) -> None:
        """Let it go on: write what it read and its own approval (``write``), or only release."""
        assert self.process.stdin is not None
        self.process.stdin.write(b"w" if write else b"r")
        self.process.stdin.close()
        assert self.process.wait(timeout=60) == 0

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


class Warned(logging.Handler):
    """The first warning logged (on the event loop)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.event = asyncio.Event()
        self.message = ""

    def emit(self, record: logging.LogRecord) -> None:
        if not self.event.is_set():
            self.message = record.getMessage()
            self.event.set()


@pytest.fixture
def store(tmp_path: Path) -> ApprovalStore:
    return ApprovalStore.for_project(tmp_path / "data", PROJECT)


def _on_disk(store: ApprovalStore) -> list[str]:
    assert store.path is not None
    if not store.path.exists():
        return []
    return [item["pattern"] for item in json.loads(store.path.read_text())["allow"]]


def _request(command: str) -> PermissionRequest:
    return PermissionRequest("bash", [command], [f"{command} *"], command)


@pytest.mark.timeout(120)
async def test_the_loop_goes_on_while_another_process_holds_the_lock(
    store: ApprovalStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(approvals_module, "LOCK_PATIENCE", 3600.0)  # the lock is waited for
    assert store.path is not None
    holder = Holder(store.path)
    try:
        human = ScriptedHuman([Reply("always"), Reply("once"), Reply("always")])
        engine = PermissionEngine(DEFAULT_RULES, store, human)
        # Before, the save waited for the lock on the loop: nothing else ran, this never returned.
        await engine.ask(_request("npm test"))
        await engine.ask(_request("git status"))  # another ask answered meanwhile
        await engine.ask(_request("cargo build"))  # a second "always" queued behind the first
        assert [r.patterns for r in human.asked] == [["npm test"], ["git status"], ["cargo build"]]
        assert engine.action("bash", "npm test --watch") == "allow"  # in force at once
        assert engine.action("bash", "cargo build --release") == "allow"
        assert _on_disk(store) == []  # not written behind the holder's back
        holder.release(write=True)  # what it read (nothing) and its own approval
        await store.saved()
    finally:
        holder.stop()
    assert _on_disk(store) == ["make *", "npm test *", "cargo build *"]


@pytest.mark.timeout(120)
async def test_a_lock_held_too_long_saves_without_it_then_again_with_it(
    store: ApprovalStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(approvals_module, "LOCK_PATIENCE", 0.0)
    assert store.path is not None
    holder = Holder(store.path)  # read the file before this process saved
    warned = Warned()
    logging.getLogger(approvals_module.__name__).addHandler(warned)
    try:
        engine = PermissionEngine(DEFAULT_RULES, store, ScriptedHuman([Reply("always")]))
        await engine.ask(_request("npm test"))
        await warned.event.wait()
        assert f"{store.path}.lock" in warned.message and "saved without it" in warned.message
        assert _on_disk(store) == ["npm test *"]  # written: lost by no crash of this process
        holder.release(write=True)  # its write drops the approval it did not read...
        await store.saved()  # ...and the save with the lock writes it again
    finally:
        logging.getLogger(approvals_module.__name__).removeHandler(warned)
        holder.stop()
    assert _on_disk(store) == ["make *", "npm test *"]


@pytest.mark.timeout(120)
def test_lspilot_stopping_while_the_lock_is_held_saves_without_it(store: ApprovalStore) -> None:
    assert store.path is not None
    holder = Holder(store.path)
    try:
        run = subprocess.run(
            [sys.executable, "-c", _RUN, str(store.path.parent.parent), str(PROJECT)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert run.returncode == 0, run.stderr  # ended without waiting for the lock
        assert _on_disk(store) == ["npm test *"]
    finally:
        holder.release(write=False)
        holder.stop()
