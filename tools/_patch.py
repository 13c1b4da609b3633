"""Patches as models write them: the ``*** Begin Patch`` format and unified diffs (``git diff``).

``parse`` turns either into ``FilePatch``es (add, delete, update, with an optional move);
``locate`` finds where each chunk's old lines are in a file (exactly, then ignoring trailing, then
all surrounding whitespace) and returns the replacements in body offsets.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from ._indent import Unfitted, fit
from ._match import Replacement
from .base import ToolError
from .diff import split_lines


class PatchError(ToolError):
    """The patch cannot be read or does not fit the file; the message says where."""


@dataclass
class Chunk:
    old: list[str] = field(default_factory=list[str])
    new: list[str] = field(default_factory=list[str])
    context: str = ""  # the text after "@@" in the Begin Patch format: a line to find first
    hint: int | None = None  # the old start line of a unified diff hunk (1-based)
    #: The old and new line counts a unified diff hunk's header states.
    counts: tuple[int, int] | None = None
    at_end: bool = False
    #: (index in ``new``, index in ``old``) of each context line: the file's own line is kept.
    kept: list[tuple[int, int]] = field(default_factory=list[tuple[int, int]])
    #: "\ No newline at end of file" after an old (``-``) or a new (``+``) line; both for context.
    no_newline: set[str] = field(default_factory=set[str])
    last_mark: str = ""


@dataclass
class FilePatch:
    kind: Literal["add", "delete", "update"]
    path: str
    move_to: str | None = None
    chunks: list[Chunk] = field(default_factory=list[Chunk])
    content: str = ""  # for "add"
    #: The mode a unified diff's git lines ask for (``100755``): said, not applied. A section with
    #: only a mode and no change ("update" without chunks) changes nothing.
    mode: str = ""


_UNIFIED_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_GIT_HEADER = re.compile(r"^diff --git (?:\S+) b/(.+)$")


def parse(text: str) -> list[FilePatch]:
    lines = _unfenced(text.replace("\r\n", "\n").strip("\n").split("\n"))
    begin = next((i for i, line in enumerate(lines) if line.startswith("*** Begin Patch")), None)
    # What a model wrote before "*** Begin Patch" ("Here is the patch:") is not the patch's.
    patches = _parse_begin_patch(lines[begin:]) if begin is not None else _parse_unified(lines)
    if not patches:
        raise PatchError(
            "The patch changes no file. Send '*** Begin Patch' ... '*** End Patch' with "
            "'*** Add File:', '*** Update File:' or '*** Delete File:' sections, or a unified diff."
        )
    return patches


def _unfenced(lines: list[str]) -> list[str]:
    """The patch without the Markdown fence models often put around it (```diff ... ```)."""
    if len(lines) > 1 and lines[0].startswith("```") and lines[-1].strip() == "```":
        return lines[1:-1]
    return lines


def _parse_begin_patch(lines: list[str]) -> list[FilePatch]:
    patches: list[FilePatch] = []
    current: FilePatch | None = None
    blanks = 0  # empty lines of an added file not yet known to be inside it (not at its end)
    for number, line in enumerate(lines, 1):
        if line.startswith("*** End Patch"):
            break  # anything after it is not the patch's
        if number == len(lines) and patches:  # often a model's answer cut off at its output limit
            raise PatchError(
                f"The patch ends without '*** End Patch' (after line {number}), so it may have been "
                "cut off; nothing was changed. Send the whole patch, ending with '*** End Patch'."
            )
        if line.startswith("*** Begin Patch"):
            continue
        if current is not None and current.kind == "add" and not line:
            blanks += 1  # "+" forgotten on an empty line; at the end of the file, a separator
            continue
        if blanks and current is not None and line.startswith("+"):
            current.content += "\n" * blanks
        blanks = 0
        header = re.match(r"^\*\*\* (Add|Delete|Update) File: (.+)$", line)
        if header:
            kind = header.group(1).lower()
            current = FilePatch(kind, header.group(2).strip())  # type: ignore[arg-type]
            patches.append(current)
        elif current is None:
            raise PatchError(
                f"Patch line {number}: expected a '*** Add/Update/Delete File:' line, got {line!r}"
            )
        elif line.startswith("*** Move to: "):
            current.move_to = line.removeprefix("*** Move to: ").strip()
        elif line.strip() == "*** End of File":
            if current.chunks:
                current.chunks[-1].at_end = True
        elif current.kind == "add":
            if not line.startswith("+"):
                raise PatchError(f"Patch line {number}: every line of an added file starts with '+'")
            current.content += line[1:] + "\n"
        elif current.kind == "delete":
            raise PatchError(f"Patch line {number}: a deleted file takes no lines, got {line!r}")
        elif line.startswith("@@"):
            current.chunks.append(Chunk(context=line[2:].strip()))
        else:
            _body_line(current, line, number)
    return patches


def _body_line(current: FilePatch, line: str, number: int) -> None:
    if not current.chunks:
        current.chunks.append(Chunk())
    chunk = current.chunks[-1]
    mark, rest = (line[:1], line[1:]) if line else (" ", "")
    if mark == " ":
        chunk.kept.append((len(chunk.new), len(chunk.old)))
        chunk.old.append(rest)
        chunk.new.append(rest)
    elif mark == "-":
        chunk.old.append(rest)
    elif mark == "+":
        chunk.new.append(rest)
    elif line.startswith("\\"):  # "\ No newline at end of file", for the line before it
        chunk.at_end = True
        chunk.no_newline |= {" ": {"-", "+"}, "-": {"-"}, "+": {"+"}}.get(chunk.last_mark, set())
        return
    else:
        raise PatchError(
            f"Patch line {number}: {line!r} starts with none of ' ', '-', '+' (context, removed, added)"
        )
    chunk.last_mark = mark


def _parse_unified(lines: list[str]) -> list[FilePatch]:
    patches: list[FilePatch] = []
    current: FilePatch | None = None
    renamed_from = ""
    adding = 0
    # The file of a "diff --git" section, the mode its lines ask for, whether they make a new
    # file, and how many sections came before it: a section adding none changes a mode and
    # nothing else, or adds an empty file (git writes no hunk for one).
    section, mode, new_file, before = "", "", False, 0

    def without_hunks() -> None:
        if len(patches) == before and (mode or new_file):
            patches.append(FilePatch("add" if new_file else "update", section, mode=mode))

    for number, line in enumerate(lines, 1):
        if line.startswith("diff --git "):
            without_hunks()
            current, section, mode, new_file, before = None, _git_file(line), "", False, len(patches)
        elif line.startswith(("new file mode ", "new mode ")) and current is None:
            mode, new_file = _asked_mode(line), line.startswith("new file mode ")
        elif line.startswith("--- ") and number < len(lines) and lines[number].startswith("+++ "):
            old, new = _unified_name(line[4:]), _unified_name(lines[number][4:])
            if new is None and old is not None:
                current = FilePatch("delete", old)
            elif old is None and new is not None:
                current = FilePatch("add", new)
            elif old is not None and new is not None:
                current = FilePatch(
                    "update", renamed_from or old, new if new != (renamed_from or old) else None
                )
            else:
                raise PatchError(f"Patch line {number}: both sides are /dev/null")
            if renamed_from and patches and patches[-1].path == renamed_from and not patches[-1].chunks:
                mode = patches.pop().mode  # the "rename from/to" lines announced this same file
            current.mode, mode = mode, ""  # a diff without "diff --git" lines: not the next file's
            patches.append(current)
            renamed_from = ""
        elif line.startswith("rename from "):
            renamed_from = line.removeprefix("rename from ").strip()
        elif line.startswith("rename to ") and renamed_from:
            current = FilePatch("update", renamed_from, line.removeprefix("rename to ").strip(), mode=mode)
            mode = ""
            patches.append(current)
        elif (
            current is None
            or (line.startswith("+++ ") and lines[number - 2].startswith("--- "))
            or line.startswith(("index ", "new file mode", "deleted file mode", "similarity"))
        ):
            continue
        elif (hunk := _UNIFIED_HUNK.match(line)) is not None:
            current.chunks.append(Chunk(hint=int(hunk[1]), counts=(int(hunk[2] or 1), int(hunk[3] or 1))))
            adding = int(hunk[3] or 1)  # the lines an added file's hunk says it holds
        elif line.startswith("@@") and current.kind == "update":  # "@@", "@@ def f": no numbers
            current.chunks.append(Chunk(context=line.strip("@ ")))
        elif current.kind == "add":
            if line.startswith("+") or (not line and adding > 0):  # a blank line sent without its "+"
                current.content += line[1:] + "\n"
                adding -= 1
            elif line.startswith("\\") and current.content:  # "\ No newline at end of file"
                current.content = current.content.removesuffix("\n")
        elif current.kind == "update":
            _body_line(current, line, number)
    without_hunks()
    return [p for p in patches if p.kind != "update" or p.chunks or p.move_to or p.mode]


def _git_file(line: str) -> str:
    """The file a ``diff --git a/x b/x`` line names (its new name)."""
    git = _GIT_HEADER.match(line)
    return git.group(1) if git else ""


def _asked_mode(line: str) -> str:
    """The mode a ``new mode`` or ``new file mode`` line asks for; none for a new file's usual one."""
    mode = line.rsplit(maxsplit=1)[-1]
    return "" if line.startswith("new file mode ") and mode == "100644" else mode


