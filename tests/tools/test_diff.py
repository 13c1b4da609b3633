"""Unified diffs and hunks: separate blocks, stable ids, and partial application."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tools.diff import Hunk, apply_hunks, hunks, split_lines, unified_diff

BEFORE = "a\nb\nc\nd\ne\nf\n"
AFTER = "a\nB\nc\nd\ne\nf\ng\n"


def test_hunks_are_separate_blocks_without_context() -> None:
    assert hunks(BEFORE, AFTER) == [
        Hunk("h1", 2, 1, 2, 1, "b\n", "B\n"),
        Hunk("h2", 7, 0, 7, 1, "", "g\n"),
    ]
    assert hunks("x\ny\n", "y\n") == [Hunk("h1", 1, 1, 1, 0, "x\n", "")]


def test_apply_some_hunks() -> None:
    blocks = hunks(BEFORE, AFTER)
    assert apply_hunks(BEFORE, blocks, ["h2"]) == "a\nb\nc\nd\ne\nf\ng\n"
    assert apply_hunks(BEFORE, blocks, ["h1"]) == "a\nB\nc\nd\ne\nf\n"
    with pytest.raises(ValueError, match="h1 does not apply"):
        apply_hunks("other\ntext\n", blocks, ["h1"])


def test_unified_diff_labels_and_missing_final_newline() -> None:
    assert unified_diff("x\n", "x\ny", "src/a.py") == (
        "--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1,2 @@\n x\n+y\n\\ No newline at end of file\n"
    )
    assert unified_diff("x\n", "x\n", "a") == ""
    assert unified_diff("x\n", "x\n", "old.py", "new.py") == "--- a/old.py\n+++ b/new.py\n"
    assert unified_diff("x\n", "y\n", "old.py", "new.py").startswith("--- a/old.py\n+++ b/new.py\n")


lines = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "a\r\n", "", "x", "\n"]), max_size=25)


@settings(max_examples=400, deadline=None)
@given(before=lines, after=lines, data=st.data())
def test_all_hunks_give_after_none_give_before(
    before: list[str], after: list[str], data: st.DataObject
) -> None:
    old, new = "".join(before), "".join(after)
    blocks = hunks(old, new)
    ids = [h.id for h in blocks]
    assert ids == [f"h{n}" for n in range(1, len(blocks) + 1)]
    assert apply_hunks(old, blocks, ids) == new
    assert apply_hunks(old, blocks, []) == old
    chosen = data.draw(st.sets(st.sampled_from(ids)) if ids else st.just(set[str]()))
    partial = apply_hunks(old, blocks, chosen)
    grown = sum(h.new_lines - h.old_lines for h in blocks if h.id in chosen)
    assert len(split_lines(partial)) == len(split_lines(old)) + grown
    assert apply_hunks(partial, hunks(partial, new), [h.id for h in hunks(partial, new)]) == new
