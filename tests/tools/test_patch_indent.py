"""apply_patch with the indentation flattened in the patch (models drop it): the added lines are
placed at the file's depths line by line, or the patch is refused with the file untouched."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import Reply

from .conftest import Harness, make_harness

NESTED = "def f(x):\n    if x:\n        return 1\n    return 0\n"


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "f.py").write_text(NESTED)
    harness = make_harness(root, tmp_path / "data")
    harness.env.session.record_read(root / "f.py")
    harness.human.replies = [Reply("once")]
    return harness


def patch(*lines: str) -> str:
    return "\n".join(["*** Begin Patch", "*** Update File: f.py", "@@", *lines, "*** End Patch"])


@pytest.mark.parametrize(
    ("hunk", "after"),
    [
        # Shifted by the first line's offset alone, `return 10` went in under `if x:` at its depth.
        ((" if x:", "-return 1", "+return 10"), "def f(x):\n    if x:\n        return 10\n    return 0\n"),
        (
            (" if x:", "-return 1", "+log(x)", "+return 10", " return 0"),
            "def f(x):\n    if x:\n        log(x)\n        return 10\n    return 0\n",
        ),
    ],
    ids=["rewritten-line", "added-between-depths"],
)
async def test_flattened_patches_land_at_the_files_depths(
    h: Harness, hunk: tuple[str, ...], after: str
) -> None:
    await h.ok("apply_patch", {"patchText": patch(*hunk)})
    assert (h.root / "f.py").read_text() == after


async def test_a_line_whose_depth_cannot_be_told_is_refused(h: Harness) -> None:
    # `if x:` and `return 1` sit at two depths in the file, flattened to one in the patch: an added
    # line after both, at that depth, could belong to either.
    outcome = await h.call("apply_patch", {"patchText": patch(" if x:", " return 1", "+log(x)")})
    assert outcome.error is not None and "cannot be told; nothing was changed" in outcome.error, outcome
    assert (h.root / "f.py").read_text() == NESTED
