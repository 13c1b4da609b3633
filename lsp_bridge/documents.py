"""The document store: the text every server sees, its version, and what overrides the disk.

One store serves all servers. Versions only grow. A document's text comes from disk unless an
overlay (an editor's unsaved buffer) is set. Documents that nobody pinned are closed in LRU
order beyond a cap.

A UTF-8 BOM is not part of a document's text, as editors hide it: basedpyright and clangd count
one they are sent as a column of the first line. Files they read from disk themselves keep it
for them: ``DiskLines.has_bom`` tells which, so their first-line columns can be moved back.
"""

from __future__ import annotations

import logging
import os
import stat
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from .errors import FileUnreadable

log = logging.getLogger(__name__)

BINARY_SNIFF = 8192
BOM = "\ufeff"


@dataclass
class Document:
    path: Path
    uri: str
    text: str
    version: int
    overlay: bool = False
    pins: int = 0
    _lines: tuple[str, list[str]] | None = field(default=None, repr=False, compare=False)

    @property
    def lines(self) -> list[str]:
        """``text`` split as LSP counts lines, kept until the text changes (do not modify)."""
        if self._lines is None or self._lines[0] is not self.text:
            self._lines = (self.text, lsp_lines(self.text))
        return self._lines[1]


def uri_to_path(uri: str) -> Path:
    """The path of a ``file:`` URI; a percent-encoded name that is not UTF-8 (``caf%E9.py``)
    keeps its bytes, as ``os.fsdecode`` would, instead of becoming a U+FFFD that names no file.

    basedpyright takes such a name for the text ``caf%E9.py`` and sends it back encoded again
    (``caf%25E9.py``): a name with ``%`` that no file has is decoded once more when that names one."""
    path = Path(unquote(urlparse(uri).path, errors="surrogateescape"))
    if "%25" in uri and not path.exists():
        twice = Path(unquote(str(path), errors="surrogateescape"))
        if twice.exists():
            return twice
    return path


def normal_uri(uri: str) -> str:
    """A file URI as ``Path.as_uri`` (and so the bridge) writes it: servers percent-encode their
    own way (clangd leaves ``:`` as it is, which ``as_uri`` writes ``%3A``)."""
    return uri_to_path(uri).as_uri() if uri.startswith("file:") else uri


def read_text(path: Path) -> str:
    """A source file's text; FileUnreadable for whatever cannot be: missing, unreadable, a folder,
    a FIFO or device (opened without blocking, so a FIFO does not stall the event loop), binary.
    A leading BOM is left out (see the module's docstring)."""
    try:
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC), "rb") as file:
            mode = os.fstat(file.fileno()).st_mode
            if stat.S_ISDIR(mode):
                raise FileUnreadable(f"{path} is a directory, not a file")
            if not stat.S_ISREG(mode):
                raise FileUnreadable(f"{path} is not a regular file (a FIFO, socket or device)")
            data = file.read()
    except FileNotFoundError:
        raise FileUnreadable(f"file not found: {path}") from None
    except OSError as error:
        raise FileUnreadable(f"cannot read {path}: {error.strerror or error}") from None
    if b"\0" in data[:BINARY_SNIFF]:
        raise FileUnreadable(f"{path} is a binary file; language servers only read text")
    return data.decode("utf-8", errors="replace").removeprefix(BOM)


