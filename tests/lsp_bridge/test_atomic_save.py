"""Atomic saves (write a temp file, rename it over the file) and diagnostics the bridge already has."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from lsp_bridge import Bridge
from lsp_bridge.documents import DocumentStore
from lsp_bridge.sync import Synchronizer


def _atomic_save(path: Path, text: str) -> None:
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_text(text)
    os.replace(temp, path)


def test_a_rename_over_a_known_file_is_a_change_not_a_new_file(tmp_path: Path) -> None:
    known = tmp_path / "a.py"
    known.write_text("x = 1\n")
    store = DocumentStore(10)
    sync = Synchronizer(store)
    sync.watch(tmp_path)
    store.load(known)
    _atomic_save(known, "x = 2\n")
    sync.drain()
    assert sync.layout_version == 0  # servers are not told to rescan the project
    assert sync.refresh([], known).text == "x = 2\n"
    (tmp_path / "b.py").write_text("")
    sync.drain()
    assert sync.layout_version == 1  # a new file still is one
    sync.close()


async def test_known_diagnostics_only_for_exactly_that_text(
    project: Callable[[str], Path], bridge_factory: Callable[..., Bridge]
) -> None:
    root = project("py_project")
    bridge = bridge_factory(root)
    app = root / "app.py"
    text = app.read_text()
    assert bridge.known_diagnostics(app, text) is None  # nothing asked yet: nothing known
    broken = text.replace("total_area(shapes)", "total_area(42)")
    _atomic_save(app, broken)
    answer = await bridge.diagnostics_after_change(app)
    assert len(answer.value) == 1
    assert bridge.known_diagnostics(app, broken) == answer.value
    assert bridge.known_diagnostics(app, text) is None
    _atomic_save(app, text)
    assert (await bridge.diagnostics_after_change(app)).value == []
    assert bridge.known_diagnostics(app, broken) is None
    assert bridge.known_diagnostics(app, text) == []


async def test_a_new_file_the_server_does_not_read_does_not_hold_answers(
    project: Callable[[str], Path], bridge_factory: Callable[..., Bridge]
) -> None:
    # basedpyright watches "**" but logs a new file count only for Python files: waiting for that
    # log after "notes.txt" appeared held every answer for ready_timeout.
    root = project("py_project")
    bridge = bridge_factory(root, ready_timeout=10.0)
    app = root / "app.py"
    assert (await bridge.diagnostics_after_change(app)).complete
    (root / "notes.txt").write_text("hello\n")
    answer = await bridge.diagnostics_after_change(app)
    assert answer.complete, answer.notes
    (root / "extra.py").write_text("from pkg.calc import total_area\n\ntotal_area(1)\n")
    assert (await bridge.diagnostics_after_change(root / "extra.py")).complete
