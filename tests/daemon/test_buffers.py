"""The editor's buffers as the daemon tracks them (daemon/buffers.py): waiting for the didChange
after an applied edit."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from daemon.buffers import Buffers

PATH = Path("/ws/a.py")


async def test_settle_waits_for_the_editors_didchange() -> None:
    buffers = Buffers()
    buffers.update(PATH, 3, "old\n")
    waiting = asyncio.ensure_future(buffers.settle(PATH, 3, "new\n"))
    await asyncio.sleep(0)
    assert not waiting.done()
    buffers.update(PATH, 4, "new\n")
    await asyncio.wait_for(waiting, 5)
    assert (buffers.version(PATH), buffers.text(PATH)) == (4, "new\n")


async def test_closing_the_buffer_ends_the_wait_and_it_stays_closed() -> None:
    buffers = Buffers()
    buffers.update(PATH, 3, "old\n")
    waiting = asyncio.ensure_future(buffers.settle(PATH, 3, "new\n"))
    await asyncio.sleep(0)
    assert buffers.close(PATH)
    await asyncio.wait_for(waiting, 5)
    assert buffers.version(PATH) is None and buffers.text(PATH) is None


async def test_without_a_didchange_the_applied_text_is_assumed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("daemon.buffers.SETTLE_TIMEOUT", 0.01)
    buffers = Buffers()
    buffers.update(PATH, 3, "old\n")
    await asyncio.wait_for(buffers.settle(PATH, 3, "new\n"), 5)
    assert (buffers.version(PATH), buffers.text(PATH)) == (3, "new\n")


def test_the_buffer_of_a_file_starts_with_the_bom_the_file_on_disk_does(tmp_path: Path) -> None:
    """Editors hide a file's BOM and write it back when they save, unless the user drops it."""
    path = tmp_path / "a.py"
    path.write_bytes(b"\xef\xbb\xbfx = 1\n")
    buffers = Buffers()
    buffers.update(path, 1, "x = 1\n")
    assert buffers.text(path) == "\ufeffx = 1\n" and buffers.not_saved() == []
    buffers.update(path, 2, "x = 2\n")
    assert buffers.unsaved(path) == "\ufeffx = 2\n" and buffers.not_saved() == [path]
    path.write_bytes(b"x = 2\n")  # saved as UTF-8 without a BOM
    assert buffers.text(path) == "x = 2\n" and buffers.not_saved() == []
