"""Where ``oldString`` is in a file: a cascade of matchers, strictest first, that never guesses.

Each matcher lists every span it would accept. The first matcher that finds anything decides:
one span is the match; several are an error naming their lines (a looser matcher is never asked
to break the tie, since it would pick one of equally good places by accident); with
``replace_all`` every span is replaced. A matcher that sees other places about as good as the
ones it accepts refuses too (``_Tie``). Fuzzy spans far larger than ``oldString`` are refused;
when indentation differed, ``newString`` is re-indented to the file's, and the lines it keeps
unchanged from ``oldString`` are the file's own.

Content is the file's text with ``\\n`` line endings and no BOM (see ``_text.py``).
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from functools import cached_property

from rapidfuzz import fuzz, process

from ._anchored import Anchored, block_anchored, context_aware, line_slack
from ._block_merge import Unplaced, onto_block
from ._indent import Unfitted, core, fit, keep_unchanged, reindent, shape
from .base import ToolError
from .diff import split_lines


class MatchError(ToolError):
    """``oldString`` could not be placed; the message says why and what to send instead."""


class _Tie(Exception):
    """Places about equally like ``oldString`` (found as ``how`` says), so none may be picked."""

    def __init__(self, spans: list[Span], how: str = "") -> None:
        super().__init__(how)
        self.spans, self.how = sorted(set(spans)), how


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
    #: The lines of exact matches that start or end inside a word (``x = 1`` in ``max = 1``).
    in_words: list[int] = field(default_factory=list[int])

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

    def block(self, first: int, count: int) -> list[str]:
        """``count`` lines from 0-based ``first``, without their line breaks."""
        return [line.rstrip("\n") for line in self.lines[first : first + count]]

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
    """``old`` with its escapes undone (``\\n``, ``\\"`` written once too often), found as it is.
    When ``old`` as written, whitespace aside, is somewhere else, either could be meant: a tie."""
    unescaped = unescape(old)
    spans = exact(content, unescaped) if unescaped != old else []
    if spans and (
        elsewhere := [
            s for s in whitespace_normalized(content, old) if not any(_overlap(s, t) for t in spans)
        ]
    ):
        raise _Tie(spans + elsewhere, "escape-normalized, whitespace-normalized")
    return spans


def _overlap(a: Span, b: Span) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def trimmed_boundary(content: Content, old: str) -> list[Span]:
    """``old`` without its leading and trailing whitespace (blank lines, indentation), found as
    it is. A side that had whitespace must fall where a line's text begins or ends: the text
    inside a longer line ("return x" in "return x  # why") is not what was meant; nor does
    either side fall inside a word ("count = 1" in "account = 1"). The span takes in the
    indentation before it, so newString is fitted to it like the other fuzzy matches."""
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
        before, after = text[line_start:start], text[end:line_end]
        if (lead and before.strip()) or (trail and after.strip()):
            continue
        if _joined(before[-1:], trimmed[0]) or _joined(trimmed[-1], after[:1]):
            continue
        spans.append((line_start if lead else start, end))
    return spans


def _joined(left: str, right: str) -> bool:
    """Whether ``left`` and ``right`` (a character each, or nothing) are parts of one word: a
    combining mark (the accent of a decomposed ``é``, a Devanagari vowel sign) is part of its
    letter's."""
    return all(
        ch and (ch.isalnum() or ch == "_" or unicodedata.category(ch).startswith("M")) for ch in (left, right)
    )


def _untied(matcher: Callable[[Content, str], Anchored]) -> Matcher:
    """An anchored matcher as the cascade's: its spans, or a ``_Tie`` when it saw rivals."""

    def spans(content: Content, old: str) -> list[Span]:
        found = matcher(content, old)
        if found.rivals:
            raise _Tie(found.spans + found.rivals)
        return found.spans

    return spans


def _disjoint(spans: list[Span]) -> list[Span]:
    out: list[Span] = []
    for span in sorted(set(spans)):
        if not out or span[0] >= out[-1][1]:
            out.append(span)
    return out


#: The matchers whose block may hold lines oldString lacks or misremembers (``onto_block``).
ANCHORED = ("context-aware", "block-anchored")
CASCADE: tuple[tuple[str, Matcher], ...] = (
    ("exact", exact),
    ("escape-normalized", escape_normalized),
    ("indentation-flexible", indentation_flexible),
    ("line-trimmed", line_trimmed),
    ("whitespace-normalized", whitespace_normalized),
    ("trimmed-boundary", trimmed_boundary),
    ("context-aware", _untied(context_aware)),
    ("block-anchored", _untied(block_anchored)),
)


def find(content: Content, old: str, new: str, replace_all: bool = False) -> Found:
    """The replacements turning ``old`` into ``new``, or a ``MatchError`` saying what to do."""
    for name, matcher in CASCADE:
        try:
            spans = sorted(set(matcher(content, old)))
        except _Tie as tie:
            raise MatchError(
                f"oldString is about as similar to {len(tie.spans)} places ({tie.how or name}): lines "
                f"{_ranges(content, tie.spans)}, so which one is meant cannot be told; nothing was "
                "changed. Copy the exact lines of the one to change from read's output (without the "
                "line-number prefix) into oldString."
            ) from None
        if not spans:
            continue
        if replace_all:
            spans = _disjoint(spans)
        if len(spans) > 1 and not replace_all:
            how = "" if name == "exact" else f" (matching {name})"
            raise MatchError(
                f"oldString matches {len(spans)} places{how}, starting at lines {_shown(content, spans)}. "
                "Add surrounding lines to oldString to pick one, or set replaceAll to change every one."
            )
        if name != "exact":
            for start, end in spans:
                _check_proportion(content, old, start, end, name)
        replacements = [Replacement(s, e, _new_text(content, old, new, (s, e), name)) for s, e in spans]
        if name != "exact":
            replacements = [r if r.text else _whole_lines(content, r) for r in replacements]
            return Found(replacements, name, [content.line_of(start) for start, _ in spans])
        body = content.text
        in_words = [
            content.line_of(s)
            for s, e in spans
            if _joined(body[s - 1 : s], body[s : s + 1]) or _joined(body[e - 1 : e], body[e : e + 1])
        ]
        if len(in_words) == len(spans) and not replace_all:
            _refuse_whole_lines_elsewhere(content, old, spans, "as part of a longer word")
        if old[:1] in (" ", "\t") and not replace_all and all(_in_indentation(body, s) for s, _ in spans):
            _refuse_whole_lines_elsewhere(content, old, spans, "from inside a deeper line's indentation")
        return Found(replacements, name, [content.line_of(start) for start, _ in spans], in_words)
    raise MatchError(not_found(content, old))


def _refuse_whole_lines_elsewhere(content: Content, old: str, spans: list[Span], how: str) -> None:
    """An exact match that is only part of a longer word (``count = 0`` in ``account = 0``) or
    starts inside a deeper line's indentation (5 spaces of 8), as ``how`` says, while whole lines
    elsewhere match but for their whitespace (``count = 0  ``, 4 spaces): the lines meant are the
    latter, most likely. Not guessed: refused, naming both."""
    for name, matcher in (("line-trimmed", line_trimmed), ("whitespace-normalized", whitespace_normalized)):
        apart = [s for s in set(matcher(content, old)) if not any(s[0] < e and b < s[1] for b, e in spans)]
        if apart:
            raise MatchError(
                f"oldString is exactly in line {_shown(content, spans)}, but there only {how}, and "
                f"whole lines match it at line {_shown(content, sorted(apart))} but for their "
                f"whitespace ({name}); which is meant cannot be told, so nothing was changed. Copy "
                "the exact lines of the one to change from read's output (without the line-number "
                "prefix) into oldString."
            )


def _in_indentation(text: str, at: int) -> bool:
    """Whether offset ``at`` is inside a line's indentation, past its start."""
    start = text.rfind("\n", 0, at) + 1
    return at > start and not text[start:at].strip(" \t")


def _shown(content: Content, spans: list[Span]) -> str:
    lines = [content.line_of(start) for start, _ in spans]
    return ", ".join(map(str, lines[:20])) + (" ..." if len(lines) > 20 else "")


def _ranges(content: Content, spans: list[Span]) -> str:
    return ", ".join(f"{content.line_of(s)}-{content.line_of(max(s, e - 1))}" for s, e in spans)


def _whole_lines(content: Content, deletion: Replacement) -> Replacement:
    """A fuzzy match (its line breaks do not say which ones go, as an exact oldString's do)
    deleted over whole lines takes those lines with it: deleting only their text left an empty
    line, with its indentation, where the block was."""
    body, start, end = content.text, deletion.start, deletion.end
    line_start = body.rfind("\n", 0, start) + 1
    if end > start and body[end - 1] == "\n":  # the match takes its last line's break: no further
        line_end = end - 1
    else:
        line_end = body.find("\n", end)
        line_end = len(body) if line_end < 0 else line_end
    if body[line_start:start].strip() or body[end:line_end].strip():
        return deletion  # part of a line
    if line_end < len(body):
        return Replacement(line_start, line_end + 1, "")
    return Replacement(max(line_start - 1, 0), line_end, "")  # the last line: the break before it


def _new_text(content: Content, old: str, new: str, span: Span, matcher: str) -> str:
    """``new`` for the ``span`` that ``matcher`` found ``old`` at: unescaped as ``old`` was, or
    indented for the file with the lines it keeps from ``old`` as the file has them."""
    matched = content.text[span[0] : span[1]]
    if matcher == "exact":
        return new
    if matcher == "escape-normalized":
        return unescape(new, keep=_written(old, matched))
    if matcher == "trimmed-boundary":  # the span has no blank lines or trailing whitespace
        old, new = core(old), core(new)
    if matcher == "indentation-flexible":  # its spans are oldString shifted as a block
        return keep_unchanged(reindent(new, old, matched), old, new, matched)
    try:  # the other spans may be indented differently from old, even unevenly
        if matcher in ANCHORED:
            return onto_block(fit(new, old, matched), old, new, matched)
        return keep_unchanged(fit(new, old, matched), old, new, matched)
    except Unplaced:
        first, last = content.line_of(span[0]), content.line_of(max(span[0], span[1] - 1))
        raise MatchError(
            f"oldString matched lines {first}-{last} ({matcher}), but too many of its lines differ "
            "from the file's to tell which file lines newString changes; nothing was changed. Copy "
            "the lines from read's output (without the line-number prefix) into oldString."
        ) from None
    except Unfitted as error:
        first, last = content.line_of(span[0]), content.line_of(max(span[0], span[1] - 1))
        raise MatchError(
            f"oldString matched lines {first}-{last} ({matcher}), but its lines are not indented "
            "like the file's (not even shifted as a block), so the file's indentation for "
            f"newString's line {error.line.strip()!r} cannot be told; nothing was changed. "
            "Copy the lines with their indentation from read's output (without the line-number "
            "prefix) into oldString, and indent newString the same way."
        ) from None


def _check_proportion(content: Content, old: str, start: int, end: int, matcher: str) -> None:
    got_lines = content.text.count("\n", start, end) + 1
    want_lines = old.strip("\n").count("\n") + 1
    if got_lines > want_lines + line_slack(want_lines) or end - start > 1.5 * len(old) + 80:
        first = content.line_of(start)
        raise MatchError(
            f"The closest match ({matcher}) spans lines {first}-{first + got_lines - 1} "
            f"({got_lines} lines, {end - start} characters) for an oldString of {want_lines} lines "
            f"and {len(old)} characters; refusing a match that much larger than oldString. "
            "Read the file and send the exact text to replace."
        )


_ESCAPES = re.compile(r"\\(n|t|r|'|\"|`|\\|\$|\n)")
_UNESCAPED = {"n": "\n", "t": "\t", "r": "\r", "'": "'", '"': '"', "`": "`", "\\": "\\", "$": "$", "\n": "\n"}


def unescape(text: str, keep: Collection[str] = ()) -> str:
    """``text`` as the model meant it when it escaped it once too often (``\\n``, ``\\"``); the
    escapes whose character after the backslash is in ``keep`` stay as written."""
    return _ESCAPES.sub(lambda m: m.group(0) if m.group(1) in keep else _UNESCAPED[m.group(1)], text)


def _written(old: str, matched: str) -> set[str]:
    """The escapes (by the character after the backslash) that newString means as written, when
    ``old`` matched ``matched`` with its escapes undone: of those ``old`` did not undo itself, the
    ones ``matched`` has as written (``"\\n"`` in a Python string must not become a line break)
    and the ones whose character ``old`` writes plainly (an ``old`` with real line breaks does not
    write one as ``\\n``)."""
    undone = {m.group(1) for m in _ESCAPES.finditer(old)}
    plain = _ESCAPES.sub("", old)
    return {k for k, char in _UNESCAPED.items() if k not in undone and ("\\" + k in matched or char in plain)}


def not_found(content: Content, old: str) -> str:
    """The error for a missing ``oldString``, showing the file's closest region with line numbers."""
    message = "oldString was not found in the file"
    if (why := _invisible_difference(content, old)) is not None:
        return f"{message}: {why}"
    region = closest_region(content, old)
    if region is None:
        return message + ". Read the file again and copy the exact text to replace."
    first, last, score = region
    shown = "".join(f"{n + 1:>6}\t{content.lines[n]}" for n in range(first, last + 1)).rstrip("\n")
    return (
        f"{message}. The closest text ({score:.0f}% similar) is at lines {first + 1}-{last + 1}:\n"
        f"{shown}\nCopy the exact text from there (without the line-number prefix) into oldString."
    )


def _invisible_difference(content: Content, old: str) -> str | None:
    """Why ``old`` is not in the file when the difference cannot be seen: a BOM, or Unicode
    normalization (an accented letter as one character or as a letter and a combining accent)."""
    if "\ufeff" in old and old.replace("\ufeff", "") in content.text:
        return (
            "oldString contains a byte-order mark (U+FEFF), which the file's text does not. Send it without."
        )
    if unicodedata.normalize("NFC", old) in unicodedata.normalize("NFC", content.text):
        return (
            "oldString differs from the file only in Unicode normalization (an accented letter written "
            "as one character in one and as a letter plus a combining accent in the other). Copy the "
            "text from read's output, or pick an oldString that leaves out the accented letters."
        )
    return None


_COMPARED = 2000  # characters of a line closest_region compares


def closest_region(content: Content, old: str, max_lines: int = 30) -> tuple[int, int, float] | None:
    """(first, last 0-based line, similarity) of the file region most like ``old``. Lines and
    regions are compared by their first ``_COMPARED`` characters: a similarity takes time in
    the product of the two lengths (a 2 MB minified line against a 100 KB ``old``: 15 s)."""
    wanted = [line.strip()[:_COMPARED] for line in old.strip("\n").split("\n")]
    n = len(wanted)
    if not content.lines or not any(wanted):
        return None
    lines = content.stripped
    if any(len(line) > _COMPARED for line in lines):
        lines = [line[:_COMPARED] for line in lines]
    starts: set[int] = set()
    probes = sorted((w for w in wanted if w), key=len, reverse=True)[:5]
    for offset, probe in ((wanted.index(p), p) for p in probes):
        for _choice, _score, index in process.extract(probe, lines, scorer=fuzz.ratio, limit=3):
            starts.add(max(0, index - offset))
    joined = "\n".join(wanted)[: _COMPARED * 4]
    best: tuple[int, int, float] | None = None
    for start in starts:
        last = min(len(content.lines), start + n) - 1
        score = fuzz.ratio("\n".join(lines[start : last + 1])[: _COMPARED * 4], joined)
        if best is None or score > best[2]:
            best = (start, last, score)
    if best is None or best[2] < 40:
        return None
    return best[0], min(best[1], best[0] + max_lines - 1), best[2]