def _unified_name(name: str) -> str | None:
    name = name.split("\t", maxsplit=1)[0].strip()
    if name == "/dev/null":
        return None
    return name[2:] if name.startswith(("a/", "b/")) else name


Same = Callable[[str, str], bool]
_LEVELS: tuple[Same, ...] = (
    lambda a, b: a == b,
    lambda a, b: a.rstrip() == b.rstrip(),
    lambda a, b: a.strip() == b.strip(),
)


def replacements(body: str, chunks: list[Chunk], shown: str) -> list[Replacement]:
    """Where each chunk goes in ``body`` (``\\n`` line endings), in order, as replacements.

    Each chunk must lie after the lines the previous one replaced: one found only before that (a
    repeated or overlapping hunk, or hunks out of order) is refused, never applied twice."""
    lines = split_lines(body)
    bare = [line.rstrip("\n") for line in lines]
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    cursor = 0
    shift = 0  # how far the file's lines are from a unified diff's line numbers, as found so far
    spans: list[tuple[int, int]] = []  # the lines each chunk replaced
    out: list[Replacement] = []
    for number, chunk in enumerate(chunks, 1):
        where = f"{shown}, chunk {number}"
        if chunk.context:
            cursor = _after_context(bare, chunk, cursor, where)
        old, new = list(chunk.old), list(chunk.new)
        hint = None if chunk.hint is None or not _counted(chunk) else chunk.hint + shift
        if (
            old
            and old[-1] == ""
            and (len(new) - 1, len(old) - 1) in chunk.kept  # context, the last line of both sides
            and _seek(bare, old, cursor, len(bare), hint=hint, at_end=chunk.at_end) is None
        ):
            old.pop()  # a blank context line at the very end of a chunk that the file lacks
            new.pop()
        if not old:
            at = len(lines) if chunk.hint is None and not chunk.context else cursor
            at = hint if hint is not None else at  # "@@ -5,0": after line 5
            at = max(0, min(at, len(lines)))
            if at < cursor:
                raise _out_of_order(shown, chunk, number, (at, at), spans)
        else:
            found = _seek(bare, old, cursor, len(bare), hint=hint, at_end=chunk.at_end)
            if found is None:
                done = spans[-1][1] if spans else 0
                earlier = _seek(bare, old, 0, done, hint=hint, at_end=False)
                if earlier is not None:
                    raise _out_of_order(shown, chunk, number, (earlier, earlier + len(old)), spans)
                shown_old = "\n".join(
                    line if line.strip() else f"(a blank line: {line!r})" for line in old[:12]
                )
                raise PatchError(
                    f"{where}: these lines were not found in the file (after line {cursor}):\n"
                    f"{shown_old}\nRead the file again and make the context and '-' lines match it exactly."
                )
            at_end = chunk.at_end and found == len(bare) - len(old)  # else: as any other chunk
            if hint is None and not chunk.context and not at_end:
                _refuse_ambiguous(bare, old, found, spans, where)
            elif hint is not None or chunk.context:
                _refuse_looser_nearer(bare, old, found, cursor, hint=hint, where=where)
            if (
                hint is not None
                and (earlier := _nearer_before(bare, old, found, cursor, hint=hint)) is not None
            ):
                raise _out_of_order(shown, chunk, number, (earlier, earlier + len(old)), spans)
            at = found
            if hint is not None and chunk.hint is not None:
                shift = at - (chunk.hint - 1)
        at = max(0, min(at, len(lines)))
        end = at + len(old)
        text = "".join(line + "\n" for line in _fitted(chunk, new, old, bare[at:end], where))
        if end == len(lines) and text:
            text = _file_end(chunk, text, bool(old), bool(body) and not body.endswith("\n"))
        out.append(Replacement(starts[at], starts[end], text))
        spans.append((at, end))
        cursor = end
    return out


