"""Diffs of proposed changes: the unified text people read, and hunks a reviewer accepts one by one.

``hunks`` cuts a change into its separate blocks (no context lines, no merging of nearby blocks),
so an editor can show each block and apply only those the user accepts with ``apply_hunks``;
``merge`` puts two changes of one text together when their blocks are apart. Lines keep their own
line endings: joining them gives back the exact text.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Hunk:
    """One block of changed lines. Starts are 1-based; for a pure insertion ``old_start`` is the
    line the new text goes before (one past the end for an append), likewise ``new_start``."""

    id: str
    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    old_text: str
    new_text: str


def split_lines(text: str) -> list[str]:
    """Lines with their ``\\n`` kept (a ``\\r`` stays on its line); the last may lack one."""
    lines = text.split("\n")
    last = lines.pop()
    return [line + "\n" for line in lines] + ([last] if last else [])


@functools.lru_cache(maxsize=16)
def unified_diff(before: str, after: str, path_label: str, after_label: str | None = None) -> str:
    """A ``git diff``-style unified diff of one file (``after_label`` for a move). Kept for the
    last few changes: the permission ask and the tool's result both show the diff of a change."""
    old, new = split_lines(before), split_lines(after)
    if old == new:  # a move that changes no line has its header; nothing else has a diff
        return (
            f"--- a/{path_label}\n+++ b/{after_label}\n" if after_label and after_label != path_label else ""
        )
    out = [f"--- a/{path_label}\n", f"+++ b/{after_label or path_label}\n"]
    for group in _grouped(line_opcodes(old, new)):
        (_tag, i1, _i, j1, _j), (_tag2, _i1, i2, _j1, j2) = group[0], group[-1]
        out.append(f"@@ -{_span(i1, i2)} +{_span(j1, j2)} @@\n")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out += [" " + line for line in old[a1:a2]]
            else:
                out += ["-" + line for line in old[a1:a2]] + ["+" + line for line in new[b1:b2]]
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in out)


def _grouped(codes: list[Opcode], context: int = 3) -> list[list[Opcode]]:
    """The changes of ``codes`` in hunks with up to ``context`` lines around them, as
    difflib's ``get_grouped_opcodes`` cuts them."""
    if codes[0][0] == "equal":
        tag, i1, i2, j1, j2 = codes[0]
        codes[0] = tag, max(i1, i2 - context), i2, max(j1, j2 - context), j2
    if codes[-1][0] == "equal":
        tag, i1, i2, j1, j2 = codes[-1]
        codes[-1] = tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)
    groups: list[list[Opcode]] = []
    group: list[Opcode] = []
    for tag, a1, i2, b1, j2 in codes:
        i1, j1 = a1, b1
        if tag == "equal" and i2 - i1 > 2 * context:  # a long unchanged run ends the hunk
            group.append((tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)))
            groups.append(group)
            group = []
            i1, j1 = max(i1, i2 - context), max(j1, j2 - context)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        groups.append(group)
    return groups


def _span(start: int, stop: int) -> str:
    """A hunk's range as unified diffs write it: 1-based start, and the count unless it is 1
    (an empty range starts at the line before it)."""
    count = stop - start
    if count == 1:
        return str(start + 1)
    return f"{start + 1 if count else start},{count}"


def hunks(before: str, after: str, eol_blind: bool = False) -> list[Hunk]:
    """The change from ``before`` to ``after`` as separate blocks, ids ``h1``, ``h2``... in order.
    ``eol_blind``: a line that only went from ``\\r\\n`` to ``\\n`` or back is not a change."""
    old, new = split_lines(before), split_lines(after)
    blocks = [op for op in _opcodes(old, new, eol_blind) if op[0] != "equal"]
    return [
        Hunk(f"h{n}", i1 + 1, i2 - i1, j1 + 1, j2 - j1, "".join(old[i1:i2]), "".join(new[j1:j2]))
        for n, (_tag, i1, i2, j1, j2) in enumerate(blocks, 1)
    ]


def _opcodes(old: list[str], new: list[str], eol_blind: bool) -> Sequence[tuple[str, int, int, int, int]]:
    if eol_blind:
        old, new = [_lf(line) for line in old], [_lf(line) for line in new]
    return line_opcodes(old, new)


Opcode = tuple[str, int, int, int, int]


