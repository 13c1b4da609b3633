"""The session database held locked by another process (a sqlite3 shell or a database browser with
a transaction open) past the busy timeout, or damaged after it was opened: one line naming the file
and what to do."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from daemon.scripted_model import ScriptedModel, Turn
from daemon.store import Store
from daemon.store_errors import BUSY_SECONDS
from tools import Reply

from .conftest import lspilot
from .looping import Human, make_loop, tool_parts, workspace

__all__ = ["workspace"]


@contextmanager
def locked(database: Path) -> Iterator[None]:
    """The database with a write transaction open on it, as another program holds one."""
    holder = sqlite3.connect(database, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        holder.close()


def test_run_says_the_database_is_locked_in_one_line(empty_workspace: Path, tmp_path: Path) -> None:
    # It ended with sqlite3's "OperationalError: database is locked" and a traceback.
    database = tmp_path / "data" / "lspilot.db"
    lspilot("sessions", "list", cwd=empty_workspace, check=True)
    with locked(database):
        ran = lspilot("run", "hi", "--model", "openai/x", cwd=empty_workspace)
    assert (ran.returncode, ran.stdout) == (1, "")
    assert ran.stderr == (
        f"lspilot: cannot write the session database {database} (database is locked): another process "
        "has held it locked for more than 5 s (a sqlite3 shell or a database browser with a transaction "
        "open?): close that, then try again\n"
    )


async def test_a_turn_that_meets_the_lock_ends_naming_the_database_not_the_model(
    workspace: Path, fake: ScriptedModel, tmp_path: Path
) -> None:
    # The store's error inside a model step was taken for the model's: "The model call failed:
    # OperationalError: database is locked".
    database = tmp_path / "data" / "lspilot.db"
    held: list[sqlite3.Connection] = []

    def lock_then_answer(_request: Any) -> Turn:  # while the step's answer is on its way
        held.append(sqlite3.connect(database, isolation_level=None, check_same_thread=False))
        held[0].execute("BEGIN EXCLUSIVE")
        return Turn(text="done")

    fake.turns.extend([Turn(tool_calls=[("read", {"filePath": "a.py"})]), lock_then_answer])
    loop, events = make_loop(workspace, fake, Human())
    await loop.initialize()
    result = await loop.run_turn("read a.py")
    held[0].close()
    assert result.stop_reason == "error"
    assert result.error is not None and result.error.startswith(
        f"cannot write the session database {database} (database is locked): another process"
    )
    assert [e.data["message"] for e in events if e.type == "error"] == [result.error]
    assert not [e for e in events if e.type == "retry"]
    fake.turns.append(Turn(text="again"))
    again = await loop.run_turn("once more")  # the session goes on once the lock is gone
    assert (again.stop_reason, again.text) == ("end", "again")
    loop.store.close()


def test_a_database_damaged_inside_is_named_in_one_line(empty_workspace: Path, tmp_path: Path) -> None:
    # Its header is sound, so it opened; reading the damaged pages ended in a traceback
    # ("sqlite3.DatabaseError: database disk image is malformed").
    database = tmp_path / "data" / "lspilot.db"
    store = Store(database)
    for _ in range(100):
        store.create_session(empty_workspace.resolve(), title="a session")
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.close()
    size = database.stat().st_size
    with database.open("r+b") as file:  # every page but the first, which holds the header
        file.seek(4096)
        file.write(b"\xff" * (size - 4096))
    ran = lspilot("sessions", "list", cwd=empty_workspace)
    assert (ran.returncode, ran.stdout) == (1, "")
    assert ran.stderr == (
        f"lspilot: {database} cannot be used as lspilot's session database (database disk image is "
        "malformed): move it away if it is damaged, check that its folder is writable and the disk not "
        "full, or set LSPILOT_DATA_DIR to use another place\n"
    )


async def test_a_call_that_cannot_be_stored_stops_the_other_calls_of_its_step(
    workspace: Path, fake: ScriptedModel, tmp_path: Path
) -> None:
    # The turn ended as an error while the step's other call ran on: its command wrote into the
    # workspace after the turn's end, and its part was left "running".
    database = tmp_path / "data" / "lspilot.db"
    quick = ("bash", {"command": "sleep 1", "description": "Wait"})
    slow = ("bash", {"command": "sleep 8; echo late > marker", "description": "Wait, then write"})
    fake.turns.append(Turn(tool_calls=[quick, slow]))
    loop, events = make_loop(workspace, fake, Human(Reply("always"), Reply("always")))
    await loop.initialize()
    turn = asyncio.create_task(loop.run_turn("wait"))
    await events.until(lambda _e: sum(e.type == "tool" and e.data["state"] == "running" for e in events) == 2)
    holder = sqlite3.connect(database, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")  # until the quick call's end has waited out the busy timeout
    threading.Timer(BUSY_SECONDS + 1.5, holder.close).start()
    result = await turn
    assert result.stop_reason == "error" and result.error is not None and "database is locked" in result.error
    await asyncio.sleep(9 - BUSY_SECONDS)  # past the slow command's end
    assert not (workspace / "marker").exists()
    assert [p["state"] for p in tool_parts(loop)] == ["running", "error"]  # the quick one's end was lost
    assert tool_parts(loop)[1]["output"] == "Error: cancelled: another call of this step failed."
    loop.store.close()
