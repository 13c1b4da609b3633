"""Where ``oldString`` is in a file: a cascade of matchers, strictest first, that never guesses.

Each matcher lists every span it would accept. The first matcher that finds anything decides:
one span is the match; several are an error naming their lines (a looser matcher is never asked
to break the tie, since it would pick one of equally good places by accident); with
``replace_all`` every span is replaced. Fuzzy spans far larger than ``oldString`` are refused, and
when indentation differed, ``newString`` is re-indented to the file's.

Content is the file's text with ``\\n`` line endings and no BOM (see ``_text.py``).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from rapidfuzz import fuzz, process

from ._indent import Unfitted, core, fit, reindent, shape
from .base import ToolError
from .diff import split_lines

#: Middle lines of an anchored block must be at least this similar (0-100) to ``oldString``'s.
ANCHOR_SIMILARITY = 80.0
#: A context-aware block needs at least this share of its middle lines unchanged.
CONTEXT_SHARE = 0.5
#: How far apart (times oldString's lines) anchors are still looked for, to be refused by name.
FAR_FACTOR = 20
#: The anchor first line of a block must have this many letters or digits ("}" is no anchor).
ANCHOR_MIN_WORD_CHARS = 4


class MatchError(ToolError):
    """``oldString`` could not be placed; the message says why and what to send instead."""


@dataclass(frozen=True)
class Replacement:
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Found:
    """Where to change: non-overlapping replacements in file order, and how they were found."""

    replacements: list[Replacement]
    matcher: str
    lines: list[int]  # 1-based first line of each replacement

    @property
    def exact(self) -> bool:
        return self.matcher == "exact"


@dataclass
class Content:
    """The file's text with its lines indexed (built once, shared by the matchers)."""

    text: str
    lines: list[str] = field(init=False)
    starts: list[int] = field(init=False)

    def __post_init__(self) -> None:
        self.lines = split_lines(self.text)
        self.starts = [0]
        for line in self.lines:
            self.starts.append(self.starts[-1] + len(line))

    @cached_property
    def stripped(self) -> list[str]:
        return [line.strip() for line in self.lines]

    @cached_property
    def normalized(self) -> list[str]:
        return [_normalize(line) for line in self.lines]

    def line_of(self, offset: int) -> int:
        """1-based line number of a character offset."""
        return bisect_right(self.starts, offset)

    def span(self, first: int, count: int, keep_newline: bool) -> tuple[int, int]:
        """Offsets of ``count`` lines from 0-based ``first``; the last newline only if asked."""
        end = self.starts[first + count]
        if not keep_newline and end > self.starts[first] and self.text[end - 1] == "\n":
            end -= 1
        return self.starts[first], end


Span = tuple[int, int]
Matcher = Callable[[Content, str], list[Span]]


def exact(content: Content, old: str) -> list[Span]:
    spans: list[Span] = []
    at = content.text.find(old)
    while at >= 0:  # overlapping places too: "aa" is in "aaa" twice, which is ambiguous
        spans.append((at, at + len(old)))
        at = content.text.find(old, at + 1)
    return spans


def _windows(content: Content, old: str, keys: list[str], key: Callable[[str], str]) -> list[Span]:
    """Windows of whole lines whose ``key`` equals that of ``old``'s lines."""
    wanted = old.split("\n")
    keep_newline = wanted[-1] == ""
    if keep_newline:
        wanted.pop()
    want = [key(line) for line in wanted]
    if not any(want):
        return []
    n = len(want)
    last = len(keys) - n
    starts = [i for i, k in enumerate(keys) if k == want[0] and i <= last] if want[0] else range(last + 1)
    return [content.span(i, n, keep_newline) for i in starts if keys[i : i + n] == want]


def line_trimmed(content: Content, old: str) -> list[Span]:
    return _windows(content, old, content.stripped, str.strip)


def whitespace_normalized(content: Content, old: str) -> list[Span]:
    return _windows(content, old, content.normalized, _normalize)


