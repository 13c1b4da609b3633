"""Glob patterns as regular expressions: the syntax LSP file watchers and gitignore-style tools share.

``*`` and ``?`` stay inside one path segment, ``**`` crosses segments (``**/`` also matches no
folder at all), ``[...]`` is a class (``[!...]`` negated), ``{a,b}`` an alternative.
"""

from __future__ import annotations

import re
from functools import lru_cache


def glob_pattern(glob: str) -> str:
    """The regex text (unanchored) matching what ``glob`` matches in a ``/``-separated path."""
    out: list[str] = []
    i = 0
    while i < len(glob):
        char = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if glob.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (end := glob.find("]", i + 2)) != -1:
            body = glob[i + 1 : end]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body).replace("\\", "\\\\") + "]")
            i = end
        elif char == "{" and (end := glob.find("}", i)) != -1:
            out.append("(?:" + "|".join(glob_pattern(alt) for alt in glob[i + 1 : end].split(",")) + ")")
            i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


@lru_cache(maxsize=256)
def glob_regex(glob: str) -> re.Pattern[str]:
    """``glob`` compiled to match a whole path (use ``.match``)."""
    return re.compile(glob_pattern(glob) + r"\Z")
