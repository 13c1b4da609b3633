"""A text file as the edit tools change it, keeping what the model never sees: the encoding, the
BOM and the line endings of every line it does not touch.

Matching works on ``body`` (``\\n`` line endings, no BOM). Replacements are given in body offsets
and land in ``raw`` (the exact decoded text), new lines getting the file's usual line ending.
"""

from __future__ import annotations

import codecs
import re
from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass, field

from ._match import Replacement
from .base import ToolError
from .diff import line_opcodes

BOM = "\ufeff"
_NAMES = {"latin-1": "Latin-1"}
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


def looks_binary(data: bytes) -> bool:
    """NUL bytes in the first 8 KB of a file without a UTF-16 BOM."""
    return b"\0" in data[:8192] and not data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))


def decode(data: bytes) -> tuple[str, str]:
    """(text, encoding): a BOM stays in the text as U+FEFF, so encoding it again writes it back;
    bytes that are not UTF-8 (nor in the encoding their BOM names: a cut-off UTF-16 file, a
    stray Latin-1 byte after a UTF-8 BOM) are read as Latin-1, which gives every byte back
    unchanged."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(encoding), encoding
            except UnicodeDecodeError:
                break
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"


def check_encodes(text: str, encoding: str, shown: str) -> None:
    """Refuse, before anyone is asked, new text the file's encoding cannot hold: a character
    above U+00FF in a file read as Latin-1, or a lone UTF-16 surrogate (``"\\ud800"`` in JSON),
    which no encoding writes."""
    if text.isascii():  # every encoding here holds ASCII; isascii() costs nothing
        return
    try:
        text.encode(encoding)
    except UnicodeEncodeError as error:
        code = ord(error.object[error.start])
        char = f"{chr(code)!r} (U+{code:04X}, line {error.object.count(chr(10), 0, error.start) + 1})"
        if 0xD800 <= code <= 0xDFFF:
            raise ToolError(
                f"The new text of {shown} holds a lone surrogate {char}: half of a UTF-16 pair, which "
                "no file can store. Send the character itself (a pair of \\uXXXX escapes in JSON "
                "must be a high and a low surrogate), or an escape in the file's own language. "
                "Nothing was changed."
            ) from None
        name = _NAMES.get(error.encoding, error.encoding)
        escape = f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"
        raise ToolError(
            f"{shown} is not UTF-8, so it is kept in {name}, which cannot hold {char}. Write it as "
            f"an escape in the file's own language (e.g. {escape}) or with characters {name} has, "
            "or first convert the file to UTF-8 (e.g. iconv -f latin1 -t utf-8), read it again, "
            "then edit it. Nothing was changed."
        ) from None


def normalize(text: str) -> str:
    """New text from the model with ``\\n`` line endings (a lone ``\\r`` in it is kept)."""
    return text.replace("\r\n", "\n")


def as_lines(text: str) -> str:
    """Text with every line break a ``\\n``: ``\\r\\n`` and a lone ``\\r`` too, which ends a line
    for read, the language servers and VS Code. ``body`` and ``oldString`` are compared so; a lone
    ``\\r`` becomes one ``\\n``, so body offsets still map onto the raw text."""
    text = text.replace("\r\n", "\n")
    return text.replace("\r", "\n") if "\r" in text else text


@dataclass
class FileText:
    raw: str
    encoding: str = "utf-8"
    newline: str = field(init=False)

    def __post_init__(self) -> None:
        crlf = self.raw.count("\r\n")
        lf, cr = self.raw.count("\n") - crlf, self.raw.count("\r") - crlf
        self.newline = "\r\n" if crlf and crlf >= lf and crlf >= cr else "\r" if cr > lf else "\n"

    @classmethod
    def from_bytes(cls, data: bytes) -> FileText:
        return cls(*decode(data))

    @classmethod
    def created(cls, content: str, encoding: str = "utf-8") -> FileText:
        """A new (or empty) file holding ``content``, with the line ending ``content`` uses most:
        there is no text of the file for it to follow, so a model writing a ``.bat`` or a file of
        a CRLF project with ``\r\n`` gets ``\r\n`` (changes to an existing file take that
        file's own ending instead)."""
        text = cls(content, encoding)
        text.raw = ""
        text.set_body(content)
        return text

    @property
    def bom(self) -> str:
        return BOM if self.raw.startswith(BOM) else ""

    @property
    def body(self) -> str:
        return as_lines(self.raw[len(self.bom) :])

    def _crlf_positions(self) -> list[int]:
        """Body offsets of the ``\\n`` of every ``\\r\\n`` in raw."""
        return [m.start() - n for n, m in enumerate(re.finditer("\r\n", self.raw[len(self.bom) :]))]

    def with_newlines(self, text: str) -> str:
        """``normalize``d text with the file's line ending. A lone ``\r`` before a break stays a
        break of its own: before a ``\n`` ending, the ``\n`` is written as ``\r\n``."""
        if self.newline != "\n":
            return text.replace("\n", self.newline)
        return text.replace("\r\n", "\r\r\n") if "\r\n" in text else text

    def replace(self, replacements: Iterable[Replacement]) -> None:
        """Apply non-overlapping replacements given in body offsets."""
        crlf = self._crlf_positions()
        skip = len(self.bom)

        def raw_offset(offset: int) -> int:
            return skip + offset + bisect_left(crlf, offset)

        out: list[str] = []
        at = 0
        for rep in sorted(replacements, key=lambda r: r.start):
            start, end = raw_offset(rep.start), raw_offset(rep.end)
            out += [self.raw[at:start], self._written(self.raw[start:end], normalize(rep.text))]
            at = end
        out.append(self.raw[at:])
        if any("\r" in piece for piece in out):
            _keep_breaks_apart(out)
        self.raw = "".join(out)

    def set_body(self, body: str) -> None:
        """Replace the whole text (``write``), keeping the BOM and the usual line ending (a BOM
        the new text starts with too is the same one, not a second)."""
        bom = self.bom
        self.raw = bom + self._written(
            self.raw[len(bom) :], normalize(body.removeprefix(bom) if bom else body)
        )

    def _written(self, old: str, new: str) -> str:
        """``new`` as it replaces ``old`` (raw text) in the file's usual line ending; where the file
        ends lines in several ways, the lines it keeps from ``old`` stay as they were (a patch's
        context lines, the lines of an edit's span the model did not change) and a line changed
        in place keeps its ending. Only added lines take the usual one."""
        new = self.with_newlines(new)
        others = old.replace(self.newline, "")
        if "\n" not in others and "\r" not in others:  # one ending: nothing to keep
            return new
        olds, news = _lines(old), _lines(new)
        keys = [[(line.rstrip("\r\n"), line[-1:] in ("\r", "\n")) for line in side] for side in (olds, news)]
        out: list[str] = []
        for tag, i1, i2, j1, j2 in line_opcodes(*keys):
            if tag == "equal":
                out += olds[i1:i2]
            elif tag == "replace" and i2 - i1 == j2 - j1:  # changed lines, each in its old one's ending
                out += [_ended(n, o) for o, n in zip(olds[i1:i2], news[j1:j2], strict=True)]
            else:
                out += news[j1:j2]
        _keep_breaks_apart(out)  # a kept "\n" line after a new line ending in a lone "\r"
        return "".join(out)


_BREAK = re.compile(r"\r\n|\r|\n")


def _lines(text: str) -> list[str]:
    """``text``'s lines with their endings (``\r\n``, ``\r`` or ``\n``, as ``as_lines`` counts them)."""
    lines: list[str] = []
    at = 0
    for found in _BREAK.finditer(text):
        lines.append(text[at : found.end()])
        at = found.end()
    if at < len(text):
        lines.append(text[at:])
    return lines


def _ended(line: str, like: str) -> str:
    """``line`` with ``like``'s line ending, when both have one."""
    bare, ending = line.rstrip("\r\n"), like[len(like.rstrip("\r\n")) :]
    return bare + ending if ending and bare != line else line


def _keep_breaks_apart(out: list[str]) -> None:
    """Where a piece ending in a lone ``\\r`` would meet one starting with ``\\n`` (text put
    after a lone ``\\r``, or a deletion between the two), the two breaks would read as one
    ``\\r\\n``: the ``\\n`` is written as ``\\r\\n``, which no neighbour can join."""
    left = ""  # the text so far ends as this piece does
    for index, piece in enumerate(out):
        if not piece:
            continue
        if left.endswith("\r") and piece.startswith("\n"):
            out[index] = "\r" + piece
        left = piece
