"""The session store: the history read back in order, with every column; migrations under contention."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from daemon.config import ConfigError
from daemon.store import MESSAGE_COLUMNS, MIGRATIONS, PART_COLUMNS, Store, StoredSession
from tools import FileStamp


def test_the_history_comes_back_in_order_with_every_column(tmp_path: Path) -> None:
    store = Store(tmp_path / "lspilot.db")
    columns = {
        table: tuple(row[1] for row in store.db.execute(f"PRAGMA table_info({table})"))
        for table in ("messages", "parts")
    }
    assert columns == {"messages": MESSAGE_COLUMNS, "parts": PART_COLUMNS}

    session = store.create_session(tmp_path)
    other = store.create_session(tmp_path)
    ids = [store.add_message(session, role, "turn_1") for role in ("user", "assistant", "user")]
    store.add_message(other, "user", "turn_x")
    store.add_part(ids[1], "text", "first")
    call = store.add_part(ids[1], "tool", call_id="c1", tool="read", input='{"filePath": "a.py"}')
    store.add_part(ids[0], "text", 'question with "quotes" and\nnewlines')
    store.update_part(call, state="completed", output="1\tx = 1", metadata={"lines": 1})

    assert [m["id"] for m in store.messages(session)] == ids
    parts = store.session_parts(session)
    assert set(parts) == {ids[0], ids[1]}
    assert [p["kind"] for p in parts[ids[1]]] == ["text", "tool"]
    tool = parts[ids[1]][1]
    assert (tool["state"], tool["output"], tool["metadata"]) == ("completed", "1\tx = 1", '{"lines": 1}')
    assert tool["input"] == '{"filePath": "a.py"}' and tool["started"] is None
    assert parts[ids[0]][0]["text"] == 'question with "quotes" and\nnewlines'
    store.close()


def _open(path: str, barrier: Any, results: Any) -> None:
    barrier.wait()
    try:
        Store(Path(path)).close()
        results.put("ok")
    except Exception as error:
        results.put(f"{type(error).__name__}: {error}")


def test_processes_opening_a_new_database_at_once_all_succeed(tmp_path: Path) -> None:
    # Two editors (or an editor and `lspilot run`) starting together on a first launch or an upgrade.
    context = multiprocessing.get_context("fork")
    for round_ in range(8):
        path = tmp_path / f"round{round_}" / "lspilot.db"
        barrier, results = context.Barrier(4), context.Queue()
        processes = [context.Process(target=_open, args=(str(path), barrier, results)) for _ in range(4)]
        for process in processes:
            process.start()
        for process in processes:
            process.join(timeout=60)
        assert [results.get(timeout=5) for _ in processes] == ["ok"] * 4
        store = Store(path)
        assert store.db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        store.close()


def test_a_database_from_a_newer_lspilot_is_refused(tmp_path: Path) -> None:
    Store(tmp_path / "lspilot.db").db.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    with pytest.raises(ConfigError, match="written by a newer lspilot"):
        Store(tmp_path / "lspilot.db")


def test_reads_of_files_whose_names_are_not_utf8_are_remembered(tmp_path: Path) -> None:
    # os.fsdecode carries the name's undecodable bytes as lone surrogates, which SQLite refuses:
    # the read tool failed on such a file in every session of the daemon.
    store = Store(tmp_path / "lspilot.db")
    session = StoredSession(store, store.create_session(tmp_path))
    latin1, literal = tmp_path / "caf\udce9.py", tmp_path / "caf\\xe9.py"  # the second's name is ASCII
    session.record_read(latin1, FileStamp(1, 2, "d1"))
    session.record_read(tmp_path / "a.py", FileStamp(3, 4, "d2"))
    assert session.read_stamp(latin1) == FileStamp(1, 2, "d1")
    assert session.last_read(latin1) is not None
    assert session.read_stamp(literal) is None and session.last_read(literal) is None
    assert session.read_stamp(tmp_path / "a.py") == FileStamp(3, 4, "d2")
    store.close()