def _normalize(line: str) -> str:
    return " ".join(line.split())


def indentation_flexible(content: Content, old: str) -> list[Span]:
    """The same lines with the same relative indentation, under a different base (tabs count as
    one level)."""
    wanted = shape(old.rstrip("\n").split("\n"))
    spans = line_trimmed(content, old)
    return [s for s in spans if shape(content.text[s[0] : s[1]].rstrip("\n").split("\n")) == wanted]


def escape_normalized(content: Content, old: str) -> list[Span]:
    unescaped = unescape(old)
    return exact(content, unescaped) if unescaped != old else []


def trimmed_boundary(content: Content, old: str) -> list[Span]:
    """``old`` without its leading and trailing whitespace (blank lines, indentation), found as
    it is. A side that had whitespace must fall where a line's text begins or ends: the text
    inside a longer line ("return x" in "return x  # why") is not what was meant. The span
    takes in the indentation before it, so newString is fitted to it like the other fuzzy
    matches."""
    trimmed = old.strip()
    if not trimmed or trimmed == old:
        return []
    lead, trail = old[: len(old) - len(old.lstrip())], old[len(old.rstrip()) :]
    text = content.text
    spans: list[Span] = []
    for start, end in exact(content, trimmed):
        line_start = text.rfind("\n", 0, start) + 1
        line_end = text.find("\n", end)
        line_end = len(text) if line_end < 0 else line_end
        if lead and text[line_start:start].strip():
            continue
        if trail and text[end:line_end].strip():
            continue
        spans.append((line_start if lead else start, end))
    return spans


def context_aware(content: Content, old: str) -> list[Span]:
    """Same first and last line, same length, at least half the middle lines unchanged."""

    def score(block: list[str], wanted: list[str]) -> float | None:
        middle = [(a.strip(), b.strip()) for a, b in zip(block[1:-1], wanted[1:-1], strict=True)]
        same = sum(a == b for a, b in middle if a or b)
        counted = sum(1 for a, b in middle if a or b)
        share = same / counted if counted else 1.0
        return share if share >= CONTEXT_SHARE else None

    return _anchored(content, old, score, same_length=True)


def block_anchored(content: Content, old: str) -> list[Span]:
    """Same first and last line; the middle lines similar as a whole (rapidfuzz ratio)."""

    def score(block: list[str], wanted: list[str]) -> float | None:
        got = "\n".join(line.strip() for line in block[1:-1])
        want = "\n".join(line.strip() for line in wanted[1:-1])
        ratio = fuzz.ratio(got, want)
        return ratio if ratio >= ANCHOR_SIMILARITY else None

    return _anchored(content, old, score, same_length=False)


def _anchored(
    content: Content,
    old: str,
    score: Callable[[list[str], list[str]], float | None],
    same_length: bool,
) -> list[Span]:
    """Blocks between lines equal to ``old``'s first and last line that ``score`` accepts (not
    None): from each first line, the block scoring best among those about as long as ``old``
    (the nearest length on a tie). Taking the shortest instead cut a function at an early
    ``return`` equal to its last line, leaving the rest of it behind the new text.

    Without ``same_length``, when none is near, a pair of anchors much further apart whose first
    middle lines look like ``old``'s is returned too (that is what loose matchers elsewhere
    replace), so that the proportion check refuses it by name instead of the edit quietly failing
    or deleting lines.
    """
    wanted = old.split("\n")
    keep_newline = wanted[-1] == ""
    if keep_newline:
        wanted.pop()
    n = len(wanted)
    first, last = wanted[0].strip(), wanted[-1].strip()
    if n < 3 or not last or sum(ch.isalnum() for ch in first) < ANCHOR_MIN_WORD_CHARS:
        return []
    slack = 0 if same_length else _line_slack(n)
    reach = n + slack if same_length else FAR_FACTOR * n
    spans: list[Span] = []
    for i in [i for i, line in enumerate(content.stripped) if line == first]:
        best: tuple[float, int, int] | None = None  # (score, -distance from n, size)
        sizes = range(max(3, n - slack), min(reach, len(content.lines) - i) + 1)
        for size in sizes:
            if content.stripped[i + size - 1] != last:
                continue
            block = [line.rstrip("\n") for line in content.lines[i : i + size]]
            if size <= n + slack:
                got = score(block, wanted)
                if got is not None and (best is None or (got, -abs(size - n)) > best[:2]):
                    best = (got, -abs(size - n), size)
            elif best is not None:
                break
            elif score(block[: n - 1] + block[-1:], wanted) is not None:
                best = (0.0, 0, size)
                break
        if best is not None:
            spans.append(content.span(i, best[2], keep_newline))
    return spans


