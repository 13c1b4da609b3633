"""The ``glob`` tool: find files by name pattern with ripgrep, newest first."""

from __future__ import annotations

import heapq

from pydantic import BaseModel, ConfigDict, Field

from ._ripgrep import (
    LIMIT,
    DirFd,
    FileFilter,
    capped_note,
    displayer,
    file_filter,
    rg_failure,
    search_flags,
    stream_rg,
)
from .base import Tool, ToolError, ToolResult
from .context import ToolContext


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(
        min_length=1,
        description='The glob to match file paths against, e.g. "*.py", "src/**/*.ts" or "**/test_*.py".',
    )
    path: str | None = Field(
        default=None,
        description="The folder to search in, absolute or relative to the workspace root. "
        "Omit it to search the whole workspace.",
    )


def glob_args(chosen: FileFilter) -> list[str]:
    """rg's arguments for a file search (also used by bench/search.py for its baseline)."""
    return ["--files", *search_flags(), *chosen.flags, "--", *chosen.roots]


class Glob(Tool[Params]):
    id = "glob"
    Params = Params
    permission = "read"

    async def run(self, params: Params, ctx: ToolContext) -> ToolResult:
        title = f"Find files matching {params.pattern}"
        folder = await ctx.authorize(params.path or ".", "read", title)
        if not folder.is_dir():
            what = "is a file, not a folder" if folder.exists() else "does not exist"
            raise ToolError(f"{ctx.relative(folder)} {what}; glob's path must be a folder to search in.")
        chosen = file_filter(params.pattern, folder)
        title = ctx.relative(folder / params.pattern)
        if chosen.roots and not (folder / chosen.roots[0]).exists():
            return ToolResult(title, "No files found", {"count": 0, "truncated": False})
        where = DirFd(folder)
        found: list[tuple[int, bytes]] = []  # (-mtime, path): ascending order is newest first

        def consume(lines: list[bytes]) -> None:
            if chosen.regex is not None:
                lines = [name for name in lines if chosen.keeps(name)]
            found.extend(where.newest_first(lines))

        try:
            done = await stream_rg(glob_args(chosen), folder, ctx.abort, consume)
        finally:
            where.close()
        if done.failed and not found:
            raise rg_failure(done.stderr, params.pattern, "file search")
        if not found:
            return ToolResult(title, "No files found", {"count": 0, "truncated": False})
        newest = heapq.nsmallest(LIMIT, found)
        show = displayer(folder, ctx.relative)
        lines = [show(name) for _, name in newest]
        truncated = len(found) > LIMIT
        if truncated:
            lines += ["", capped_note(LIMIT, len(found), "files", "pattern or path")]
        if done.skipped_some:
            lines += ["", "(Some paths could not be read and were skipped.)"]
        metadata = {"count": len(found), "truncated": truncated}
        return ToolResult(title, "\n".join(lines), metadata)
