"""The ``grep`` tool: search file contents with ripgrep, matches grouped per file, newest files first."""

from __future__ import annotations

import heapq
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ._ripgrep import (
    LIMIT,
    SKIPPED,
    DirFd,
    FileFilter,
    capped_note,
    displayer,
    rg_failure,
    search_flags,
    stream_rg,
)
from ._search_access import ReadCheck, authorize_search
from .base import Tool, ToolError, ToolResult
from .context import ToolContext

MAX_LINE = 2000


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(
        min_length=1, description=r'The regular expression to search for, e.g. "def \w+_handler" or "TODO".'
    )
    path: str | None = Field(
        default=None,
        description="The folder (or one file) to search, absolute or relative to the workspace root. "
        "Omit it to search the whole workspace.",
    )
    include: str | None = Field(
        default=None,
        description='Only search files whose path matches this glob, e.g. "*.py" or "*.{ts,tsx}".',
    )


def grep_args(pattern: str, chosen: FileFilter, names: list[str]) -> list[str]:
    """rg's arguments for a search (also used by bench/search.py for its baseline)."""
    return [
        *search_flags(),
        *chosen.flags,
        "--line-number",
        "--with-filename",
        "--null",
        "--no-heading",
        f"--max-columns={MAX_LINE}",
        "--max-columns-preview",
        "--regexp",
        pattern,
        "--",
        *names,
    ]


class Matches:
    """rg's ``path\\0line:text`` lines grouped per file, each file stat-ed once as it first appears;
    files the glob or the read rules (``reads``) leave out are skipped."""

    def __init__(self, where: DirFd, chosen: FileFilter, reads: ReadCheck) -> None:
        self.where = where
        self.chosen = chosen
        self.reads = reads
        self.files: dict[bytes, list[bytes]] = {}
        self.keys: list[tuple[int, bytes]] = []  # (-mtime, path): ascending order is newest first
        self.count = 0
        self.pending = b""  # the lines of a record so far, whose file name holds newlines

    def consume(self, lines: list[bytes]) -> None:
        current: bytes | None = None
        hits: list[bytes] | None = None
        for line in lines:
            name, sep, rest = line.partition(b"\0")
            if not sep:
                # The start of a name that holds a newline (its record goes on in the next line),
                # or a "binary file matches" notice for a file named explicitly (nothing follows).
                self.pending += line + b"\n"
                continue
            if self.pending:
                name, self.pending = self.pending + name, b""
            if name != current:
                current = name
                hits = self.files.get(name)
                if hits is None:
                    hits = self._add(name)
                    if hits is None:
                        continue
            elif hits is None:
                continue
            hits.append(rest)
            self.count += 1

    def _add(self, name: bytes) -> list[bytes] | None:
        if not self.chosen.keeps(name) or (self.reads.active and not self.reads.shows(name)):
            return None
        hits: list[bytes] = []
        self.files[name] = hits
        self.keys.append((-self.where.mtime(name), name))
        return hits


def _text(raw: bytes) -> tuple[str, str]:
    number, _, text = raw.partition(b":")
    line = text.decode(errors="replace").rstrip("\r")
    if len(line) > MAX_LINE:
        line = line[:MAX_LINE] + "..."
    return number.decode(), line


class Grep(Tool[Params]):
    id = "grep"
    Params = Params
    permission = "read"

    async def run(self, params: Params, ctx: ToolContext) -> ToolResult:
        title = f"Search for {params.pattern}"
        search = await authorize_search(ctx, params.path, params.include, title, contents=True)
        folder, reads = search.folder, search.reads
        if not search.target.exists():
            raise ToolError(
                f"{ctx.relative(search.target)} does not exist; give grep a folder or a file to search."
            )
        title = params.pattern
        if search.target.is_dir() and search.names and not (folder / search.names[0]).exists():
            return ToolResult(title, "No matches found", {"matches": 0, "files": 0, "truncated": False})
        where = DirFd(folder)
        matches = Matches(where, search.chosen, reads)
        try:
            done = await stream_rg(
                grep_args(params.pattern, search.chosen, search.names), folder, ctx.abort, matches.consume
            )
        finally:
            where.close()
        if done.failed and not matches.count and not reads.blocked:
            raise rg_failure(done.stderr, params.pattern, "search")
        if not matches.count and b": binary file matches (" in matches.pending:  # a file named as path
            said = f"{ctx.relative(search.target)} is a binary file that matches"
            output = f"{said}; grep shows lines of text files only (`strings` or `xxd` in bash look inside)."
            return ToolResult(title, output, {"matches": 0, "files": 1, "truncated": False, "binary": True})
        if not matches.count:
            notes = reads.notes("file with matches", "files with matches", displayer(folder, ctx.relative))
            head = "No matches to show" if notes else "No matches found"
            if done.skipped_some:
                notes.append(SKIPPED)
            metadata = {"matches": 0, "files": 0, "truncated": False, **reads.counts()}
            return ToolResult(title, "\n\n".join([head, *notes]), metadata)
        return ToolResult(title, *_report(matches, ctx, folder, done.skipped_some))


def _report(matches: Matches, ctx: ToolContext, folder: Path, skipped: bool) -> tuple[str, dict[str, Any]]:
    """Up to ``LIMIT`` matches (and the byte limit), the most recently modified files first."""
    budget = ctx.env.limits.max_bytes - 512
    shown = 0
    blocks: list[str] = []
    show = displayer(folder, ctx.relative)
    for _, name in heapq.nsmallest(LIMIT, matches.keys):
        lines = [f"{show(name)}:"]
        budget -= len(lines[0].encode()) + 2  # and the blank line before it
        for raw in matches.files[name]:
            if shown == LIMIT:
                break
            number, text = _text(raw)
            entry = f"  line {number}: {text}"
            budget -= len(entry.encode()) + 1
            if budget < 0 and shown:
                break
            lines.append(entry)
            shown += 1
        if len(lines) > 1:
            blocks.append("\n".join(lines))
        if shown == LIMIT or budget < 0:
            break
    truncated = shown < matches.count
    files = _plural(len(matches.files), "file", "files")
    head = f"Found {_plural(matches.count, 'match', 'matches')} in {files}"
    parts = [head, *blocks]
    if truncated:
        parts.append(capped_note(shown, matches.count, "matches", "pattern, path or include"))
    if skipped:
        parts.append(SKIPPED)
    parts += matches.reads.notes("file with matches", "files with matches", show)
    metadata: dict[str, Any] = {"matches": matches.count, "files": len(matches.files), "truncated": truncated}
    metadata.update(matches.reads.counts())
    return "\n\n".join(parts), metadata


def _plural(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"
