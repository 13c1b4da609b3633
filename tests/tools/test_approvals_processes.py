"""Remembered "always" approvals saved by several lspilot processes of one project at once (the
editor's ``serve``, a terminal's ``run``, a second editor window): none is lost. Real processes,
released together at each round by a byte on their stdin, each saving its own approval."""

from __future__ import annotations

import fcntl
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tools import DEFAULT_RULES, ApprovalStore, PermissionEngine, PermissionRequest, Reply

from .conftest import ScriptedHuman

ROOT = Path(__file__).resolve().parents[2]
PROCESSES = 8
ROUNDS = 10

# One process: for each round, the store of that round's project opened (as a session would at
# its start), "ready" said, then on the byte released the approval saved.
_SAVER = """
import sys
from pathlib import Path
from tools.approvals import ApprovalStore

data, me, rounds = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
for round in range(rounds):
    store = ApprovalStore.for_project(data, Path(f"/projects/p{round}"))
    print("ready", flush=True)
    if sys.stdin.buffer.read(1) != b"x":
        sys.exit("released without a byte")
    store.add("bash", [f"make target{me}"])
print("done", flush=True)
"""


def test_processes_saving_at_once_keep_every_approval(tmp_path: Path) -> None:
    data = tmp_path / "data"
    savers = [
        subprocess.Popen(
            [sys.executable, "-c", _SAVER, str(data), str(me), str(ROUNDS)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=ROOT,
        )
        for me in range(PROCESSES)
    ]
    try:
        for _ in range(ROUNDS):
            for saver in savers:  # each has its store open: none has saved yet
                assert saver.stdout is not None and saver.stdout.readline() == b"ready\n"
            for saver in savers:
                assert saver.stdin is not None
                saver.stdin.write(b"x")
                saver.stdin.flush()
        for saver in savers:
            assert saver.stdout is not None and saver.stdout.readline() == b"done\n"
            assert saver.wait() == 0
    finally:
        for saver in savers:
            if saver.poll() is None:
                saver.kill()
                saver.wait()
    wanted = {f"make target{me}" for me in range(PROCESSES)}
    lost: dict[int, list[str]] = {}
    for round in range(ROUNDS):
        saved = {r.pattern for r in ApprovalStore.for_project(data, Path(f"/projects/p{round}")).rules}
        if saved != wanted:
            lost[round] = sorted(wanted - saved)
    assert lost == {}, f"approvals lost in {len(lost)} of {ROUNDS} rounds: {lost}"


class LockProbingHuman(ScriptedHuman):
    """Says "always", after trying the approvals' lock as another process would."""

    def __init__(self, lock: Path) -> None:
        super().__init__()
        self.lock = lock
        self.free: list[bool] = []

    async def permission(self, request: PermissionRequest) -> Reply:
        descriptor = os.open(self.lock, os.O_RDONLY)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            self.free.append(True)
        except BlockingIOError:
            self.free.append(False)
        finally:
            os.close(descriptor)
        return Reply("always")


async def test_the_lock_is_not_held_while_the_user_is_asked(tmp_path: Path) -> None:
    store = ApprovalStore.for_project(tmp_path / "data", Path("/projects/p"))
    store.add("bash", ["make *"])  # the lock file exists from the first save on
    assert store.path is not None
    human = LockProbingHuman(Path(f"{store.path}.lock"))
    engine = PermissionEngine(DEFAULT_RULES, store, human)
    await engine.ask(PermissionRequest("bash", ["npm test"], ["npm test *"], "npm test"))
    assert human.free == [True]
    again = ApprovalStore.for_project(tmp_path / "data", Path("/projects/p"))
    assert sorted(r.pattern for r in again.rules) == ["make *", "npm test *"]


def test_a_lock_that_cannot_be_taken_saves_unlocked(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = ApprovalStore.for_project(tmp_path / "data", Path("/projects/p"))
    assert store.path is not None
    Path(f"{store.path}.lock").mkdir(parents=True)  # no lock file can be made there
    with caplog.at_level(logging.WARNING):
        store.add("bash", ["make *"])
    assert caplog.text == ""  # saved as without the lock: nothing the user must act on
    again = ApprovalStore.for_project(tmp_path / "data", Path("/projects/p"))
    assert [r.pattern for r in again.rules] == ["make *"]


def test_a_data_dir_gone_unusable_keeps_approvals_for_the_run(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = ApprovalStore.for_project(tmp_path / "data", Path("/projects/p"))  # none saved yet
    assert store.path is not None
    (tmp_path / "data").write_text("a file where the data dir should be\n")
    with caplog.at_level(logging.WARNING):
        store.add("bash", ["make *"])  # neither the lock nor the file can be made
    assert len(caplog.records) == 1 and str(store.path) in caplog.text  # one warning, as before
    assert [r.pattern for r in store.rules] == ["make *"]