def _file_end(chunk: Chunk, text: str, replaces: bool, missing: bool) -> str:
    """``text`` replacing the end of a file whose last line has no newline when ``missing``: put
    after that line, and without its own final newline when the patch's markers say so (else as
    the file was)."""
    if not replaces and missing:
        text = "\n" + text
    if ("+" in chunk.no_newline) if chunk.no_newline else missing:
        text = text[:-1]
    return text


def _fitted(chunk: Chunk, new: list[str], old: list[str], found: list[str], where: str) -> list[str]:
    """``new`` as it goes into the file where ``old`` was ``found``: context lines are the file's
    own (a patch that matched them ignoring whitespace must not turn the file's tabs into its
    spaces, or strip what it has at a line's end); added lines are re-indented to the file when
    the match ignored indentation."""
    if found == old or len(found) != len(old):
        return new
    out = list(new)
    if any(a.rstrip() != b.rstrip() for a, b in zip(old, found, strict=True)):  # indentation differs
        try:  # the whole new side, so that added lines are placed among the kept ones
            fitted = fit("\n".join(new), "\n".join(old), "\n".join(found)).split("\n")
        except Unfitted as error:
            raise PatchError(
                f"{where}: the patch's lines are not indented like the file's (not even shifted as a block), "
                f"so the file's indentation for the added line {error.line.strip()!r} cannot be told; "
                "nothing was changed. Copy the context and '-' lines with their indentation from "
                "read's output, and indent the '+' lines the same way."
            ) from None
        kept = {n for n, _o in chunk.kept}
        out = [fitted[i] if i not in kept else line for i, line in enumerate(new)]
    for n, o in chunk.kept:
        if n < len(out) and o < len(found):
            out[n] = found[o]
    return out