class DocumentStore:
    def __init__(self, max_open: int) -> None:
        self.max_open = max_open
        self._docs: OrderedDict[Path, Document] = OrderedDict()
        self._version = 0

    def _next_version(self) -> int:
        self._version += 1
        return self._version

    @property
    def latest_version(self) -> int:
        """The newest version handed out: unchanged means no document changed."""
        return self._version

    def get(self, path: Path) -> Document | None:
        return self._docs.get(path)

    def __iter__(self) -> Iterator[Document]:
        return iter(list(self._docs.values()))

    def load(self, path: Path) -> Document:
        """The document for ``path``, read from disk the first time; marks it recently used."""
        doc = self._docs.get(path)
        if doc is None:
            doc = Document(path, path.as_uri(), read_text(path), self._next_version())
            self._docs[path] = doc
        self._docs.move_to_end(path)
        return doc

    def set_overlay(self, path: Path, text: str) -> Document:
        text = text.removeprefix(BOM)
        doc = self._docs.get(path)
        if doc is None:
            doc = Document(path, path.as_uri(), text, self._next_version(), overlay=True)
            self._docs[path] = doc
        elif doc.text != text or not doc.overlay:
            doc.text, doc.overlay, doc.version = text, True, self._next_version()
        self._docs.move_to_end(path)
        return doc

    def touch(self, path: Path) -> Document:
        """A new version of the (known) document with the same text: sent to a server, it makes
        the server check the document again."""
        doc = self._docs[path]
        doc.version = self._next_version()
        return doc

    def clear_overlay(self, path: Path) -> None:
        doc = self._docs.get(path)
        if doc is not None and doc.overlay:
            doc.overlay = False
            self.refresh_from_disk(path)

    def refresh_from_disk(self, path: Path) -> Document | None:
        """Re-read a known, non-overlaid document; returns it if its text changed.

        A deleted file is dropped from the store (callers close it in the servers).
        """
        doc = self._docs.get(path)
        if doc is None or doc.overlay:
            return None
        try:
            text = read_text(path)
        except FileUnreadable:
            del self._docs[path]
            doc.version = -1
            return doc
        if text == doc.text:
            return None
        doc.text, doc.version = text, self._next_version()
        return doc

    def pin(self, path: Path) -> Document:
        doc = self.load(path)
        doc.pins += 1
        return doc

    def unpin(self, path: Path) -> None:
        doc = self._docs.get(path)
        if doc is not None and doc.pins > 0:
            doc.pins -= 1
            if doc.pins == 0:
                self.clear_overlay(path)

    def evict(self) -> list[Document]:
        """Drop least recently used unpinned documents beyond the cap; return them."""
        evicted: list[Document] = []
        excess = len(self._docs) - self.max_open
        if excess <= 0:
            return evicted
        for doc in list(self._docs.values()):
            if excess <= 0:
                break
            if doc.pins == 0:
                del self._docs[doc.path]
                evicted.append(doc)
                excess -= 1
        return evicted


class DiskLines:
    """Lines of files on disk that no server has open (the source beside each location of an
    answer), kept until the watcher reports the file changed (``forget``); a file in a folder
    no watcher covers is checked by its mtime and size on every use. Keyed by the path's text:
    an answer can name hundreds of files, and str hashes in C."""

    def __init__(self, cap: int = 2000) -> None:
        self.cap = cap
        #: path text -> (watched, mtime_ns, size, lines)
        self._files: OrderedDict[str, tuple[bool, int, int, list[str]]] = OrderedDict()
        self._bom: set[str] = set()  # the files read whose text starts with a BOM (not in lines)
        #: ``by_uri``'s answers: URI -> (lines, starts with a BOM), for watched files only.
        self.uris: dict[str, tuple[list[str], bool]] = {}

    def get(self, name: str, covers: Callable[[str], bool]) -> list[str]:
        """The lines of the file ``name`` (none when it cannot be read); ``covers(folder)``
        says whether a watcher reports changes in ``folder``."""
        known = self._files.get(name)
        if known is not None and known[0]:
            return known[3]
        try:
            found = os.stat(name)
        except OSError:
            return []
        if not stat.S_ISREG(found.st_mode):  # opening a FIFO would block
            return []
        if known is not None and known[1] == found.st_mtime_ns and known[2] == found.st_size:
            return known[3]
        watched = covers(os.path.dirname(name))  # before the read: a change after it is reported
        try:
            with open(name, "rb") as file:
                text = file.read().decode(errors="replace")
        except OSError:
            return []
        if text.startswith(BOM):
            self._bom.add(name)
            text = text[1:]
        else:
            self._bom.discard(name)
        lines = lsp_lines(text)
        self._files[name] = (watched, found.st_mtime_ns, found.st_size, lines)
        self._files.move_to_end(name)
        if len(self._files) > self.cap:
            self._files.popitem(last=False)
        return lines

    def has_bom(self, name: str, covers: Callable[[str], bool]) -> bool:
        """Whether the file ``name`` starts with a BOM (which its lines leave out)."""
        self.get(name, covers)
        return name in self._bom

    def by_uri(self, uri: str, name: str, covers: Callable[[str], bool]) -> tuple[list[str], bool]:
        """``get`` and ``has_bom`` of the file ``name`` at ``uri``. An answer names hundreds of
        files, each by URI: a watched file's are kept in ``uris`` (by the URI as ``Path.as_uri``
        writes it, the form documents have), so a dict lookup is all the next answers pay, until
        any file changes."""
        known = self.uris.get(uri)
        if known is not None:
            return known
        found = (self.get(name, covers), name in self._bom)
        entry = self._files.get(name)
        if entry is not None and entry[0] and uri == Path(name).as_uri():
            if len(self.uris) >= self.cap:
                self.uris.clear()
            self.uris[uri] = found
        return found

    def forget(self, path: Path, folder_too: bool) -> None:
        """``path`` changed; with ``folder_too`` it may have been a folder: everything under it."""
        self.uris.clear()  # rebuilt by the next answers: cheaper than finding the path's URIs
        name = str(path)
        self._files.pop(name, None)
        if folder_too:
            inside = name.rstrip(os.sep) + os.sep
            for key in [k for k in self._files if k.startswith(inside)]:
                del self._files[key]

    def clear(self) -> None:
        self._files.clear()
        self.uris.clear()


