"""The ``glob`` tool: find files by name pattern with ripgrep, newest first."""

from __future__ import annotations

import contextlib
import functools
import heapq
import os
from pathlib import Path

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
from ._search_access import authorize_search
from .base import Tool, ToolError, ToolResult
from .context import ToolContext
from .truncate import fitting


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
    threads = f"--threads={walker_threads()}"
    return ["--files", "--null", threads, *search_flags(), *chosen.flags, "--", *chosen.roots]


#: A container's CPU quota (cgroup v2): "max 100000", or "200000 100000" for two CPUs.
_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


@functools.cache
def walker_threads() -> int:
    """rg walks with one thread fewer than it would by default: the tool stats every path rg
    prints (for the newest-first sort), and that work needs a CPU of its own.

    On 2 CPUs (a 50k-file tree, 15k matches) rg's default second thread bought nothing: rg alone
    took 61 ms and 72 ms of CPU with two threads, 51 ms and 47 ms of CPU with one; the tool went
    from about 64 ms to 50 ms, as the stat calls no longer fight rg's threads for the CPUs.
    """
    return max(1, min(usable_cpus(), 12) - 1)  # rg's default: one thread per CPU, at most 12


def usable_cpus() -> int:
    """The CPUs this process may run on, lowered by a container's quota (as rg counts them)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    with contextlib.suppress(OSError, ValueError):
        quota, period = _CPU_MAX.read_text().split()
        if quota != "max":
            cpus = min(cpus, max(1, int(quota) // int(period)))
    return cpus


class Glob(Tool[Params]):
    id = "glob"
    Params = Params
    permission = "read"

    async def run(self, params: Params, ctx: ToolContext) -> ToolResult:
        title = f"Find files matching {params.pattern}"
        search = await authorize_search(ctx, params.path, params.pattern, title)
        folder, chosen, reads = search.folder, search.chosen, search.reads
        if not search.target.is_dir():
            what = "is a file, not a folder" if search.target.exists() else "does not exist"
            raise ToolError(
                f"{ctx.relative(search.target)} {what}; glob's path must be a folder to search in."
            )
        title = ctx.relative(folder / params.pattern)
        if search.names and not (folder / search.names[0]).exists():
            return ToolResult(title, "No files found", {"count": 0, "truncated": False})
        where = DirFd(folder)
        newest: list[tuple[int, bytes]] = []  # (-mtime, path) of the newest LIMIT so far, in order
        found = 0

        def consume(lines: list[bytes]) -> None:
            # Merged batch by batch while rg still walks: nothing is left to sort when it is done,
            # and only LIMIT entries are kept, however many files match.
            nonlocal newest, found
            if chosen.regex is not None:
                lines = [name for name in lines if chosen.keeps(name)]
            lines = reads.keep(lines)
            found += len(lines)
            newest = heapq.nsmallest(LIMIT, [*newest, *where.newest_first(lines)])

        try:
            done = await stream_rg(glob_args(chosen), folder, ctx.abort, consume, end=b"\0")
        finally:
            where.close()
        if done.failed and not found and not reads.blocked:
            raise rg_failure(done.stderr, params.pattern, "file search")
        show = displayer(folder, ctx.relative)
        notes = reads.notes("matching file", "matching files", show)
        lines = [show(name) for _, name in newest]
        lines = lines[: fitting(lines, ctx.env.limits.max_bytes - 512)]  # by count and by size
        metadata = {"count": found, "truncated": found > len(lines), **reads.counts()}
        if not found:
            skipped = [SKIPPED] if done.skipped_some else []
            return ToolResult(title, "\n\n".join(["No files found", *notes, *skipped]), metadata)
        if found > len(lines):
            lines += ["", capped_note(len(lines), found, "files", "pattern or path")]
        if done.skipped_some:
            lines += ["", SKIPPED]
        for note in notes:
            lines += ["", note]
        return ToolResult(title, "\n".join(lines), metadata)