def line_opcodes(old: Sequence[Hashable], new: Sequence[Hashable]) -> list[Opcode]:
    """difflib's opcodes from ``old`` to ``new`` (lines, or anything standing for them). The lines
    both start and end with alike are compared one by one and only what lies between is diffed,
    with difflib's heuristic for lines repeated throughout (autojunk, from 200 lines on): a change
    touches a few lines of a file, and difflib exactly over all of them took 6 s for one changed
    line in 20,000 (its cost grows with the copies of the most common line, blank lines, "}")."""
    n, m = len(old), len(new)
    head = 0
    while head < n and head < m and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < n - head and tail < m - head and old[n - 1 - tail] == new[m - 1 - tail]:
        tail += 1
    ops: list[Opcode] = [("equal", 0, head, 0, head)] if head else []
    a, b = old[head : n - tail], new[head : m - tail]
    matcher = difflib.SequenceMatcher(None, a, b)
    ops += [
        (tag, i1 + head, i2 + head, j1 + head, j2 + head) for tag, i1, i2, j1, j2 in matcher.get_opcodes()
    ]
    if tail:
        ops.append(("equal", n - tail, n, m - tail, m))
    return ops


def _lf(line: str) -> str:
    return line[:-2] + "\n" if line.endswith("\r\n") else line


def with_endings(text: str, *sources: str) -> str:
    """``text``, an editor's (which gives a document one line ending), with each line it has as
    one of ``sources`` has it, but for its ending, ending as it does there (the first source
    that has it decides); lines of its own keep theirs."""
    lines = split_lines(text)
    kept = [False] * len(lines)
    for source in sources:
        old = split_lines(source)
        for _tag, i1, i2, j1, j2 in (op for op in _opcodes(old, lines, True) if op[0] == "equal"):
            for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
                if not kept[j]:
                    lines[j], kept[j] = old[i], True
    return "".join(lines)


def apply_hunks(before: str, blocks: Iterable[Hunk], accepted_ids: Iterable[str]) -> str:
    """``before`` with only the accepted blocks applied (blocks must come from ``hunks(before, _)``)."""
    accepted = set(accepted_ids)
    old = split_lines(before)
    out: list[str] = []
    at = 0  # index into old of the first line not yet copied
    for hunk in sorted(blocks, key=lambda h: h.old_start):
        start = hunk.old_start - 1
        if start < at or "".join(old[start : start + hunk.old_lines]) != hunk.old_text:
            raise ValueError(f"hunk {hunk.id} does not apply to this text")
        out += old[at:start]
        out.append(hunk.new_text if hunk.id in accepted else hunk.old_text)
        at = start + hunk.old_lines
    out += old[at:]
    return "".join(out)


@dataclass(frozen=True)
class Merge:
    """Two changes of one base text in one: ``text`` is None when they conflict. ``theirs`` are
    the blocks of the second change; ``conflicts`` the pairs (ours, theirs) that meet."""

    text: str | None
    theirs: list[Hunk]
    conflicts: list[tuple[Hunk, Hunk]]


def merge(base: str, ours: str, theirs: str) -> Merge:
    """A three-way merge by lines of ``ours`` and ``theirs``, both changed from ``base``. As in
    git, blocks of the two conflict when they share a base line or touch (no unchanged line
    between them; two insertions at one place touch); otherwise each lands where it was made.
    ``theirs`` is an editor's buffer: a line of it that differs from ``base`` only in its ending
    (``\\r\\n`` or ``\\n``) is not a change (VS Code gives a document of a file with mixed line
    endings the most common one), and the lines neither side changed come as ``theirs`` has them."""
    mine, yours = hunks(base, ours), hunks(base, theirs, eol_blind=True)
    conflicts = [(o, t) for o in mine for t in yours if _meet(o, t)]
    if conflicts:
        return Merge(None, yours, conflicts)
    old, new = split_lines(base), split_lines(theirs)
    for _tag, i1, i2, j1, j2 in (op for op in _opcodes(old, new, True) if op[0] == "equal"):
        old[i1:i2] = new[j1:j2]  # as long: equal but for line endings
    out: list[str] = []
    at = 0
    for block in sorted(mine + yours, key=lambda h: h.old_start):
        out += old[at : block.old_start - 1]
        out.append(block.new_text)
        at = block.old_start - 1 + block.old_lines
    out += old[at:]
    return Merge("".join(out), yours, [])


def _meet(a: Hunk, b: Hunk) -> bool:
    return a.old_start <= b.old_start + b.old_lines and b.old_start <= a.old_start + a.old_lines


def lines_of(block: Hunk) -> str:
    """The base lines ``block`` changes, as people say it: "line 4", "lines 4-6", "after line 3"
    (an insertion), "before line 1"."""
    first, count = block.old_start, block.old_lines
    if count == 0:
        return "before line 1" if first == 1 else f"after line {first - 1}"
    return f"line {first}" if count == 1 else f"lines {first}-{first + count - 1}"
