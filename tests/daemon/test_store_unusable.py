"""The session database held locked by another process (a sqlite3 shell or a database browser with
a transaction open) past the busy timeout, or damaged after it was opened: one line naming the file
and what to do."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from daemon.scripted_model import ScriptedModel, Turn
from daemon.store import Store

from .conftest import lspilot
from .looping import Human, make_loop, workspace

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
