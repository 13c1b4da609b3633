"""The anchored-block matchers: ``oldString``'s first and last line found as they are (stripped),
the lines between compared loosely: context-aware wants enough of them unchanged, block-anchored
wants them similar as a whole. Each reports the blocks it accepts and its rivals, other blocks
between the anchors about as similar, with which the match is a tie (``_match`` refuses it).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rapidfuzz import fuzz

if TYPE_CHECKING:
    from ._match import Content, Span

#: Middle lines of an anchored block must be at least this similar (0-100) to ``oldString``'s.
ANCHOR_SIMILARITY = 80.0
#: A context-aware block needs at least this share of its middle lines unchanged, and this many.
CONTEXT_SHARE = 0.5
CONTEXT_SAME = 2
#: A block from another first line whose middle is within this many points (0-100) as similar
#: as an accepted one's makes the match a tie.
TIE_MARGIN = 10.0
#: How far apart (times oldString's lines) anchors are still looked for, to be refused by name.
FAR_FACTOR = 20
#: The anchor first line of a block must have this many letters or digits ("}" is no anchor).
ANCHOR_MIN_WORD_CHARS = 4

#: Whether a block (its lines, oldString's, its ``_similarity``) is taken.
Accept = Callable[[list[str], list[str], float], bool]


@dataclass(frozen=True)
class Anchored:
    """The spans a matcher accepts, and its rivals (empty unless the match is a tie)."""

    spans: list[Span] = field(default_factory=list[tuple[int, int]])
    rivals: list[Span] = field(default_factory=list[tuple[int, int]])


def context_aware(content: Content, old: str) -> Anchored:
    """Same first and last line, same length, at least half the middle lines unchanged (and two:
    with one, a sloppy copy of one of two similar methods matched the other)."""

    def accept(block: list[str], wanted: list[str], _similarity: float) -> bool:
        middle = [(a.strip(), b.strip()) for a, b in zip(block[1:-1], wanted[1:-1], strict=True)]
        middle = [(a, b) for a, b in middle if a or b]
        same = sum(a == b for a, b in middle)
        return same >= CONTEXT_SAME and same >= CONTEXT_SHARE * len(middle)

    return _anchored(content, old, accept, same_length=True)


def block_anchored(content: Content, old: str) -> Anchored:
    """Same first and last line; the middle lines similar as a whole (rapidfuzz ratio)."""
    return _anchored(content, old, lambda _b, _w, similarity: similarity >= ANCHOR_SIMILARITY, False)


def line_slack(n: int) -> int:
    """How many lines more or fewer than oldString's ``n`` a fuzzy match may span."""
    return max(2, n // 4)


@dataclass(frozen=True)
class _Block:
    """``size`` lines from 0-based line ``start``: how like ``oldString``'s its middle lines are."""

    start: int
    size: int
    similarity: float


def _similarity(block: list[str], wanted: list[str]) -> float:
    """How like ``wanted``'s the middle lines of ``block`` are, stripped (0-100)."""
    return fuzz.ratio("\n".join(x.strip() for x in block[1:-1]), "\n".join(x.strip() for x in wanted[1:-1]))


def _anchored(content: Content, old: str, accept: Accept, same_length: bool) -> Anchored:
    """Blocks between lines equal to ``old``'s first and last line that ``accept`` takes: from
    each first line, the most similar of those about as long as ``old`` (the nearest length on a
    tie). Taking the shortest instead cut a function at an early ``return`` equal to its last
    line, leaving the rest of it behind the new text.

    A block about as long and about as similar (``TIE_MARGIN``) as a taken one is a rival when
    it is from another first line (a sloppy copy of one of two similar methods matched the other)
    or longer from the same one (a shortened copy of a function matched the block ending at an
    early line equal to its last, ``return False``, leaving the function's tail behind); a
    shorter one from the same first line, as ``_rival`` says (``old`` with a line too many
    matched the block running on to a next line equal to its last, which was replaced though
    ``old`` never held it).

    Without ``same_length``, when none is near, a pair of anchors much further apart whose first
    middle lines look like ``old``'s is taken too (``_far``), so that the proportion check refuses
    it by name instead of deleting the lines between.
    """
    wanted = old.split("\n")
    keep_newline = wanted[-1] == ""
    if keep_newline:
        wanted.pop()
    n = len(wanted)
    first, last = wanted[0].strip(), wanted[-1].strip()
    if n < 3 or not last or sum(ch.isalnum() for ch in first) < ANCHOR_MIN_WORD_CHARS:
        return Anchored()
    slack = line_slack(n)
    chosen: list[_Block] = []
    seen: list[_Block] = []  # every block about as long
    for i in [i for i, line in enumerate(content.stripped) if line == first]:
        near: list[tuple[_Block, bool]] = []
        for size in range(max(3, n - slack), min(n + slack, len(content.lines) - i) + 1):
            if content.stripped[i + size - 1] == last:
                block = content.block(i, size)
                got = _Block(i, size, _similarity(block, wanted))
                near.append((got, (size == n or not same_length) and accept(block, wanted, got.similarity)))
        seen += [b for b, _ok in near]
        taken = [b for b, ok in near if ok]
        if taken:
            chosen.append(max(taken, key=lambda b: (b.similarity, -abs(b.size - n))))
        elif not same_length and (far := _far(content, i, wanted, accept)) is not None:
            chosen.append(far)
    floor = min((b.similarity for b in chosen), default=math.inf) - TIE_MARGIN
    taken = {b.start: b for b in chosen}
    rivals = [b for b in seen if _rival(content, b, taken.get(b.start), floor, same_length)]
    return Anchored(
        [content.span(b.start, b.size, keep_newline) for b in chosen],
        [content.span(b.start, b.size, keep_newline) for b in rivals],
    )


def _rival(content: Content, block: _Block, taken: _Block | None, floor: float, same_length: bool) -> bool:
    """Whether ``block`` makes the match a tie with ``taken``, the block taken from its first
    line (if any), the taken blocks being ``floor`` similar or more (less ``TIE_MARGIN``).

    A shorter block from the same first line is one when it ends on the line before ``taken``'s
    last, which repeats it (``return None`` twice: ``old`` with a line too many reached the
    second); for context-aware (``same_length``), which takes a block for its length, when it is
    about as similar; for block-anchored, which takes the most similar, when it is as similar."""
    if block == taken:
        return False
    if taken is not None and block.size < taken.size:
        end = taken.start + taken.size - 1
        if block.size == taken.size - 1 and content.lines[end - 1] == content.lines[end]:
            return True
        return block.similarity >= (floor if same_length else taken.similarity)
    return block.similarity >= floor


def _far(content: Content, i: int, wanted: list[str], accept: Accept) -> _Block | None:
    """From line ``i``, the nearest anchors further apart than an anchored block may be (up to
    ``FAR_FACTOR`` times) whose first middle lines ``accept`` takes as ``wanted``'s."""
    n, last = len(wanted), wanted[-1].strip()
    for size in range(n + line_slack(n) + 1, min(FAR_FACTOR * n, len(content.lines) - i) + 1):
        if content.stripped[i + size - 1] == last:
            block = content.block(i, size)
            head = block[: n - 1] + block[-1:]
            if accept(head, wanted, similarity := _similarity(head, wanted)):
                return _Block(i, size, similarity)
    return None
