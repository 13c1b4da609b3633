"""The documents open in the editor as the daemon tracks them (``didOpen``/``didChange``), and
waiting for the editor to report an edit it applied or a buffer it moved."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from lsp_bridge.documents import BOM

log = logging.getLogger(__name__)

SETTLE_TIMEOUT = 2.0  # editors may debounce didChange (VS Code by 250 ms; Neovim by 150 ms by default)


@dataclass
class Buffers:
    """The documents open in the editor, by real path: their version and text (saved or not)."""

    open: dict[Path, tuple[int, str]] = field(default_factory=dict[Path, tuple[int, str]])
    #: The real path of a name an open document's file has: a symlink the editor opened it by
    #: is what deleting or moving it names (``EditorNames.key``).
    key: Callable[[Path], Path] = field(default=lambda path: path)
    _moved: dict[Path, asyncio.Event] = field(default_factory=dict[Path, asyncio.Event])

    def version(self, path: Path) -> int | None:
        entry = self.open.get(self.key(path))
        return entry[0] if entry else None

    def text(self, path: Path) -> str | None:
        """The buffer's text, starting with the BOM the file on disk starts with. Editors hide it
        (and write it back when they save, unless the user drops it); the tools read it as
        U+FEFF, so the buffer and the disk compare as the same text."""
        entry = self.open.get(self.key(path))
        if entry is None:
            return None
        text = entry[1]
        return BOM + text if not text.startswith(BOM) and _starts_with_bom(path) else text

    def unsaved(self, path: Path) -> str | None:
        """The buffer's text of ``path``, None when it is not open or the disk speaks for it. An
        empty buffer of a file not created yet is no file: VS Code sends it as "", Neovim as
        "\n" (its one empty line, which it writes as an empty file). A buffer that is the disk's
        text with other line endings (``endings_only``) is the file as it is on disk."""
        text = self.text(path)
        if text in ("", "\n") and not path.exists():
            return None
        return None if self.endings_only(path) else text

    def not_saved(self) -> list[Path]:
        """The open files whose buffer is not what the disk holds."""
        return [path for path in self.open if _differs(path, self.unsaved(path))]

    def endings_only(self, path: Path) -> bool:
        """Whether the open buffer of ``path`` differs from the file on disk in line endings only
        (``\\r\\n`` for ``\\n`` or back): VS Code gives the document of a file with mixed line
        endings one (the most common) when it opens it, unmodified. No user edit; the file keeps
        its own endings (Neovim's buffer holds them, so it is the disk's text as it is)."""
        text = self.text(path)
        if text is None:
            return False
        try:
            disk = path.read_bytes()
        except OSError:
            return False
        data = text.encode(errors="surrogateescape")
        return data != disk and data.replace(b"\r\n", b"\n") == disk.replace(b"\r\n", b"\n")

    def update(self, path: Path, version: int, text: str) -> None:
        """``text`` as the editor sends it (``text`` adds the file's BOM)."""
        self.open[path] = (version, text)
        self._wake(path)

    def close(self, path: Path) -> bool:
        closed = self.open.pop(path, None) is not None
        self._wake(path)
        return closed

    def _wake(self, path: Path) -> None:
        moved = self._moved.pop(self.key(path), None)
        if moved is not None:
            moved.set()

    async def arrive(self, path: Path, text: str) -> None:
        """After the editor moved a buffer to ``path``, or ``text`` was written to the file of a
        buffer that the editor reloads: wait (briefly) until it reports the buffer there holding
        ``text`` (with the line endings it gives a document), so what follows (diagnostics, the
        next edit) sees it."""
        want = text.replace("\r\n", "\n")
        try:
            async with asyncio.timeout(SETTLE_TIMEOUT):
                while (self.text(path) or "").replace("\r\n", "\n") != want:
                    await self._moved.setdefault(self.key(path), asyncio.Event()).wait()
        except TimeoutError:
            log.warning("the editor did not report %s holding its new text", path)

    async def settle(self, path: Path, version: int, text: str) -> None:
        """After the editor applied an edit: wait (briefly) for the ``didChange`` past ``version``
        that it sends, maybe debounced, so the next edit starts from the buffer's new text."""
        while (current := self.version(path)) is not None and current <= version:
            moved = self._moved.setdefault(self.key(path), asyncio.Event())
            try:
                await asyncio.wait_for(moved.wait(), SETTLE_TIMEOUT)
            except TimeoutError:
                log.warning("no didChange from the editor after an applied edit to %s", path)
                if self.key(path) in self.open:
                    self.open[self.key(path)] = (current, text)
                return


def _starts_with_bom(path: Path) -> bool:
    try:
        with path.open("rb") as file:
            return file.read(3) == BOM.encode()
    except OSError:  # not on disk (yet), or not a file
        return False


def _differs(path: Path, text: str | None) -> bool:
    """Whether the editor's ``text`` of ``path`` is not what the disk holds."""
    if text is None:
        return False
    try:
        return path.read_bytes() != text.encode(errors="surrogateescape")
    except OSError:  # not on disk (yet)
        return True
