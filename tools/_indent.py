"""Indentation as the fuzzy matchers see it: the shape of a block (levels relative to its first
line, tabs counting as one level), re-indenting new text from one block's indentation to
another's in the file's unit (tabs or N spaces), fitting new text line by line when the
file's block is not the old one shifted (``fit``), and putting back the file's own text for the
lines the new text left as they were (``keep_unchanged``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from difflib import SequenceMatcher

from rapidfuzz import fuzz

#: An oldString line rewritten one for one into a file line is the same line (a typo, another
#: name) when at least this similar (0-100); else they are two different lines.
SAME_LINE_SIMILARITY = 80.0


def _leading(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _widths(lines: list[str]) -> set[int]:
    """The indentation widths of non-blank ``lines`` in spaces (tabs are left out: one level each)."""
    return {len(_leading(line).replace("\t", "")) for line in lines if line.strip()}


def _unit(lines: list[str]) -> int:
    """Spaces per indentation level among ``lines`` (tabs are one level); 4 when nothing says."""
    widths = _widths(lines)
    steps = sorted({abs(a - b) for a in widths for b in widths if a != b})
    return steps[0] if steps else 4


def _level(indent: str, unit: int) -> tuple[int, int]:
    """(levels, leftover spaces) of an indentation, tabs counting as one level each."""
    spaces = len(indent.replace("\t", ""))
    return indent.count("\t") + spaces // unit, spaces % unit


def _levels(lines: list[str]) -> list[int]:
    """Levels of non-blank ``lines`` relative to the first, in their own unit."""
    unit = _unit(lines)
    levels = [_level(_leading(line), unit)[0] for line in lines]
    return [level - levels[0] for level in levels]


def shape(lines: list[str]) -> list[tuple[int, str]]:
    """Indentation relative to the first non-blank line, with the stripped text."""
    real = [line for line in lines if line.strip()]
    return list(zip(_levels(real), (line.strip() for line in real), strict=True)) if real else []


def reindent(new: str, old: str, matched: str) -> str:
    """``new`` moved from ``old``'s indentation to ``matched``'s (levels kept, the file's unit used)."""
    old_lines = [line for line in old.split("\n") if line.strip()]
    file_lines = [line for line in matched.split("\n") if line.strip()]
    if not old_lines or not file_lines:
        return new
    old_base, file_base = _leading(old_lines[0]), _leading(file_lines[0])
    old_unit, file_unit = _model_unit(old_lines, new), _unit(file_lines)
    file_tabs = "\t" in "".join(_leading(line) for line in file_lines)
    if old_base == file_base and ("\t" in "".join(_leading(line) for line in old_lines)) == file_tabs:
        return new
    base_level, base_rest = _level(file_base, file_unit)
    old_level, old_rest = _level(old_base, old_unit)
    out: list[str] = []
    for line in new.split("\n"):
        if not line.strip():
            out.append(line)
            continue
        level, rest = _level(_leading(line), old_unit)
        target = max(0, base_level + level - old_level)
        spaces = max(0, base_rest + rest - old_rest)
        indent = "\t" * target if file_tabs else " " * (file_unit * target)
        out.append(indent + " " * spaces + line.lstrip(" \t"))
    return "\n".join(out)


def _model_unit(old: list[str], new: str) -> int:
    """The model's unit: from ``old``'s lines when they sit at two depths or more; else (one depth
    tells nothing, and the 4-space default put a newString nesting deeper in 8 or 2 spaces at the
    wrong levels) from ``new``'s lines too. ``old`` alone when it can tell, since an aligned
    continuation line in ``new`` (7 spaces among 4 and 8) would make every space a level."""
    return _unit(old if len(_widths(old)) > 1 else old + new.split("\n"))


class Unfitted(Exception):
    """No depth in the file that the old/file line pairs justify for the new line ``line``."""

    def __init__(self, line: str) -> None:
        super().__init__(line)
        self.line = line


def fit(new: str, old: str, matched: str) -> str:
    """``new`` indented for the file where ``old`` matched the lines ``matched``: moved by one
    offset when ``matched`` is ``old`` shifted (``reindent``), else line by line (``_mapped``)."""
    old_lines, file_lines = old.split("\n"), matched.split("\n")
    if len(old_lines) == len(file_lines) and _same_steps(old_lines, file_lines):
        return reindent(new, old, matched)
    pairs = _pairs(old_lines, file_lines)
    if _levels([old_lines[i] for i, _ in pairs]) == _levels([file_lines[j] for _, j in pairs]):
        return reindent(new, old, matched)
    return _mapped(new.split("\n"), old_lines, file_lines, pairs)


def _same_steps(old: list[str], file: list[str]) -> bool:
    """Whether each non-blank ``file`` line is indented as its ``old`` line with the first one's
    base swapped for the file's (the usual shift, told without counting levels)."""
    bases: tuple[str, str] | None = None
    for a, b in zip(old, file, strict=True):
        i, j = len(a) - len(a.lstrip(" \t")), len(b) - len(b.lstrip(" \t"))
        if i == len(a) or j == len(b):
            continue
        if bases is None:
            bases = a[:i], b[:j]
        elif not (
            a.startswith(bases[0]) and b.startswith(bases[1]) and a[len(bases[0]) : i] == b[len(bases[1]) : j]
        ):
            return False
    return True


def _stripped(lines: list[str]) -> list[str]:
    return [line.strip() for line in lines]


def _pairs(old: list[str], file: list[str]) -> list[tuple[int, int]]:
    """(old line, file line) indexes telling where each old line is in the file: line for line
    when they are as many, else the lines equal once stripped. Blank lines tell nothing."""
    if len(old) == len(file):
        pairs = [(i, i) for i in range(len(old))]
    else:
        blocks = SequenceMatcher(None, _stripped(old), _stripped(file), autojunk=False).get_matching_blocks()
        pairs = [(a + k, b + k) for a, b, size in blocks for k in range(size)]
    return [(i, j) for i, j in pairs if old[i].strip() and file[j].strip()]


def _mapped(new: list[str], old: list[str], file: list[str], pairs: list[tuple[int, int]]) -> str:
    """``new`` with each line at the file indentation the old/file pairs give it, or ``Unfitted``.

    ``old`` and ``new`` are the model's; their depths are widths in one unit (a tab is a level).
    A new line gets, in this order: the file indentation of the old line it keeps or rewrites
    when indented like it; the one file indentation of all old lines indented like it; when old
    lines indented like it sit at several depths, that of its nearest siblings (lines as deep,
    before and after it, with nothing shallower between), if they agree; when no old line is
    indented like it, that of the nearest line above it at most as deep, plus the difference.
    """
    unit = _unit([line for line in old + new if line.strip()])

    def width(line: str) -> int:
        levels, rest = _level(_leading(line), unit)
        return levels * unit + rest

    file_of = {i: _leading(file[j]) for i, j in pairs}
    depths: dict[int, set[str]] = {}  # an old width -> the file indentations of old lines that wide
    for i, indent in file_of.items():
        depths.setdefault(width(old[i]), set()).add(indent)
    at: dict[int, str] = {}  # a new line -> its file indentation
    for k, olds in _counterparts(old, new):
        here = {file_of[i] for i in olds if i in file_of and width(old[i]) == width(new[k])}
        if new[k].strip() and len(here) == 1:
            at[k] = here.pop()
    for k, line in enumerate(new):
        if k not in at and line.strip() and len(depths.get(width(line), ())) == 1:
            at[k] = next(iter(depths[width(line)]))
    step = _stepper([file[j] for _, j in pairs], unit)
    for k, line in enumerate(new):
        if k in at or not line.strip():
            continue
        w = width(line)
        if w in depths:
            sides = {
                _sibling(new, at, range(k - 1, -1, -1), w, width),
                _sibling(new, at, range(k + 1, len(new)), w, width),
            }
            if len(sides) != 1 or None in sides:
                raise Unfitted(line)
            at[k] = sides.pop() or ""
            continue
        above = next((p for p in range(k - 1, -1, -1) if new[p].strip() and width(new[p]) <= w), None)
        if above is None:
            raise Unfitted(line)
        at[k] = at[above] + step(w - width(new[above]))
    return "\n".join(at[k] + line.lstrip(" \t") if k in at else line for k, line in enumerate(new))


def keep_unchanged(fitted: str, old: str, new: str, matched: str) -> str:
    """``fitted`` (``new`` indented for the file) with each line that ``new`` keeps exactly as it
    is in ``old`` replaced by the file's line that ``old``'s line matched: a fuzzy match must not
    overwrite a line the model did not change with its imperfect copy of it (another name, tabs
    for spaces, doubled or trailing spaces). Lines the model changed stay the model's."""
    old_lines, new_lines, file_lines = old.split("\n"), new.split("\n"), matched.split("\n")
    out = fitted.split("\n")
    in_file = same_lines(old_lines, file_lines)
    for k, olds in _counterparts(old_lines, new_lines):
        if len(olds) == 1 and new_lines[k] == old_lines[olds[0]] and olds[0] in in_file:
            out[k] = file_lines[in_file[olds[0]]]
    return "\n".join(out)


def same_lines(old: list[str], file: list[str]) -> dict[int, int]:
    """Old line -> the file line that is the same line, but for the model's sloppiness: equal
    once whitespace is collapsed, or rewritten one for one and similar. Not by position alone: a
    matcher's block may pair an old line with a different file line (``if x:`` for ``store()``).

    Lines are also paired at the same depth first (the rank of their indentation among their
    block's: two spaces or a tab per level alike), so that of two equal lines, ``}`` closing an
    inner block and ``}`` closing the outer one, each pairs with its own; what that leaves is
    paired whitespace aside, where it keeps the order of the pairs around it. That pairing is
    taken unless it pairs fewer lines (``old`` indented otherwise than the file, or not at all)."""
    a, b = [" ".join(line.split()) for line in old], [" ".join(line.split()) for line in file]
    loose = _paired(a, b)
    pairs = _paired(a, b, (_depths(old, a), _depths(file, b)))
    for i, j in sorted(loose.items()):
        if i in pairs or j in pairs.values():
            continue
        before = max((k for k in pairs if k < i), default=None)
        after = min((k for k in pairs if k > i), default=None)
        if (before is None or pairs[before] < j) and (after is None or pairs[after] > j):
            pairs[i] = j
    return pairs if len(pairs) >= len(loose) else loose


def _depths(lines: list[str], collapsed: list[str]) -> list[int]:
    """Each line's depth in the block: the rank of its indentation (-1 for a blank line)."""
    widths = [len(_leading(line).expandtabs(4)) for line in lines]
    used = sorted({w for w, c in zip(widths, collapsed, strict=True) if c})
    ranks = {w: rank for rank, w in enumerate(used)}
    return [ranks[w] if c else -1 for w, c in zip(widths, collapsed, strict=True)]


def _paired(a: list[str], b: list[str], depths: tuple[list[int], list[int]] | None = None) -> dict[int, int]:
    """Old line -> file line where the collapsed lines ``a`` and ``b`` (at equal ``depths``, when
    given) align: equal, or rewritten one for one and similar."""
    x, y = (list(zip(depths[0], a, strict=True)), list(zip(depths[1], b, strict=True))) if depths else (a, b)
    pairs: dict[int, int] = {}
    for tag, a1, a2, b1, b2 in SequenceMatcher(None, x, y, autojunk=False).get_opcodes():
        if tag == "equal" or (tag == "replace" and a2 - a1 == b2 - b1):
            for i, j in zip(range(a1, a2), range(b1, b2), strict=True):
                same_depth = depths is None or depths[0][i] == depths[1][j]
                if x[i] == y[j] or (same_depth and a[i] and fuzz.ratio(a[i], b[j]) >= SAME_LINE_SIMILARITY):
                    pairs[i] = j
    return pairs


def _counterparts(old: list[str], new: list[str]) -> Iterator[tuple[int, list[int]]]:
    """(new line, the old lines it stands for): its own where lines are kept or rewritten one for
    one, all of a run of old lines rewritten into a different number of lines."""
    ops = SequenceMatcher(None, _stripped(old), _stripped(new), autojunk=False).get_opcodes()
    for tag, a1, a2, b1, b2 in ops:
        if tag == "equal" or (tag == "replace" and a2 - a1 == b2 - b1):
            yield from ((b1 + k, [a1 + k]) for k in range(b2 - b1))
        elif tag == "replace":
            yield from ((k, list(range(a1, a2))) for k in range(b1, b2))


def _sibling(
    new: list[str], at: dict[int, str], order: range, w: int, width: Callable[[str], int]
) -> str | None:
    """The file indentation of the nearest placed line ``w`` wide in ``order``, not past a
    shallower line."""
    for k in order:
        if not new[k].strip() or width(new[k]) > w:
            continue
        if width(new[k]) < w:
            return None
        if k in at:
            return at[k]
    return None


def _stepper(file: list[str], unit: int) -> Callable[[int], str]:
    """Turns a width in the model's ``unit`` into indentation in the file's (tabs or N spaces)."""
    tabs, file_unit = any("\t" in _leading(line) for line in file), _unit(file)

    def step(extra: int) -> str:
        levels, rest = divmod(extra, unit)
        return ("\t" * levels if tabs else " " * (file_unit * levels)) + " " * rest

    return step


def core(text: str) -> str:
    """``text`` without its leading blank lines and trailing whitespace (its first line keeps its
    indentation)."""
    text = text.rstrip()
    return text[text.rfind("\n", 0, len(text) - len(text.lstrip())) + 1 :]
