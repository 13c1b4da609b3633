"""Unified diffs and hunks: separate blocks, stable ids, partial application, and three-way
merges of an accepted change with what the user typed meanwhile."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tools.diff import Hunk, apply_hunks, hunks, lines_of, merge, split_lines, unified_diff, with_endings

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


def test_changes_far_apart_in_a_long_file_of_repeated_lines_are_their_own_lines() -> None:
    # Diffed exactly, every line of it, this took seconds (difflib's cost grows with the copies
    # of the most common line); the lines between the first and the last change are many here.
    before = "".join(f"def f{n}():\n    return {n}\n\n" for n in range(7000))
    after = before.replace("return 3\n", "return -3\n", 1).replace("return 6990\n", "return 0\n")
    blocks = hunks(before, after)
    assert [(h.old_start, h.old_text, h.new_text) for h in blocks] == [
        (11, "    return 3\n", "    return -3\n"),
        (20972, "    return 6990\n", "    return 0\n"),
    ]
    assert apply_hunks(before, blocks, ["h1", "h2"]) == after


@settings(max_examples=400, deadline=None)
@given(before=lines, after=lines)
def test_a_unified_diff_holds_both_texts_where_its_hunks_say(before: list[str], after: list[str]) -> None:
    old, new = "".join(before), "".join(after)
    diff = unified_diff(old, new, "f.py")
    if split_lines(old) == split_lines(new):
        assert diff == ""
        return
    olds, news = split_lines(old), split_lines(new)
    body = diff.split("\n", 2)[2].replace("\n\\ No newline at end of file\n", "\n")
    assert diff.startswith("--- a/f.py\n+++ b/f.py\n@@ -")
    at_old = at_new = 0
    rebuilt_old: list[str] = []
    rebuilt_new: list[str] = []
    for hunk in body.split("@@ -")[1:]:
        head, text = hunk.split(" @@\n", 1)
        (o1, oc), (n1, nc) = [
            (int(p[0]), int(p[1]) if len(p) > 1 else 1) for p in (r.split(",") for r in head.split(" +"))
        ]
        start_old, start_new = (o1 - 1 if oc else o1), (n1 - 1 if nc else n1)
        assert start_old >= at_old and start_new >= at_new and start_old - at_old == start_new - at_new
        rebuilt_old += olds[at_old:start_old]
        rebuilt_new += news[at_new:start_new]
        marked = text.splitlines(keepends=True)
        mine = [m[1:] for m in marked if m[0] in " -"]
        theirs = [m[1:] for m in marked if m[0] in " +"]
        assert (len(mine), len(theirs)) == (oc, nc)
        rebuilt_old += mine
        rebuilt_new += theirs
        at_old, at_new = start_old + oc, start_new + nc
    rebuilt_old += olds[at_old:]
    rebuilt_new += news[at_new:]
    strip = [line.rstrip("\n") for line in olds], [line.rstrip("\n") for line in news]
    assert ([line.rstrip("\n") for line in rebuilt_old], [line.rstrip("\n") for line in rebuilt_new]) == strip


def edited(text: str, changes: dict[int, str]) -> str:
    """``text`` with each 1-based line replaced (by lines with their endings: "" deletes it)."""
    lines = split_lines(text)
    for line, new in changes.items():
        lines[line - 1] = new
    return "".join(lines)


NINE = "".join(f"{n}\n" for n in range(1, 10))
PROPOSED = {3: "three\n", 7: "seven\n"}  # the agent's change: h1 on line 3, h2 on line 7


@pytest.mark.parametrize(
    ("typed", "accepted", "expected"),
    [
        ({1: "one\n"}, ["h1", "h2"], {1: "one\n", 3: "three\n", 7: "seven\n"}),  # above
        ({9: "nine\n"}, ["h1", "h2"], {3: "three\n", 7: "seven\n", 9: "nine\n"}),  # below
        ({5: "five\n"}, ["h1", "h2"], {3: "three\n", 5: "five\n", 7: "seven\n"}),  # between
        ({5: ""}, ["h1", "h2"], {3: "three\n", 5: "", 7: "seven\n"}),  # a line between deleted
        ({5: "5\nnew\n"}, ["h1", "h2"], {3: "three\n", 5: "5\nnew\n", 7: "seven\n"}),  # inserted
        ({1: "", 9: "9\nten\n"}, ["h1", "h2"], {1: "", 3: "three\n", 7: "seven\n", 9: "9\nten\n"}),
        ({3: "3 typed\n"}, ["h2"], {3: "3 typed\n", 7: "seven\n"}),  # on h1, which was rejected
        ({8: "eight\n"}, ["h1"], {3: "three\n", 8: "eight\n"}),  # next to h2, which was rejected
    ],
)
def test_edits_apart_from_the_accepted_hunks_merge(
    typed: dict[int, str], accepted: list[str], expected: dict[int, str]
) -> None:
    ours = apply_hunks(NINE, hunks(NINE, edited(NINE, PROPOSED)), accepted)
    merged = merge(NINE, ours, edited(NINE, typed))
    assert (merged.text, merged.conflicts) == (edited(NINE, expected), [])
    assert [lines_of(h) for h in merged.theirs] == [lines_of(h) for h in hunks(NINE, edited(NINE, typed))]


@pytest.mark.parametrize(
    ("typed", "conflicts"),
    [
        ({3: "3 typed\n"}, [("line 3", "line 3")]),  # the same line
        ({2: "two\n"}, [("line 3", "line 2")]),  # the line above
        ({8: "eight\n"}, [("line 7", "line 8")]),  # the line below
        ({3: "", 4: ""}, [("line 3", "lines 3-4")]),  # lines the hunk changes deleted
        ({3: "3\nnew\n"}, [("line 3", "after line 3")]),  # an insertion right after it
        ({2: "two\n", 8: "eight\n"}, [("line 3", "line 2"), ("line 7", "line 8")]),
        ({4: "four\n", 5: "five\n", 6: "six\n"}, [("line 3", "lines 4-6"), ("line 7", "lines 4-6")]),
    ],
)
def test_edits_on_or_next_to_an_accepted_hunk_conflict(
    typed: dict[int, str], conflicts: list[tuple[str, str]]
) -> None:
    merged = merge(NINE, edited(NINE, PROPOSED), edited(NINE, typed))
    assert merged.text is None
    assert [(lines_of(o), lines_of(t)) for o, t in merged.conflicts] == conflicts


def test_crlf_lines_and_a_missing_final_newline_are_kept() -> None:
    crlf = NINE.replace("\n", "\r\n")
    merged = merge(crlf, edited(crlf, {7: "seven\r\n"}), edited(crlf, {1: "one\r\n"}))
    assert merged.text == edited(crlf, {1: "one\r\n", 7: "seven\r\n"})
    assert merge(crlf, edited(crlf, {7: "seven\r\n"}), edited(crlf, {6: "six\r\n"})).text is None
    bare = "1\n2\n3\n4\n5"  # no final newline
    assert merge(bare, edited(bare, {1: "one\n"}), edited(bare, {5: "five"})).text == "one\n2\n3\n4\nfive"
    assert merge(bare, edited(bare, {1: "one\n"}), edited(bare, {5: "5\n"})).text == "one\n2\n3\n4\n5\n"
    assert merge(bare, edited(bare, {5: "5\n6\n"}), edited(bare, {2: "two\n"})).text == "1\ntwo\n3\n4\n5\n6\n"
    assert merge(bare, edited(bare, {5: "5\n6\n"}), edited(bare, {4: "four\n"})).conflicts


def test_a_buffer_differing_only_in_line_endings_is_no_edit_and_keeps_them() -> None:
    # A file with mixed endings (lines 4-6 LF) as VS Code holds it: every line CRLF.
    mixed = "".join(
        line if 4 <= n <= 6 else line.replace("\n", "\r\n") for n, line in enumerate(split_lines(NINE), 1)
    )
    buffer = mixed.replace("\r\n", "\n").replace("\n", "\r\n")
    ours = edited(mixed, {3: "three\r\n", 7: "seven\r\n"})  # on the lines next to the LF ones
    merged = merge(mixed, ours, buffer)
    assert (merged.text, merged.theirs, merged.conflicts) == (
        edited(buffer, {3: "three\r\n", 7: "seven\r\n"}),
        [],
        [],
    )
    typed = edited(buffer, {5: "five\r\n"})  # the user typed between the two: only that is theirs
    merged = merge(mixed, edited(mixed, {2: "two\r\n", 8: "eight\r\n"}), typed)
    assert merged.text == edited(typed, {2: "two\r\n", 8: "eight\r\n"})
    assert [lines_of(h) for h in merged.theirs] == ["line 5"]
    assert [lines_of(h) for h in merge(mixed, ours, typed).theirs] == ["line 5"]  # still apart: no conflict
    assert merge(mixed, edited(mixed, {4: "four\n"}), typed).conflicts  # next to it


def test_an_editors_text_gets_the_line_endings_of_the_lines_it_has_from_the_sources() -> None:
    mixed = "a\r\nb\nc\r\nd\n"
    after = "a\r\nB\r\nc\r\nd\n"  # the change made b B, with the file's usual ending
    assert with_endings("a\nB\nc\nd\n", after, mixed) == after
    assert with_endings("a\nb\nc\nd\n", after, mixed) == mixed  # B rejected: b as the file has it
    assert with_endings("a\nB\ntyped\nd\n", after, mixed) == "a\r\nB\r\ntyped\nd\n"  # their own line


def test_two_insertions_at_one_place_conflict_and_lines_are_named_as_people_say_them() -> None:
    [(ours, theirs)] = merge(NINE, "mine\n" + NINE, "yours\n" + NINE).conflicts
    assert (lines_of(ours), lines_of(theirs)) == ("before line 1", "before line 1")
    assert lines_of(hunks(NINE, NINE + "end\n")[0]) == "after line 9"
    assert lines_of(hunks(NINE, edited(NINE, {2: "", 3: "", 4: ""}))[0]) == "lines 2-4"


@settings(max_examples=400, deadline=None)
@given(base=lines, ours=lines, theirs=lines)
def test_a_merge_keeps_each_side_and_does_not_depend_on_which_is_ours(
    base: list[str], ours: list[str], theirs: list[str]
) -> None:
    old, mine, yours = "".join(base), "".join(ours), "".join(theirs)
    assert merge(old, mine, old).text == mine and merge(old, old, yours).text == yours
    merged = merge(old, mine, yours)
    if "\r" not in old + mine + yours:  # theirs, an editor's buffer, may change no line's ending
        assert merge(old, yours, mine).text == merged.text
    if merged.text is not None:  # each side's blocks, all of them, and nothing else
        grown = sum(h.new_lines - h.old_lines for h in [*hunks(old, mine), *merged.theirs])
        assert len(split_lines(merged.text)) == len(split_lines(old)) + grown
    else:
        assert merged.conflicts and all(o in hunks(old, mine) for o, _ in merged.conflicts)