def _out_of_order(
    shown: str, chunk: Chunk, number: int, span: tuple[int, int], spans: list[tuple[int, int]]
) -> PatchError:
    """Why chunk ``number``, which fits only the lines ``span`` (an insertion when they are
    equal), before the end of the lines the chunks ``spans`` replaced, cannot be applied."""
    at, end = span
    word = "hunk" if chunk.hint is not None else "chunk"
    repeated = [n for n, (s, e) in enumerate(spans, 1) if (s, e) == span and end > at]
    touched = [n for n, (s, e) in enumerate(spans, 1) if s <= at < e or at < s < end]
    after = [n for n, (s, _e) in enumerate(spans, 1) if s >= end]
    lines = f"line {at + 1}" if end - at <= 1 else f"lines {at + 1}-{end}"
    if repeated:
        problem = f"{word} {number} repeats lines {word} {repeated[0]} already changed ({lines})"
    elif touched:
        problem = f"{word} {number} overlaps {word} {', '.join(map(str, touched))} ({lines})"
    else:
        problem = (
            f"{word} {number} ({lines}) comes before {word} {after[0] if after else len(spans)} in the file"
        )
    return PatchError(
        f"{shown}: {problem}. Each {word} must come after the lines the one before it changed: "
        f"drop a repeated {word}, merge overlapping ones into one, or put them in file order. "
        "Nothing was changed."
    )


