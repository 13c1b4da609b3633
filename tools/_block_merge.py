"""newString's changes made on the file's block that an anchored matcher found, not the block
replaced whole.

context-aware and block-anchored accept a block whose middle differs from oldString: the model
misremembered lines, or the file gained lines since it read it. Replaced whole with newString,
such lines were lost, though the model never saw them: an audit call the model's copy lacked,
deleted by an edit of a status string next to it. Instead, the lines the model changed (oldString
to newString, compared as the model wrote them) replace the file lines they stand for, and
every other file line stays as it is.
"""

from __future__ import annotations

from difflib import SequenceMatcher

from ._indent import same_lines


class Unplaced(Exception):
    """The model's changes cannot be placed on the file's lines: the lines around them are not
    in the file as the model wrote them."""


def onto_block(fitted: str, old: str, new: str, matched: str) -> str:
    """``new``'s changes from ``old`` made on ``matched``, the file's block; ``fitted`` is ``new``
    indented for the file (line for line). Each run of old lines the model changed replaces the
    file lines paired with them (``same_lines``), or when some of them have no pair, all the
    file lines between the pairs around the run; an insertion goes right after the file line of
    the old line before it, or right before that of the old line after it (between old lines
    without a pair, it cannot be placed). When all of them end with a line break, it is no line
    of its own: paired with a blank line inside ``old``, it was taken as changed, and the file's
    went with it."""
    ending = "\n" if all(text.endswith("\n") for text in (fitted, old, new, matched)) else ""
    if ending:
        fitted, old, new, matched = fitted[:-1], old[:-1], new[:-1], matched[:-1]
    old_lines, new_lines, file_lines = old.split("\n"), new.split("\n"), matched.split("\n")
    fitted_lines = fitted.split("\n")
    pairs = same_lines(old_lines, file_lines)
    out: list[str] = []
    at = 0  # the first file line not yet placed
    for tag, a1, a2, b1, b2 in SequenceMatcher(None, old_lines, new_lines, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        lo, hi = _region(pairs, a1, a2, len(old_lines), len(file_lines))
        if lo < at:
            raise Unplaced
        out += file_lines[at:lo]
        out += fitted_lines[b1:b2]
        at = hi
    return "\n".join(out + file_lines[at:]) + ending


def _region(pairs: dict[int, int], a1: int, a2: int, size: int, end: int) -> tuple[int, int]:
    """The file lines that old lines ``a1:a2`` (of ``size``) stand for (``a1 == a2``: where to
    insert) among ``end`` file lines."""
    before = max((i for i in pairs if i < a1), default=None)
    after = min((i for i in pairs if i >= a2), default=None)
    lo = pairs[before] + 1 if before is not None else 0
    hi = pairs[after] if after is not None else end
    if a1 == a2:  # an insertion: right after the old line before it, or right before the one after it
        if a1 == (before + 1 if before is not None else 0) or lo == hi:
            return lo, lo
        if a1 == (after if after is not None else size):
            return hi, hi
        raise Unplaced  # among old lines without a pair: which of their file lines it follows is unknown
    if all(i in pairs for i in range(a1, a2)):  # each changed line's own file line
        return pairs[a1], pairs[a2 - 1] + 1
    return lo, hi
