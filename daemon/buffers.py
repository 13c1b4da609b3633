"""The documents open in the editor as the daemon tracks them (``didOpen``/``didChange``), and
waiting for the editor to report an edit it applied or a buffer it moved."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

SETTLE_TIMEOUT = 2.0  # editors may debounce didChange (VS Code by 250 ms; Neovim by 150 ms by default)


@dataclass
class Buffers:
    """The documents open in the editor, by path: their version and text (saved or not)."""

    open: dict[Path, tuple[int, str]] = field(default_factory=dict[Path, tuple[int, str]])
    _moved: dict[Path, asyncio.Event] = field(default_factory=dict[Path, asyncio.Event])

    def version(self, path: Path) -> int | None:
        entry = self.open.get(path)
        return entry[0] if entry else None

    def text(self, path: Path) -> str | None:
        entry = self.open.get(path)
        return entry[1] if entry else None

    def unsaved(self, path: Path) -> str | None:
        """The buffer's text of ``path``, None when it is not open. An empty buffer of a file not
        created yet is no file: VS Code sends it as "", Neovim as "\n" (its one empty line,
        which it writes as an empty file)."""
        text = self.text(path)
        return None if text in ("", "\n") and not path.exists() else text

    def not_saved(self) -> list[Path]:
        """The open files whose buffer is not what the disk holds."""
        return [path for path in self.open if _differs(path, self.unsaved(path))]

    def update(self, path: Path, version: int, text: str) -> None:
        self.open[path] = (version, text)
        self._wake(path)

    def close(self, path: Path) -> bool:
        closed = self.open.pop(path, None) is not None
        self._wake(path)
        return closed

    def _wake(self, path: Path) -> None:
        moved = self._moved.pop(path, None)
        if moved is not None:
            moved.set()

    async def arrive(self, path: Path, text: str) -> None:
        """After the editor moved a buffer to ``path``: wait (briefly) until it reports the buffer
        there holding ``text``, so what follows (diagnostics, the next edit) sees it."""
        try:
            async with asyncio.timeout(SETTLE_TIMEOUT):
                while self.text(path) != text:
                    await self._moved.setdefault(path, asyncio.Event()).wait()
        except TimeoutError:
            log.warning("the editor did not report %s after moving it", path)

    async def settle(self, path: Path, version: int, text: str) -> None:
        """After the editor applied an edit: wait (briefly) for the ``didChange`` past ``version``
        that it sends, maybe debounced, so the next edit starts from the buffer's new text."""
        while (current := self.version(path)) is not None and current <= version:
            moved = self._moved.setdefault(path, asyncio.Event())
            try:
                await asyncio.wait_for(moved.wait(), SETTLE_TIMEOUT)
            except TimeoutError:
                log.warning("no didChange from the editor after an applied edit to %s", path)
                if path in self.open:
                    self.open[path] = (current, text)
                return


def _differs(path: Path, text: str | None) -> bool:
    """Whether the editor's ``text`` of ``path`` is not what the disk holds."""
    if text is None:
        return False
    try:
        return path.read_bytes() != text.encode(errors="surrogateescape")
    except OSError:  # not on disk (yet)
        return True
