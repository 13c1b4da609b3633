"""The session store: the history read back in order, with every column."""

from __future__ import annotations

from pathlib import Path

from daemon.store import MESSAGE_COLUMNS, PART_COLUMNS, Store


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