_WORD = re.compile(r"\w")


def _after_context(bare: list[str], chunk: Chunk, cursor: int, where: str) -> int:
    """Where a chunk with an ``@@`` line may start: after that line, or on it when the chunk
    repeats it as its first line (models often do: the next line like it would be another
    class's method of the same name)."""
    found = _context_line(bare, chunk.context, cursor)
    if found is None:
        earlier = _context_line(bare, chunk.context, 0)
        if earlier is not None:  # not missing: the chunks are out of the file's order
            raise PatchError(
                f"{where}: the line after @@ ({chunk.context!r}) is line {earlier + 1}, before the "
                f"lines the chunk before it changed (up to line {cursor}). Each chunk must come after "
                "the one before it: put them in file order. Nothing was changed."
            )
        raise PatchError(f"{where}: the line after @@ ({chunk.context!r}) is not in the file.")
    repeated = bool(chunk.old) and chunk.old[0].strip() == bare[found].strip()
    return found if repeated else found + 1


def _context_line(lines: list[str], context: str, start: int) -> int | None:
    """The first line from ``start`` that the text after "@@" names: the whole line (stripped),
    else a part of it that begins and ends where words do (``def foo`` names ``def foo(a):``,
    never ``def foobar():``, whose body would then be changed instead)."""
    wanted = context.strip()
    found = next((i for i in range(start, len(lines)) if lines[i].strip() == wanted), None)
    if found is not None:
        return found
    edges = re.escape(wanted)
    if _WORD.match(wanted[:1]):
        edges = r"(?<!\w)" + edges
    if _WORD.match(wanted[-1:]):
        edges += r"(?!\w)"
    pattern = re.compile(edges)
    return next((i for i in range(start, len(lines)) if pattern.search(lines[i])), None)


def _refuse_ambiguous(
    lines: list[str], old: list[str], found: int, spans: list[tuple[int, int]], where: str
) -> None:
    """A chunk with neither a line number nor an "@@" line must fit one place in the lines no
    earlier chunk changed: of several, taking the first after the chunk before it would as
    likely change the wrong one (chunks written out of the file's order go there)."""
    places = _places(lines, old, found, range(len(lines) - len(old) + 1), spans)
    if len(places) > 1:
        shown = ", ".join(str(i + 1) for i in places[:10]) + (" ..." if len(places) > 10 else "")
        raise PatchError(
            f"{where}: its lines fit {len(places)} places (starting at lines {shown}), so it is "
            "not clear which to change. Add an '@@' line naming the function or class it is in "
            "(e.g. '@@ def name'), or more unchanged context lines. Nothing was changed."
        )


def _nearer_before(lines: list[str], old: list[str], found: int, cursor: int, *, hint: int) -> int | None:
    """A place before ``cursor`` where a unified hunk's lines fit nearer its own line number
    than ``found``: the hunks are out of order, or the hunk repeats one before it (its lines,
    with the same numbers), and the one after the cursor is not the place the hunk names."""
    before = _places(  # in the lines earlier hunks changed too: a repeated hunk names them
        lines, old, found, range(min(cursor, len(lines) - len(old) + 1)), []
    )
    nearest = min(before, key=lambda i: abs(i - (hint - 1)), default=None)
    if nearest is not None and abs(nearest - (hint - 1)) < abs(found - (hint - 1)):
        return nearest
    return None