def lsp_lines(text: str) -> list[str]:
    """``text``'s lines as LSP numbers them: split at \\n, \\r\\n and \\r only (``str.splitlines``
    also splits at form feeds, \\x1c-\\x1e, \\x85 and \\u2028/9, which shifts every later line)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if not lines[-1]:  # a final line break ends the last line; it does not start another
        lines.pop()
    return lines


def to_utf16(line: str, column: int) -> int:
    """A 0-based code point column on ``line`` as LSP's UTF-16 column."""
    return utf16_length(line[:column])


def from_utf16(line: str, units: int) -> int:
    """An LSP UTF-16 column as a 0-based code point column."""
    if line.isascii():
        return min(units, len(line))
    seen = 0
    for index, char in enumerate(line):
        if seen >= units:
            return index
        seen += 2 if ord(char) > 0xFFFF else 1
    return len(line)


def utf16_length(text: str) -> int:
    """``text``'s length in UTF-16 code units. A lone surrogate (text decoded with
    surrogateescape, or sent so by an editor) is one unit, as servers count it once JSON has
    carried it as a ``\\udcxx`` escape (a strict encode raised UnicodeEncodeError)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def utf16_position(text: str, offset: int) -> dict[str, int]:
    """The LSP position (lines end at \\r\\n, \\r or \\n; UTF-16 columns) of a string offset
    (not inside a \\r\\n pair), as JSON."""
    head = text[:offset]
    line, line_start = head.count("\n"), head.rfind("\n") + 1
    if "\r" in head:
        line += head.count("\r") - head.count("\r\n")
        line_start = max(line_start, head.rfind("\r") + 1)
    segment = head[line_start:]
    return {"line": line, "character": utf16_length(segment)}


def incremental_change(old: str, new: str) -> dict[str, Any]:
    """One ranged change turning ``old`` into ``new`` (common prefix and suffix kept), as the
    JSON of a ``TextDocumentContentChangePartial``."""
    start = _common_length(old, new, lambda a, n: a[:n])
    room = min(len(old), len(new)) - start
    tail = _common_length(old[start:], new[start:], lambda a, n: a[len(a) - n :], room)
    end_old, end_new = len(old) - tail, len(new) - tail
    # Never split a CRLF pair: a range ending between \r and \n is ambiguous to servers.
    if 0 < start < len(old) and old[start - 1] == "\r" and old[start] == "\n":
        start -= 1
    if 0 < end_old < len(old) and old[end_old - 1] == "\r" and old[end_old] == "\n":
        end_old, end_new = end_old + 1, end_new + 1
    span = {"start": utf16_position(old, start), "end": utf16_position(old, end_old)}
    return {"range": span, "text": new[start:end_new]}


def _common_length(a: str, b: str, part: Callable[[str, int], str], limit: int | None = None) -> int:
    """Length of the common prefix (or suffix) by binary search over C-speed slice compares."""
    lo, hi = 0, min(len(a), len(b)) if limit is None else limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if part(a, mid) == part(b, mid):
            lo = mid
        else:
            hi = mid - 1
    return lo
