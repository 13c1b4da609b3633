"""Diffs of proposed changes: the unified text people read, and hunks a reviewer accepts one by one.

``hunks`` cuts a change into its separate blocks (no context lines, no merging of nearby blocks),
so an editor can show each block and apply only those the user accepts with ``apply_hunks``.
Lines keep their own line endings: joining them gives back the exact text.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterable
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
    out: list[str] = []
    if old == new and after_label and after_label != path_label:  # a move that changes no line
        return f"--- a/{path_label}\n+++ b/{after_label}\n"
    for line in difflib.unified_diff(
        old, new, f"a/{path_label}", f"b/{after_label or path_label}", lineterm="\n"
    ):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def hunks(before: str, after: str) -> list[Hunk]:
    """The change from ``before`` to ``after`` as separate blocks, ids ``h1``, ``h2``... in order."""
    old, new = split_lines(before), split_lines(after)
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    blocks = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    return [
        Hunk(f"h{n}", i1 + 1, i2 - i1, j1 + 1, j2 - j1, "".join(old[i1:i2]), "".join(new[j1:j2]))
        for n, (_tag, i1, i2, j1, j2) in enumerate(blocks, 1)
    ]


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