def _places(
    lines: list[str], old: list[str], found: int, starts: range, spans: list[tuple[int, int]]
) -> list[int]:
    """The starts where ``old`` fits as closely as at ``found``, in lines ``spans`` left alone."""
    n = len(old)
    same = next(same for same in _LEVELS if all(same(lines[found + k], old[k]) for k in range(n)))
    return [
        i
        for i in starts
        if all(same(lines[i + k], old[k]) for k in range(n))
        and not any(i < e and s < i + n for s, e in spans)
    ]


def _counted(chunk: Chunk) -> bool:
    """Whether a unified hunk's header may name its line: not models' placeholder ``@@ -1,1 +1,1
    @@`` (or ``-0,0``) on a longer hunk. A header only a line or two off in its counts still does."""
    placeholder = chunk.hint in (0, 1) and chunk.counts in ((1, 1), (0, 0))
    return not (placeholder and max(len(chunk.old), len(chunk.new)) > 1)


def _refuse_looser_nearer(
    lines: list[str], old: list[str], found: int, start: int, *, hint: int | None, where: str
) -> None:
    """Refuse a chunk that fits at ``found`` more closely than where it fits but for whitespace,
    nearer its line number, or inside the block its "@@" line names (from ``start``) when
    ``found`` is past that block: the exact text of a method copied elsewhere is not the method
    the chunk names. In the named block, the closest fit is the one meant."""
    n = len(old)
    level = next(k for k, same in enumerate(_LEVELS) if all(same(lines[found + i], old[i]) for i in range(n)))
    if hint is not None:
        target, distance = hint - 1, abs(found - (hint - 1))
        places = range(max(start, target - distance + 1), min(len(lines) - n + 1, target + distance))
    else:
        end = _block_end(lines, start)
        places = range(start, min(end, len(lines) - n + 1)) if found >= end else range(0)
    for same in _LEVELS[level + 1 :]:
        for i in places:
            if all(same(lines[i + k], old[k]) for k in range(n)):
                named = (
                    "nearer its line number" if hint is not None else "in the block the line after @@ names"
                )
                raise PatchError(
                    f"{where}: its lines are in the file as written at line {found + 1}, and but for "
                    f"their whitespace at line {i + 1}, {named}; which is meant cannot be told. "
                    "Copy the lines with their indentation from read's output. Nothing was changed."
                )


def _block_end(lines: list[str], start: int) -> int:
    """The end of the block whose first line is the one before ``start`` (an "@@" line's): the
    next line indented no deeper than it, or the end of the file."""
    header = lines[max(start - 1, 0)]
    depth = len(header) - len(header.lstrip())
    return next(
        (
            j
            for j in range(start, len(lines))
            if lines[j].strip() and len(lines[j]) - len(lines[j].lstrip()) <= depth
        ),
        len(lines),
    )


def _seek(
    lines: list[str], wanted: list[str], start: int, stop: int, *, hint: int | None, at_end: bool
) -> int | None:
    """The index from ``start`` to before ``stop`` where ``wanted`` starts: nearest the hint (a
    unified diff's line), at the end of the file for an end-of-file chunk, else the first."""
    n = len(wanted)
    candidates = range(start, min(stop, len(lines) - n + 1))
    for same in _LEVELS:
        found = [i for i in candidates if all(same(lines[i + k], wanted[k]) for k in range(n))]
        if not found:
            continue
        if at_end and found[-1] == len(lines) - n:
            return found[-1]
        if hint is not None:
            return min(found, key=lambda i: abs(i - (hint - 1)))
        return found[0]
    return None
