"""Following the agent in the editor (``lspilot.follow``): the place each finished tool call read,
found or changed is shown with ``window/showDocument``, without taking the editor's focus.

``place`` reads it from the tool's result metadata (documented in docs/protocol.md, so an editor
could do the same from ``lspilot/update``); ``Follower`` sends the requests one at a time, and
when the agent moves faster than the editor answers, only the newest place is shown next. A
review of a change is never covered up: the place before it is on screen before the review
is sent, and none is shown while it is pending.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types

from lsp_bridge.documents import to_utf16

from .editor import Editor

log = logging.getLogger(__name__)

EDITS = frozenset({"edit", "multiedit", "write", "apply_patch"})
#: How long a review waits for the editor to finish showing the place before it (seconds).
SETTLE = 2.0
#: ``+++ b/<path>`` and the new-file start of each hunk, in a unified diff.
_TARGET = re.compile(r"^\+\+\+ b/(.*)$")
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


@dataclass(frozen=True)
class Place:
    """A range to show, 0-based lines, columns in code points (``end_line`` None: a cursor)."""

    path: Path
    line: int
    character: int = 0
    end_line: int | None = None
    end_character: int = 0


def place(tool: str, metadata: dict[str, Any], root: Path) -> Place | None:
    """Where a completed call of ``tool`` looked or what it changed, if anywhere worth showing."""
    if tool == "read" and "path" in metadata and "from" in metadata:  # a text file, not a folder
        return Place(Path(metadata["path"]), metadata["from"] - 1)
    if tool == "lsp":
        return _navigation(metadata, root)
    if tool in EDITS:
        return _change(metadata, root)
    return None


def _navigation(metadata: dict[str, Any], root: Path) -> Place | None:
    """The first location found; else the first call site; else where the question was asked."""
    for found in metadata.get("locations") or []:
        return Place(
            root / found["path"],
            found["line"] - 1,
            found["character"] - 1,
            found["endLine"] - 1,
            found["endCharacter"] - 1,
        )
    for call in metadata.get("calls") or []:
        for site in call.get("fromRanges") or []:
            return Place(root / call["fromPath"], site["line"] - 1, site["character"] - 1)
        return Place(root / call["path"], call["line"] - 1, call["character"] - 1)
    target = metadata.get("target")
    if target:
        return Place(root / target["path"], target["line"] - 1, target["character"] - 1)
    return None


def _change(metadata: dict[str, Any], root: Path) -> Place | None:
    """The first block of added lines (or where lines went) in the first file the change left."""
    files = metadata.get("files") or []
    kept = [path for f in files if f.get("status") != "rejected" and (path := Path(f["path"])).is_file()]
    lines = str(metadata.get("diff") or "").splitlines()
    target: Path | None = None
    number = 0  # the new file's line the diff has reached (1-based); 0 outside a hunk
    for index, line in enumerate(lines):
        if line.startswith("--- "):
            target, number = None, 0
        elif named := _TARGET.match(line):
            target = root / named.group(1)
        elif hunk := _HUNK.match(line):
            number = int(hunk.group(1))
        elif target not in kept or not number:
            continue
        elif line.startswith(" "):
            number += 1
        elif line.startswith(("+", "-")):
            added = _added(lines, index)
            return Place(target, number - 1, 0, number - 1 + added if added else None)
    return Place(kept[0], 0) if kept else None


def _added(lines: list[str], index: int) -> int:
    """How many ``+`` lines the block of changed lines starting at ``lines[index]`` has."""
    added = 0
    for line in lines[index:]:
        if line.startswith("+"):
            added += 1
        elif not line.startswith(("-", "\\")):
            break
    return added


class Follower:
    """Shows each place in the editor while following is on; one ``window/showDocument`` at a time."""

    def __init__(self, editor: Editor, root: Path, lines: Callable[[Path], list[str]]) -> None:
        self.editor = editor
        self.root = root
        self.lines = lines  # a file's lines as the language servers see it (for UTF-16 columns)
        self.enabled = False
        self._next: Place | None = None
        self._task: asyncio.Task[None] | None = None
        self._reviews = 0  # reviews pending in the editor

    def tool_done(self, tool: str, metadata: dict[str, Any]) -> None:
        if not self.enabled:
            return
        shown = place(tool, metadata, self.root)
        if shown is None:
            return
        self._next = shown
        self._start()

    @contextlib.asynccontextmanager
    async def reviewing(self) -> AsyncIterator[None]:
        """Around a review: the place being shown is on screen first (or 2 s have passed: an
        editor that does not answer holds up no review); nothing is shown until it ends."""
        self._reviews += 1
        try:
            if self._task is not None and not self._task.done():
                await asyncio.wait([self._task], timeout=SETTLE)
            yield
        finally:
            self._reviews -= 1
            self._start()

    def _start(self) -> None:
        if self._next is not None and not self._reviews and (self._task is None or self._task.done()):
            self._task = asyncio.get_running_loop().create_task(self._show())

    async def _show(self) -> None:
        while self._next is not None and not self._reviews:
            shown, self._next = self._next, None
            try:
                answer = await self.editor.request(types.WINDOW_SHOW_DOCUMENT, self._params(shown))
            except Exception as error:  # the editor's failure to show is no failure of the turn
                log.info("the editor could not show %s: %s", shown.path, error)
                continue
            if not getattr(answer, "success", True):
                log.info("the editor did not show %s", shown.path)

    def _params(self, shown: Place) -> types.ShowDocumentParams:
        lines = self.lines(shown.path)
        start = _position(lines, shown.line, shown.character)
        end = start if shown.end_line is None else _position(lines, shown.end_line, shown.end_character)
        uri = self.editor.names.uri(shown.path)
        selection = types.Range(start, end)
        return types.ShowDocumentParams(uri, external=False, take_focus=False, selection=selection)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


def _position(lines: list[str], line: int, character: int) -> types.Position:
    """A line and code point column as an LSP position (UTF-16 columns)."""
    text = lines[line] if 0 <= line < len(lines) else ""
    return types.Position(line=max(line, 0), character=to_utf16(text, max(character, 0)))
