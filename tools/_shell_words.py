"""Shell words as the analysis sees them: the text as written, and the value once quoting is gone.

``"rm"``, ``'rm'`` and ``r\\m`` all have the value ``rm``; ``$HOME/x`` or ``$(pwd)`` have none (only
known at run time). Unquoted ``* ? [ {`` mark a word the shell expands as a glob or brace.
"""

from __future__ import annotations

import codecs
import re
import shlex
from dataclasses import dataclass
from functools import cached_property

from tree_sitter import Node

_PLAIN = re.compile(r"[\w@%+=:,./^~-]+")  # words shown without quotes
SPECIAL = re.compile(r"[*?\[{]")


@dataclass(frozen=True)
class Word:
    raw: str  # as written
    value: str | None  # quoting removed; None when only known at run time
    glob: bool = False  # unquoted * ? [ { the shell expands
    tilde: bool = False

    @cached_property
    def shown(self) -> str:
        """Canonical text: quoting normalised, so ``"rm"`` and ``r\\m`` both read ``rm``."""
        if self.value is None or self.glob or self.tilde:
            return self.raw
        if self.value == "{}" or (_PLAIN.fullmatch(self.value) and not self.value.startswith("~")):
            return self.value
        return shlex.quote(self.value)


def _unquote(text: str) -> tuple[str, bool]:
    if "\\" not in text:
        return text, SPECIAL.search(text) is not None
    out: list[str] = []
    glob = False
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            out.append("" if text[index + 1] == "\n" else text[index + 1])
            index += 2
            continue
        glob = glob or char in "*?[{"
        out.append(char)
        index += 1
    return "".join(out), glob


def _static(node: Node) -> tuple[str | None, bool]:
    """The node's value with quoting removed, and whether it holds an unquoted glob or brace."""
    text = (node.text or b"").decode(errors="replace")
    kind = node.type
    if kind == "word":
        return _unquote(text)
    if kind == "number":
        return text, False
    if kind == "raw_string":
        return text[1:-1], False
    if kind == "ansi_c_string":
        body = text[2:-1]
        return (codecs.decode(body, "unicode_escape") if body.isascii() else None), False
    if kind in ("string", "translated_string"):
        if any(child.type == "$" for child in node.children):
            return None, False
        parts = node.named_children
        if any(part.type != "string_content" for part in parts):
            return None, False
        content = "".join((part.text or b"").decode(errors="replace") for part in parts)
        return re.sub(r'\\([$`"\\\n])', lambda m: "" if m[1] == "\n" else m[1], content), False
    if kind == "concatenation":
        values: list[str] = []
        glob = False
        for child in node.children:
            value, child_glob = _static(child) if child.is_named else ((child.text or b"").decode(), False)
            if value is None:
                return None, False
            values.append(value)
            glob = glob or child_glob
        return "".join(values), glob
    if kind == "brace_expression":
        return text, True
    return None, False


def word(node: Node) -> Word:
    raw = (node.text or b"").decode(errors="replace")
    value, glob = _static(node)
    return Word(raw, value, glob, node.type in ("word", "concatenation") and raw.startswith("~"))
