"""The lsp tool's diagnostics operation: one file, or the workspace's most recently changed files.

Each file's diagnostics are of exactly its current text (``Bridge.diagnostics_after_change``), so
"no problems" means the servers checked this version, not that nobody has published yet.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from lsprotocol import types as lsp

from lsp_bridge import Bridge, BridgeError, NoServerForFile

from . import _lsp_format as fmt
from ._lsp_format import Navigation
from ._lsp_read_rules import UNQUOTED_MESSAGES, unquoted_messages
from ._lsp_resolve import source_files
from ._lsp_source import Sources
from .base import ToolError

#: Files checked when no file is given (open documents first, then the newest).
WORKSPACE_FILES = 50
PARALLEL = 4


async def diagnostics(bridge: Bridge, sources: Sources, path: Path | None) -> Navigation:
    files, skipped = [path], 0
    if path is None:
        files, skipped = _workspace_files(bridge, sources.root)
        if sources.hidden is not None:
            files = [f for f in files if sources.shows(f)]
    if not files:
        raise ToolError(
            "No file in the workspace is handled by a language server; there is nothing to check."
        )
    found: list[tuple[Path, lsp.Diagnostic]] = []
    notes: list[str] = []
    complete = True
    hints = 0
    gate = asyncio.Semaphore(PARALLEL)

    async def check(file: Path) -> None:
        nonlocal complete, hints
        async with gate:
            try:
                answer = await bridge.diagnostics_after_change(file)
            except BridgeError as error:
                if path is not None:
                    raise
                if not isinstance(error, NoServerForFile):
                    complete = False
                    notes.append(f"{sources.relative(file)} was not checked: {error}")
                return
        complete &= answer.complete
        notes.extend(answer.notes)
        for diag in answer.value:
            if diag.severity == lsp.DiagnosticSeverity.Hint:
                hints += 1
            else:
                found.append((file, diag))

    await asyncio.gather(*(check(f) for f in files if f is not None))
    subject = sources.relative(path) if path else "workspace"
    checked = len(files)
    cut = sources.hidden is not None and await unquoted_messages(sources, found)
    if found:
        lines, metadata = fmt.diagnostics(sources, found, checked)
        if cut:
            lines.append(UNQUOTED_MESSAGES)
            metadata["unquoted"] = True
    else:
        where = sources.relative(path) if path else f"the {fmt.plural(checked, 'file')} checked"
        lines, metadata = [f"No errors or warnings in {where}."], {"diagnostics": []}
    if hints:
        lines.append(f"({fmt.plural(hints, 'hint')}, such as unused names, not shown.)")
    if skipped:
        lines.append(
            f"(Checked the {checked} open or most recently modified of {checked + skipped} source files; "
            "give filePath to check another.)"
        )
    notes = list(dict.fromkeys(notes))  # a server still loading says so for each file
    lines = fmt.with_notes(lines, complete, notes, bool(found))
    data = {"operation": "diagnostics", "count": len(found), "checked": checked, "complete": complete}
    return Navigation(f"diagnostics {subject}", "\n".join(lines), {**data, "notes": notes, **metadata})


def _workspace_files(bridge: Bridge, root: Path) -> tuple[list[Path], int]:
    """Open documents in the workspace first, then the most recently modified source files. A
    document whose file was deleted stays among the bridge's until its next request: only an
    editor's unsaved text (an overlay) is checked without a file."""
    opened = [
        doc.path
        for doc in bridge.documents
        if doc.path.is_relative_to(root) and (doc.overlay or doc.path.is_file())
    ]

    def newest(path: Path) -> float:
        with contextlib.suppress(OSError):
            return -path.stat().st_mtime
        return 0.0

    everything = list(dict.fromkeys([*opened, *sorted(source_files(bridge, root), key=newest)]))
    return everything[:WORKSPACE_FILES], max(0, len(everything) - WORKSPACE_FILES)
