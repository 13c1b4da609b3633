"""Bounded outputs: cut a tool's output to the limits and save the whole of it for later reading.

Saved outputs live in ``<data dir>/tool-output`` and are removed after seven days.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

RETENTION_SECONDS = 7 * 24 * 3600
_cleaned: set[Path] = set()


@dataclass(frozen=True)
class OutputLimits:
    max_lines: int = 2000
    max_bytes: int = 50 * 1024


#: What a tool that bounds its own output (and says so with ``metadata["truncated"]``) may add
#: to ``max_bytes`` of content for its closing notes; the wrapper cuts anything longer.
NOTES_ROOM = 4 * 1024


def fitting(lines: Iterable[str], budget: int) -> int:
    """How many of ``lines``, from the first, fit in ``budget`` bytes of UTF-8, each with its
    newline: what a tool that caps its entries by count also caps by size (a hundred paths
    4 KB long are 400 KB)."""
    count = 0
    for line in lines:
        budget -= (len(line) if line.isascii() else len(line.encode("utf-8", "surrogatepass"))) + 1
        if budget < 0:
            break
        count += 1
    return count


@dataclass(frozen=True)
class Truncated:
    output: str
    path: Path | None  # where the full output is, when it was cut


def _cut(text: str, limits: OutputLimits) -> tuple[str, int, int] | None:
    """The head of ``text`` within the limits, and the lines and bytes left out; None if it fits."""
    if len(text) * 4 <= limits.max_bytes and text.count("\n") < limits.max_lines:
        return None  # fits whatever its characters (UTF-8 takes at most 4 bytes for each)
    data = text.encode()
    lines = text.split("\n")
    if len(lines) <= limits.max_lines and len(data) <= limits.max_bytes:
        return None
    kept: list[str] = []
    size = 0
    for line in lines[: limits.max_lines]:
        line_size = len(line.encode()) + 1
        if size + line_size > limits.max_bytes:
            if not kept:  # one enormous line: keep its start rather than nothing
                kept.append(line.encode()[: limits.max_bytes].decode(errors="ignore"))
                size = limits.max_bytes
            break
        kept.append(line)
        size += line_size
    head = "\n".join(kept)
    return head, len(lines) - len(kept), len(data) - len(head.encode())


def truncate(text: str, limits: OutputLimits, folder: Path, name: str) -> Truncated:
    cut = _cut(text, limits)
    if cut is None:
        return Truncated(text, None)
    head, lines_left, bytes_left = cut
    path = save(text, folder, name)
    note = (
        f"\n\n... output truncated: {lines_left} more lines ({bytes_left} bytes) not shown. "
        f"The full output is saved at {path}. Use the read tool with offset/limit on that file, "
        "or grep it, to see the rest; do not rerun the command just to see more."
    )
    return Truncated(head + note, path)


def save(text: str, folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    _clean_once(folder)
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:80]
    path = folder / f"{time.strftime('%Y%m%d-%H%M%S')}-{safe}.txt"
    path.write_text(text)
    return path


def _clean_once(folder: Path) -> None:
    if folder in _cleaned:
        return
    _cleaned.add(folder)
    cutoff = time.time() - RETENTION_SECONDS
    with os.scandir(folder) as entries:
        for entry in entries:
            try:
                if entry.is_file() and entry.stat().st_mtime < cutoff:
                    os.unlink(entry.path)
            except OSError as error:
                log.debug("could not remove old output %s: %s", entry.path, error)