def _line_slack(n: int) -> int:
    return max(2, n // 4)


def _disjoint(spans: list[Span]) -> list[Span]:
    out: list[Span] = []
    for span in sorted(set(spans)):
        if not out or span[0] >= out[-1][1]:
            out.append(span)
    return out


CASCADE: tuple[tuple[str, Matcher], ...] = (
    ("exact", exact),
    ("escape-normalized", escape_normalized),
    ("indentation-flexible", indentation_flexible),
    ("line-trimmed", line_trimmed),
    ("whitespace-normalized", whitespace_normalized),
    ("trimmed-boundary", trimmed_boundary),
    ("context-aware", context_aware),
    ("block-anchored", block_anchored),
)
#: Matchers whose span may be indented differently from ``oldString``, even unevenly: fit
#: ``newString`` to it (``indentation-flexible`` spans are only shifted: ``reindent`` does).
REINDENT = {
    "trimmed-boundary",
    "line-trimmed",
    "whitespace-normalized",
    "context-aware",
    "block-anchored",
}


def find(content: Content, old: str, new: str, replace_all: bool = False) -> Found:
    """The replacements turning ``old`` into ``new``, or a ``MatchError`` saying what to do."""
    for name, matcher in CASCADE:
        spans = sorted(set(matcher(content, old)))
        if not spans:
            continue
        if replace_all:
            spans = _disjoint(spans)
        lines = [content.line_of(start) for start, _ in spans]
        if len(spans) > 1 and not replace_all:
            shown = ", ".join(map(str, lines[:20])) + (" ..." if len(spans) > 20 else "")
            how = "" if name == "exact" else f" (matching {name})"
            raise MatchError(
                f"oldString matches {len(spans)} places{how}, starting at lines {shown}. "
                "Add surrounding lines to oldString to pick one, or set replaceAll to change every one."
            )
        if name != "exact":
            for start, end in spans:
                _check_proportion(content, old, start, end, name)
        replacements = [Replacement(s, e, _new_text(content, old, new, (s, e), name)) for s, e in spans]
        if name != "exact":
            replacements = [r if r.text else _whole_lines(content, r) for r in replacements]
        return Found(replacements, name, lines)
    raise MatchError(not_found(content, old))


def _whole_lines(content: Content, deletion: Replacement) -> Replacement:
    """A fuzzy match (its line breaks do not say which ones go, as an exact oldString's do)
    deleted over whole lines takes those lines with it: deleting only their text left an empty
    line, with its indentation, where the block was."""
    body, start, end = content.text, deletion.start, deletion.end
    line_start = body.rfind("\n", 0, start) + 1
    line_end = body.find("\n", end)
    line_end = len(body) if line_end < 0 else line_end
    if body[line_start:start].strip() or body[end:line_end].strip():
        return deletion  # part of a line
    if line_end < len(body):
        return Replacement(line_start, line_end + 1, "")
    return Replacement(max(line_start - 1, 0), line_end, "")  # the last line: the break before it


def _new_text(content: Content, old: str, new: str, span: Span, matcher: str) -> str:
    if matcher == "escape-normalized" and "\n" not in old and "\n" not in new:
        return unescape(new)
    if matcher == "trimmed-boundary":  # the span has no blank lines or trailing whitespace
        old, new = core(old), core(new)
    if matcher == "indentation-flexible":  # its spans are oldString shifted as a block
        return reindent(new, old, content.text[span[0] : span[1]])
    if matcher in REINDENT:
        try:
            return fit(new, old, content.text[span[0] : span[1]])
        except Unfitted as error:
            first, last = content.line_of(span[0]), content.line_of(max(span[0], span[1] - 1))
            raise MatchError(
                f"oldString matched lines {first}-{last} ({matcher}), but its lines are not indented "
                "like the file's (not even shifted as a block), so the file's indentation for "
                f"newString's line {error.line.strip()!r} cannot be told; nothing was changed. "
                "Copy the lines with their indentation from read's output (without the line-number "
                "prefix) into oldString, and indent newString the same way."
            ) from None
    return new


def _check_proportion(content: Content, old: str, start: int, end: int, matcher: str) -> None:
    got_lines = content.text.count("\n", start, end) + 1
    want_lines = old.strip("\n").count("\n") + 1
    if got_lines > want_lines + _line_slack(want_lines) or end - start > 1.5 * len(old) + 80:
        first = content.line_of(start)
        raise MatchError(
            f"The closest match ({matcher}) spans lines {first}-{first + got_lines - 1} "
            f"({got_lines} lines, {end - start} characters) for an oldString of {want_lines} lines "
            f"and {len(old)} characters; refusing a match that much larger than oldString. "
            "Read the file and send the exact text to replace."
        )


_ESCAPES = re.compile(r"\\(n|t|r|'|\"|`|\\|\$|\n)")
_UNESCAPED = {"n": "\n", "t": "\t", "r": "\r", "'": "'", '"': '"', "`": "`", "\\": "\\", "$": "$", "\n": "\n"}


def unescape(text: str) -> str:
    """``oldString`` as the model meant it when it escaped it once too often (``\\n``, ``\\"``)."""
    return _ESCAPES.sub(lambda m: _UNESCAPED[m.group(1)], text)


def not_found(content: Content, old: str) -> str:
    """The error for a missing ``oldString``, showing the file's closest region with line numbers."""
    message = "oldString was not found in the file"
    region = closest_region(content, old)
    if region is None:
        return message + ". Read the file again and copy the exact text to replace."
    first, last, score = region
    shown = "".join(f"{n + 1:>6}\t{content.lines[n]}" for n in range(first, last + 1)).rstrip("\n")
    return (
        f"{message}. The closest text ({score:.0f}% similar) is at lines {first + 1}-{last + 1}:\n"
        f"{shown}\nCopy the exact text from there (without the line-number prefix) into oldString."
    )


def closest_region(content: Content, old: str, max_lines: int = 30) -> tuple[int, int, float] | None:
    """(first, last 0-based line, similarity) of the file region most like ``old``."""
    wanted = [line.strip() for line in old.strip("\n").split("\n")]
    n = len(wanted)
    if not content.lines or not any(wanted):
        return None
    starts: set[int] = set()
    probes = sorted((w for w in wanted if w), key=len, reverse=True)[:5]
    for offset, probe in ((wanted.index(p), p) for p in probes):
        for _choice, _score, index in process.extract(probe, content.stripped, scorer=fuzz.ratio, limit=3):
            starts.add(max(0, index - offset))
    joined = "\n".join(wanted)
    best: tuple[int, int, float] | None = None
    for start in starts:
        last = min(len(content.lines), start + n) - 1
        score = fuzz.ratio("\n".join(content.stripped[start : last + 1]), joined)
        if best is None or score > best[2]:
            best = (start, last, score)
    if best is None or best[2] < 40:
        return None
    return best[0], min(best[1], best[0] + max_lines - 1), best[2]
