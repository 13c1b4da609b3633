"""What edit and multiedit tell the model about where oldString was placed: the matcher of a
fuzzy match, and an exact match that starts or ends inside a longer word (``x = 1`` in
``max = 1``: the line meant may not be in the file at all)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import Reply

from .conftest import Harness

ONCE = Reply("once")
IN_WORD = "Note: oldString matched part of a longer word (line {}). Check the diff: is that the place"


async def seen(h: Harness, name: str, text: str) -> Path:
    path = h.root / name
    path.write_text(text)
    await h.ok("read", {"filePath": name})
    return path


def output(outcome: object) -> str:
    result = getattr(outcome, "result", None)
    assert result is not None
    return result.output


@pytest.mark.parametrize(
    ("text", "old", "new", "note"),
    [
        ("max = 1\n", "x = 1", "x = 2", IN_WORD.format(1)),  # the line meant is not there
        ("x = 1\nsize = 1\n", "e = 1", "e = 2", IN_WORD.format(2)),
        ("a.foo(1)\nb = foo(2)\n", "foo(1)", "bar(1)", None),  # a whole name after "."
        ("count_v1 = 1\n", "_v1", "_v2", IN_WORD.format(1)),
        ("x = 1\n", "x = 1", "x = 2", None),
    ],
)
async def test_an_exact_match_inside_a_longer_word_is_said(
    h: Harness, text: str, old: str, new: str, note: str | None
) -> None:
    path = await seen(h, "m.py", text)
    h.human.replies = [ONCE]
    done = output(await h.ok("edit", {"filePath": "m.py", "oldString": old, "newString": new}))
    assert path.read_text() == text.replace(old, new)  # said, not refused
    assert (note in done) if note else ("Note:" not in done), done


async def test_multiedit_marks_each_edit_that_was_not_an_exact_whole_word_match(h: Harness) -> None:
    path = await seen(h, "m.py", "def f():\n    max = 1\n    return max\n")
    h.human.replies = [ONCE]
    edits = [
        {"oldString": "x = 1", "newString": "x = 2"},
        {"oldString": "return max", "newString": "return max + 1"},
        {"oldString": "return max + 1  ", "newString": "return max + 2"},
    ]
    done = output(await h.ok("multiedit", {"filePath": "m.py", "edits": edits}))
    assert path.read_text() == "def f():\n    max = 2\n    return max + 2\n"
    assert done.splitlines()[:6] == [
        "Applied 3 edits to m.py:",
        "  1. replaced 1 occurrence (line 2) [part of a longer word]",
        "  2. replaced 1 occurrence (line 3)",
        "  3. replaced 1 occurrence (line 3) [indentation-flexible]",
        "Note: some oldStrings did not match exactly (matcher in brackets). Check the diff.",
        "Note: some oldStrings matched part of a longer word (in brackets). Check the diff.",
    ]


async def test_part_of_a_longer_word_is_refused_when_whole_lines_match_elsewhere(h: Harness) -> None:
    """``count = 0`` is exactly in ``account = 0``, and whole lines match it but for trailing
    spaces: the exact match used to win, and setup() was changed instead of run()."""
    text = "def setup():\n    account = 0\n    limit = 5\n\n\ndef run():\n    count = 0  \n    limit = 5\n"
    path = await seen(h, "w.py", text)
    edit = {
        "filePath": "w.py",
        "oldString": "count = 0\n    limit = 5",
        "newString": "count = 1\n    limit = 9",
    }
    outcome = await h.call("edit", edit)
    assert outcome.error is not None and path.read_text() == text
    assert "exactly in line 2, but there only as part of a longer word" in outcome.error
    assert "whole lines match it at line 7 but for their whitespace (line-trimmed)" in outcome.error
