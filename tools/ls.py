"""The ``list`` tool: a folder's tree (ripgrep's file list), noise folders left out, capped."""

from __future__ import annotations

from collections import deque

from pydantic import BaseModel, ConfigDict, Field

from ._ripgrep import LIMIT, displayer, rg_failure, search_flags, stream_rg
from ._search_access import authorize_search
from .base import Tool, ToolError, ToolResult
from .context import ToolContext, shown_name
from .truncate import fitting

#: Folders that are never worth listing (dependencies, caches, build output), besides .gitignore's.
NOISE = (
    "node_modules",
    ".git",
    "__pycache__",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    "*.egg-info",
    "dist",
    "build",
    "target",
    ".cache",
    ".gradle",
    ".next",
    ".nuxt",
    ".svelte-kit",
    ".terraform",
    ".idea",
    "coverage",
    ".zig-cache",
    "zig-out",
)


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str | None = Field(
        default=None,
        description="The folder to list, absolute or relative to the workspace root. "
        "Omit it for the workspace root.",
    )
    ignore: list[str] | None = Field(
        default=None,
        description='Extra glob patterns to leave out, e.g. ["*.log", "fixtures/"] (a trailing "/" '
        "matches folders only).",
    )


class Node:
    """A folder in the tree: its subfolders, its files, and how many files it holds in all."""

    __slots__ = ("dirs", "files", "total")

    def __init__(self) -> None:
        self.dirs: dict[str, Node] = {}
        self.files: list[str] = []
        self.total = 0

    def add(self, parts: list[str]) -> int:
        """Insert a file path; returns how many new folders it created."""
        node, created = self, 0
        for part in parts[:-1]:
            node.total += 1
            child = node.dirs.get(part)
            if child is None:
                child = node.dirs[part] = Node()
                created += 1
            node = child
        node.total += 1
        node.files.append(parts[-1])
        return created

    def children(self) -> list[tuple[str, Node | None]]:
        """Subfolders, then files, each sorted by name."""
        return [
            *((name, self.dirs[name]) for name in sorted(self.dirs)),
            *((f, None) for f in sorted(self.files)),
        ]


def _choose(root: Node, limit: int) -> tuple[dict[int, list[tuple[str, Node | None]]], int]:
    """Breadth first up to ``limit`` entries, so a big tree shows its top levels rather than one corner."""
    shown: dict[int, list[tuple[str, Node | None]]] = {}
    queue = deque([root])
    count = 0
    while queue and count < limit:
        node = queue.popleft()
        entries = node.children()[: limit - count]
        shown[id(node)] = entries
        count += len(entries)
        queue.extend(child for _, child in entries if child is not None)
    return shown, count


def _render(node: Node, shown: dict[int, list[tuple[str, Node | None]]], indent: str, out: list[str]) -> None:
    entries = shown.get(id(node), [])
    for name, child in entries:
        if child is None:
            out.append(f"{indent}{name}")
            continue
        out.append(f"{indent}{name}/")
        _render(child, shown, indent + "  ", out)
    hidden = len(node.dirs) + len(node.files) - len(entries)
    if hidden:
        noun = "entry" if hidden == 1 else "entries"
        below = f" ({node.total} files below)" if node.dirs else ""
        out.append(f"{indent}... {hidden} more {noun}{below}")


def _tree(root: Node, title: str, budget: int) -> tuple[list[str], int]:
    """The tree's lines and how many entries they show: up to ``LIMIT``, fewer when their names
    are so long that the lines would pass ``budget`` bytes."""
    limit = LIMIT
    while True:
        shown, count = _choose(root, limit)
        lines = [f"{title}/"]
        _render(root, shown, "  ", lines)
        fits = fitting(lines, budget)
        if fits == len(lines) or limit == 1:
            return lines, count
        limit = max(1, min(limit - 1, limit * fits // len(lines)))


class List(Tool[Params]):
    id = "list"
    Params = Params
    permission = "read"

    async def run(self, params: Params, ctx: ToolContext) -> ToolResult:
        search = await authorize_search(ctx, params.path, None, f"List {params.path or 'the workspace'}")
        folder, reads = search.target, search.reads
        if not folder.is_dir():
            what = "is a file, not a folder" if folder.exists() else "does not exist"
            raise ToolError(f"{ctx.relative(folder)} {what}; list needs a folder (use read for a file).")
        root = Node()
        folders = 0

        def consume(lines: list[bytes]) -> None:
            nonlocal folders
            for line in reads.keep(lines):
                folders += root.add(shown_name(line).split("/"))  # not UTF-8: \xNN, as read takes it

        ignores = [f"--glob=!{name}/" for name in NOISE] + [f"--glob=!{glob}" for glob in params.ignore or []]
        args = ["--files", "--null", *search_flags(), *ignores]
        done = await stream_rg(args, folder, ctx.abort, consume, end=b"\0")
        if done.failed and not root.total and not reads.blocked:
            raise rg_failure(done.stderr, " ".join(params.ignore or []), "listing")
        title = ctx.relative(folder)
        total = root.total + folders
        lines, count = _tree(root, title, ctx.env.limits.max_bytes - 512)
        if not root.total:
            lines.append("  (no files)")
        truncated = count < total
        if truncated:
            lines += [
                "",
                f"(Showing {count} of {total} entries. List a subfolder or add ignore patterns to see more.)",
            ]
        for note in reads.notes("file", "files", displayer(folder, ctx.relative)):
            lines += ["", note]
        metadata = {"count": total, "files": root.total, "truncated": truncated, **reads.counts()}
        return ToolResult(title, "\n".join(lines), metadata)
