"""edit and multiedit when oldString is not indented like the file (sent flattened), on a copy of
tests/fixtures/py_project with a real basedpyright judging what was written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lsp_bridge import Bridge
from tools import Reply

from .conftest import Harness, make_harness

SQUARE = "    def area(self) -> float:\n        return self.side * self.side\n"


@pytest.fixture
def h(project: Callable[[str], Path], bridge_factory: Callable[..., Bridge], tmp_path: Path) -> Harness:
    root = project("py_project")
    harness = make_harness(root, tmp_path / "data")
    harness.env.bridge_factory = lambda: bridge_factory(root)
    harness.env.session.record_read(root / "pkg/shapes.py")
    return harness


async def test_flattened_strings_keep_each_line_at_its_depth(h: Harness) -> None:
    # Both sent without indentation, newString was moved by its first line's offset alone:
    # "    def area(self) -> float:\n    return self.side ** 2", and basedpyright reported
    # "Expected indented block".
    path = h.root / "pkg/shapes.py"
    h.human.replies = [Reply("once")]
    outcome = await h.ok(
        "edit",
        {
            "filePath": "pkg/shapes.py",
            "oldString": "def area(self) -> float:\nreturn self.side * self.side",
            "newString": "def area(self) -> float:\nreturn self.side ** 2",
        },
    )
    assert path.read_text().endswith("    def area(self) -> float:\n        return self.side ** 2\n")
    assert outcome.result is not None
    assert outcome.result.metadata["matcher"] == "line-trimmed"
    assert "New problems" not in outcome.result.output, outcome.result.output


async def test_a_line_with_no_justified_depth_is_refused_and_nothing_is_written(h: Harness) -> None:
    # "check()" sent flattened between a line at 4 spaces and one at 8 could belong at either.
    path = h.root / "pkg/shapes.py"
    before = path.read_text()
    assert before.endswith(SQUARE)
    refused = await h.call(
        "multiedit",
        {
            "filePath": "pkg/shapes.py",
            "edits": [
                {"oldString": "self.side = side", "newString": "self.side = float(side)"},
                {
                    "oldString": "def area(self) -> float:\nreturn self.side * self.side",
                    "newString": "def area(self) -> float:\ncheck()\nreturn self.side * self.side",
                },
            ],
        },
    )
    assert refused.error == (
        "Edit 2 of 2 failed, so none was applied: pkg/shapes.py: oldString matched lines 18-19 "
        "(line-trimmed), but its lines are not indented like the file's (not even shifted as a "
        "block), so the file's indentation for newString's line 'check()' cannot be told; nothing "
        "was changed. Copy the lines with their indentation from read's output (without the "
        "line-number prefix) into oldString, and indent newString the same way. (edit 1 matched; "
        "edit 2 sees its result)"
    )
    assert path.read_text() == before
    assert h.human.asked == []
