"""Source text for the lsp tool: lines as the server saw them, column conversions, names on a line.

The model counts in characters, 1-based; LSP counts UTF-16 code units, 0-based. Everything
the model sees or sends goes through here, so the two never mix.
"""

from __future__ import annotations

import functools
import os
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types as lsp

from lsp_bridge import Bridge
from lsp_bridge.documents import from_utf16, uri_to_path

from .context import shown_path

#: Longest source line shown beside a location.
MAX_SHOWN = 160
IDENTIFIER = re.compile(r"[^\W\d]\w*|\$\w*")
#: Words that name no symbol in the languages we serve; skipped when a line is given without a column.
_KEYWORD_TEXT = """
def class return import from as async await if elif else for while with try except finally raise
pass lambda yield not and or in is None True False self cls function const let var new export
default interface type extends implements public private protected readonly static constructor
this typeof void null undefined int char long short unsigned signed float double bool struct enum
union typedef include define ifndef endif sizeof
"""
KEYWORDS = frozenset(_KEYWORD_TEXT.split())


@dataclass(frozen=True)
class Name:
    """An identifier on a line: its 0-based code point column and its text."""

    column: int
    text: str

    @property
    def end(self) -> int:
        return self.column + len(self.text)


def names_on(line: str) -> list[Name]:
    if line.isascii():
        return [Name(m.start(), m.group()) for m in IDENTIFIER.finditer(line)]
    return _unicode_names(line)


def _unicode_names(line: str) -> list[Name]:
    """Names as the languages read them: ``\\w`` stops at a combining mark (``café`` written
    e + U+0301, as macOS decomposes text) or a joiner, which continue an identifier."""
    found: list[Name] = []
    i, end = 0, len(line)
    while i < end:
        if line[i] == "$" or line[i].isidentifier():
            j = i + 1
            while j < end and (line[j] == "$" or f"a{line[j]}".isidentifier()):
                j += 1
            found.append(Name(i, line[i:j]))
            i = j
        else:
            i += 1
    return found


def name_at(line: str, column: int) -> Name | None:
    """The name ``column`` (0-based) is on, or just after."""
    if line.isascii():  # the usual case, on the way to every request at a column
        for m in IDENTIFIER.finditer(line):
            if m.start() > column:
                return None
            if column <= m.end():
                return Name(m.start(), m.group())
        return None
    for name in _unicode_names(line):
        if name.column > column:
            return None
        if column <= name.end:
            return name
    return None


def same_name(name: str) -> str:
    """``name`` as the languages compare it: NFKC (Python normalizes identifiers so; ``café``
    typed as é and written as e + U+0301 are one name to a reader, and to a model)."""
    return name if name.isascii() else unicodedata.normalize("NFKC", name)


def in_editor(bridge: Bridge, path: Path) -> bool:
    """Whether an editor holds ``path``'s text in the bridge (serve mode), maybe a new file not
    saved yet: the servers are sent that text, so it can be asked about."""
    doc = bridge.documents.get(path)
    return doc is not None and doc.overlay


def shown(line: str) -> str:
    text = line.strip()
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "..."


@dataclass
class Sources:
    """Lines of the files an answer mentions (the server's open text when it has one, so an
    editor's unsaved buffer matches its positions), and workspace-relative naming (URIs and
    relative paths are cached across answers: they are pure functions of their inputs)."""

    root: Path
    bridge: Bridge
    #: Whether the read rules deny a file (by its ``relative`` text): its results are left out,
    #: so the lsp tool shows no more of it than read would. None: no rule denies anything.
    hidden: Callable[[str], bool] | None = None
    #: How many results were left out for ``hidden``.
    left_out: int = 0
    #: The names written in the files ``hidden`` denies (``_lsp_read_rules.denied_names``), once read.
    denied: frozenset[str] | None = None
    _lines: dict[Path, list[str]] = field(default_factory=dict[Path, list[str]])
    _names: dict[str, tuple[str, Path]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.bridge.look_at_disk()  # lines read before the first request are current too
        self._names = _NAMES.setdefault(self.root, {})

    def lines(self, path: Path) -> list[str]:
        cached = self._lines.get(path)
        if cached is None:
            cached = self._lines[path] = self.bridge.source_lines(path)
        return cached

    def files(self, uris: list[str]) -> dict[str, tuple[str, list[str]]]:
        """Each URI's ``relative`` text and its lines as the servers saw them when they answered,
        for files read once in this answer (not kept, unlike ``lines``: no Path is hashed)."""
        named = [self.named(uri) for uri in uris]
        lines = self.bridge.source_files([(uri, path) for uri, (_, path) in zip(uris, named, strict=True)])
        return {uri: (relative, text) for uri, (relative, _), text in zip(uris, named, lines, strict=True)}

    def line(self, path: Path, number: int) -> str:
        """Line ``number`` (0-based) of ``path``, or "" past the end."""
        lines = self.lines(path)
        return lines[number] if 0 <= number < len(lines) else ""

    def column(self, path: Path, pos: lsp.Position) -> int:
        """The 1-based character column of an LSP position; the server's own where the line is
        not known (a file that cannot be read, a line past its end)."""
        lines = self.lines(path)
        if 0 <= pos.line < len(lines):
            return from_utf16(lines[pos.line], pos.character) + 1
        return pos.character + 1

    def canonical(self, path: Path) -> Path:
        """``path`` itself, or the file it reaches through symlinks when that is in the
        workspace: one declaration reached by two names (``link.py -> pkg/calc.py``) is one."""
        return _canonical(self.root, path)

    def relative(self, path: Path) -> str:
        """Workspace-relative text for paths inside the root, absolute text for the rest."""
        return _relative(self.root, path)

    def shows(self, path: Path) -> bool:
        """False (and counted) for a file whose results are left out."""
        return self.hidden is None or self._shows(self.hidden, self.relative(path))

    def shows_uri(self, uri: str) -> bool:
        return self.hidden is None or self._shows(self.hidden, self.named(uri)[0])

    def _shows(self, hidden: Callable[[str], bool], relative: str) -> bool:
        if not hidden(relative):
            return True
        self.left_out += 1
        return False

    def named(self, uri: str) -> tuple[str, Path]:
        """A URI's ``relative`` text and its path."""
        named = self._names.get(uri)  # by the URI alone: no Path hashed
        if named is None:
            if len(self._names) >= _KEPT:
                self._names.clear()
            path = _uri_path(uri)
            named = self._names[uri] = (_relative(self.root, path), path)
        return named


_KEPT = 1 << 16


#: ``Sources.named`` answers by workspace root, then URI (pure functions of the two).
_NAMES: dict[Path, dict[str, tuple[str, Path]]] = {}


@functools.lru_cache(maxsize=_KEPT)
def _uri_path(uri: str) -> Path:
    return uri_to_path(uri)


@functools.lru_cache(maxsize=_KEPT)
def _canonical(root: Path, path: Path) -> Path:
    real = Path(os.path.realpath(path))
    return real if real != path and root in real.parents else path


@functools.lru_cache(maxsize=_KEPT)
def _relative(root: Path, path: Path) -> str:
    """As ``ToolContext.relative`` names it (the read rules see that text): bytes of a name that
    are not UTF-8 as ``\\xNN``."""
    text = os.path.relpath(path, root) if path == root or root in path.parents else str(path)
    return text if text.isascii() else shown_path(text)
