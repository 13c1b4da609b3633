"""lsp: definitions, references, implementations, calls, symbols, hover and diagnostics from the
language servers, addressable by symbol name, in text a model reads and metadata an editor uses.

``navigate`` is the whole question (resolve the file and the position or symbol, ask, format)
as a plain async function over a ``Bridge``; the ``Lsp`` tool adds only permissions and the
file-not-found suggestions. The editor server's navigate command calls ``navigate`` too.

Here: the parameters, ``navigate`` (which operation goes where, and errors), the symbol lists
and the tool. ``_lsp_ask`` answers at one place, ``_lsp_diagnostics`` checks files,
``_lsp_read_rules`` keeps out what read would not show, ``_lsp_errors`` words the bridge's errors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lsp_bridge import Bridge, BridgeError

from . import _lsp_format as fmt
from ._lsp_ask import Question, at_position
from ._lsp_diagnostics import diagnostics
from ._lsp_errors import bridge_error
from ._lsp_format import Navigation
from ._lsp_read_rules import left_out_note, read_denied, refuse_denied
from ._lsp_resolve import (
    MAX_PROJECTS,
    Hits,
    Symbol,
    declared,
    file_symbols,
    match,
    name_parts,
    workspace_symbols,
)
from ._lsp_source import Sources, in_editor
from .base import Tool, ToolError, ToolResult
from .context import ToolContext
from .permission import PermissionRequest
from .read import _missing  # pyright: ignore[reportPrivateUsage] - the same suggestions as read

Operation = Literal[
    "goToDefinition",
    "findReferences",
    "hover",
    "documentSymbol",
    "workspaceSymbol",
    "goToImplementation",
    "prepareCallHierarchy",
    "incomingCalls",
    "outgoingCalls",
    "diagnostics",
]


class LspParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    operation: Operation = Field(description="What to ask the language server.")
    filePath: str | None = Field(
        default=None,
        description="The file to ask about (absolute or relative to the workspace root). Needed for "
        "documentSymbol; optional for workspaceSymbol and diagnostics and when `symbol` is given.",
    )
    line: int | None = Field(default=None, ge=1, description="1-based line, as read shows it.")
    character: int | None = Field(
        default=None,
        ge=1,
        description="1-based column on that line. Optional: prefer `symbol` over counting characters.",
    )
    symbol: str | None = Field(
        default=None,
        min_length=1,
        description="A name or name path (`Shape.area`, `calc/total_area`) instead of a position: "
        "looked up in filePath, or in the whole workspace without filePath. With `line`, the name "
        "on that line.",
    )
    query: str | None = Field(
        default=None,
        description="The name (or part of it) for workspaceSymbol; a name path (`Shape.area`, "
        "`calc.total`) finds the names like its last part inside the rest. Names, not patterns (`*`).",
    )


async def navigate(
    bridge: Bridge,
    root: Path,
    operation: Operation,
    *,
    path: Path | None = None,
    line: int | None = None,
    character: int | None = None,
    symbol: str | None = None,
    query: str | None = None,
    hidden: Callable[[str], bool] | None = None,
) -> Navigation:
    """Answer ``operation`` at ``path``/``line``/``character`` (1-based) or at ``symbol``, in the
    workspace ``root`` (symlinks resolved, as ``ToolEnv.root`` is); results in files ``hidden``
    names (by workspace-relative path: those the read rules deny) are left out, with a note.

    Raises ``ToolError`` with a message saying what to do instead when it cannot answer.
    """
    sources = Sources(root, bridge, hidden)
    if path is not None and not path.is_file() and not in_editor(bridge, path):
        raise ToolError(f"{sources.relative(path)} is not a file; give the lsp tool a source file.")
    try:
        if operation == "diagnostics":
            answer = await diagnostics(bridge, sources, path)
        elif operation == "documentSymbol":
            answer = await _document_symbols(bridge, sources, path, symbol)
        elif operation == "workspaceSymbol":
            answer = await _workspace_symbols(bridge, sources, path, query or symbol or "")
        else:
            answer = await at_position(bridge, sources, Question(operation, path, line, character, symbol))
    except BridgeError as error:
        raise ToolError(bridge_error(bridge, error, operation, path)) from None
    if sources.left_out:
        answer.text += f"\n\n{left_out_note(sources.left_out, operation)}"
        answer.metadata["skipped"] = sources.left_out
    return answer


async def _document_symbols(
    bridge: Bridge, sources: Sources, path: Path | None, symbol: str | None
) -> Navigation:
    if path is None:
        raise ToolError("documentSymbol needs filePath; use workspaceSymbol to search the whole workspace.")
    hits = await file_symbols(bridge, path)
    shown = match(hits.symbols, symbol, sources) if symbol else hits.symbols
    if not shown:
        what = f"no symbols named {symbol!r}" if symbol else "no symbols"
        return _empty("documentSymbol", sources.relative(path), f"{sources.relative(path)} has {what}", hits)
    lines, metadata = fmt.outline(sources, path, shown)
    hits.symbols = shown
    return _finish("documentSymbol", sources.relative(path), lines, metadata, hits)


async def _workspace_symbols(bridge: Bridge, sources: Sources, path: Path | None, query: str) -> Navigation:
    """Symbols named like ``query``; for a name path (``Shape.area``), those named like its last
    name whose containers or module path end with the rest."""
    parts = name_parts(query)
    if not parts or not any(c.isalnum() or c in "_$" for c in parts[-1]):
        asked = (
            f"; {query!r} does not end with one (servers match names, not patterns)" if query.strip() else ""
        )
        raise ToolError(
            f"workspaceSymbol needs query: the name, or part of it, to look for{asked}. "
            "To list a file's symbols, use documentSymbol with filePath."
        )
    hits = await workspace_symbols(bridge, sources, parts[-1], path)
    if len(parts) > 1:  # a name path: the server is asked for its last name
        named = hits.symbols
        hits.symbols = await _within(bridge, sources, hits, query)
        if not hits.symbols:
            message = f"No symbols match {query!r}"
            if named:
                others = ", ".join(f"{s.name} ({sources.relative(s.path)})" for s in named[:5])
                more = f" and {len(named) - 5} more" if len(named) > 5 else ""
                message += f"; {parts[-1]!r} alone matches {others}{more}"
            return _empty("workspaceSymbol", query, message, hits)
    if not hits.symbols:
        where = f" in the first {MAX_PROJECTS} projects" if hits.unsearched else ""
        return _empty("workspaceSymbol", query, f"No symbols match {query!r}{where}", hits)
    head = f"{fmt.plural(len(hits.symbols), 'symbol')} match {query!r}:"
    lines, metadata = fmt.symbol_list(sources, hits.symbols, head)
    return _finish("workspaceSymbol", query, lines, metadata, hits)


async def _within(bridge: Bridge, sources: Sources, hits: Hits, wanted: str) -> list[Symbol]:
    """Of ``hits`` (named like ``wanted``'s last name), those whose containers or module path end
    with the rest of ``wanted``; a symbol the server names no container of takes its chain from
    documentSymbol of its file (asked once per such file)."""
    bare = {s.path for s in hits.symbols if len(s.chain) == 1}
    chains = {
        (s.path, s.selection.start.line, s.chain[-1]): s.chain for s in await declared(bridge, bare, hits)
    }
    named = [
        replace(s, chain=chains.get((s.path, s.selection.start.line, s.chain[-1]), s.chain))
        for s in hits.symbols
    ]
    return match(named, wanted, sources, within=True)


def _finish(
    operation: str, subject: str, lines: list[str], metadata: dict[str, Any], hits: Hits
) -> Navigation:
    count = len(hits.symbols) if metadata else 0
    lines = fmt.with_notes(lines, hits.complete, hits.notes, bool(count))
    notes = hits.notes
    if hits.unsearched:  # asking again later would not search them: not "Nothing found yet"
        lines += ["", f"({hits.unsearched}.)"]
        notes = [*notes, hits.unsearched]
    complete = hits.complete and not hits.unsearched
    data = {"operation": operation, "count": count, "complete": complete, "notes": notes}
    return Navigation(f"{operation} {subject}", "\n".join(lines), {**data, **metadata})


def _empty(operation: str, subject: str, message: str, hits: Hits) -> Navigation:
    return _finish(operation, subject, [f"{message}."], {}, hits)


class Lsp(Tool[LspParams]):
    id = "lsp"
    Params = LspParams
    permission = "lsp"

    async def run(self, params: LspParams, ctx: ToolContext) -> ToolResult:
        path: Path | None = None
        hidden = read_denied(ctx)
        if params.filePath:
            path = await ctx.authorize(params.filePath, "lsp", f"{params.operation} in {params.filePath}")
            if not path.exists() and not in_editor(ctx.env.bridge, path):
                raise ToolError(_missing(path, ctx))
            if hidden is not None:
                refuse_denied(ctx, path, hidden)
        else:  # a question about the whole workspace: its pattern is "*"
            what = params.query or params.symbol
            title = f"{params.operation}{f' {what!r}' if what else ''} in the workspace"
            await ctx.ask(PermissionRequest("lsp", ["*"], ["*"], title))
        answer = await navigate(
            ctx.env.bridge,
            ctx.root,
            params.operation,
            path=path,
            line=params.line,
            character=params.character,
            symbol=params.symbol,
            query=params.query,
            hidden=hidden,
        )
        return ToolResult(answer.title, answer.text, answer.metadata)
