"""Documents whose files turn into something else while servers have them open, against basedpyright."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from lsp_bridge import Bridge, BridgeError
from tests.conftest import position, where

Factory = Callable[..., Bridge]


async def test_an_open_file_that_cannot_be_read_any_more_fails_only_its_own_questions(
    project: Callable[[str], Path], bridge_factory: Factory
) -> None:
    # A read error other than "missing" or "a folder" (here a symlink loop; EACCES for anyone
    # but root) escaped as a raw OSError from the sync pass of the next question, on any file,
    # and the other changes that pass had taken (app.py's) were never sent.
    root = project("py_project")
    bridge = bridge_factory(root)
    app, calc = root / "app.py", root / "pkg/calc.py"
    await bridge.definition(app, position(app, "total_area", nth=1))  # both open in the server
    calc.unlink()
    calc.symlink_to(calc.name)
    app.write_text(app.read_text().replace("    print(describe(shapes))\n", ""))
    with pytest.raises(BridgeError, match=r"pkg/calc\.py: "):
        await bridge.definition(calc, position(app, "total_area"))
    answer = await bridge.definition(app, position(app, "shapes", nth=1))
    assert [where(root, span) for span in answer.value] == [("app.py", 6)]
    assert bridge.connections[0].open_documents[app.as_uri()][1] == app.read_text()


async def test_a_fifo_named_like_a_source_file_is_refused_without_blocking(
    project: Callable[[str], Path], bridge_factory: Factory
) -> None:
    root = project("py_project")
    bridge = bridge_factory(root)
    fifo = root / "pipe.py"
    os.mkfifo(fifo)
    with pytest.raises(BridgeError, match="not a regular file"):
        await bridge.definition(fifo, position(root / "app.py", "main"))
    app = root / "app.py"
    answer = await bridge.definition(app, position(app, "total_area", nth=1))
    assert [where(root, span) for span in answer.value] == [("pkg/calc.py", 4)]
