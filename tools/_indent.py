"""Indentation as the fuzzy matchers see it: the shape of a block (levels relative to its first
line, tabs counting as one level) and re-indenting new text from one block's indentation to
another's, in the file's unit (tabs or N spaces)."""

from __future__ import annotations


def _leading(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _unit(lines: list[str]) -> int:
    """Spaces per indentation level among ``lines`` (tabs are one level); 4 when nothing says."""
    widths = {len(_leading(line).replace("\t", "")) for line in lines if line.strip()}
    steps = sorted({abs(a - b) for a in widths for b in widths if a != b})
    return steps[0] if steps else 4


def _level(indent: str, unit: int) -> tuple[int, int]:
    """(levels, leftover spaces) of an indentation, tabs counting as one level each."""
    spaces = len(indent.replace("\t", ""))
    return indent.count("\t") + spaces // unit, spaces % unit


def shape(lines: list[str]) -> list[tuple[int, str]]:
    """Indentation relative to the first non-blank line, with the stripped text."""
    real = [line for line in lines if line.strip()]
    if not real:
        return []
    unit = _unit(real)
    base, _ = _level(_leading(real[0]), unit)
    return [(_level(_leading(line), unit)[0] - base, line.strip()) for line in real]


def reindent(new: str, old: str, matched: str) -> str:
    """``new`` moved from ``old``'s indentation to ``matched``'s (levels kept, the file's unit used)."""
    old_lines = [line for line in old.split("\n") if line.strip()]
    file_lines = [line for line in matched.split("\n") if line.strip()]
    if not old_lines or not file_lines:
        return new
    old_base, file_base = _leading(old_lines[0]), _leading(file_lines[0])
    old_unit, file_unit = _unit(old_lines), _unit(file_lines)
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


def core(text: str) -> str:
    """``text`` without its leading blank lines and trailing whitespace (its first line keeps its
    indentation)."""
    text = text.rstrip()
    return text[text.rfind("\n", 0, len(text) - len(text.lstrip())) + 1 :]
