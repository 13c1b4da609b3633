"""lsp: definitions, references, implementations, calls, symbols, hover and diagnostics from the
language servers, addressable by symbol name, in text a model reads and metadata an editor uses.

``navigate`` is the whole question (resolve the file and the position or symbol, ask, format)
as a plain async function over a ``Bridge``; the ``Lsp`` tool adds only permissions and the
file-not-found suggestions. The editor server's navigate command calls ``navigate`` too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from lsprotocol import types as lsp
from pydantic import BaseModel, ConfigDict, Field

from lsp_bridge import Answer, Bridge, BridgeError, NoServerForFile, UnsupportedOperation
from lsp_bridge.documents import to_utf16

from . import _lsp_format as fmt
from ._lsp_diagnostics import diagnostics
from ._lsp_format import Navigation
from ._lsp_resolve import (
    Ambiguous,
    Hits,
    Target,
    check_line,
    describe_line,
    file_symbols,
    match,
    on_line,
    resolve_symbol,
    workspace_symbols,
)
from ._lsp_source import KEYWORDS, Sources, name_at, names_on
from .base import Tool, ToolError, ToolResult
from .context import ToolContext, real_path
from .permission import PermissionDenied, PermissionRequest, wildcard_any, wildcard_match
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
#: (one, many, preposition) for the location operations.
NOUNS = {
    "goToDefinition": ("definition", "definitions", "of"),
    "findReferences": ("reference", "references", "to"),
    "goToImplementation": ("implementation", "implementations", "of"),
}
POSITIONAL = {*NOUNS, "hover", "prepareCallHierarchy", "incomingCalls", "outgoingCalls"}
#: How many names on a line are tried when only the line is given.
LINE_TRIES = 6
ALTERNATIVES = {
    "implementation_provider": "use findReferences on the base class or method, or grep for it",
    "call_hierarchy_provider": "use findReferences to find where it is called, or grep",
}


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
    query: str | None = Field(default=None, description="The name (or part of it) for workspaceSymbol.")


@dataclass(frozen=True)
class Question:
    """What was asked: 1-based ``line``/``character`` as the model gives them."""

    operation: Operation
    path: Path | None = None
    line: int | None = None
    character: int | None = None
    symbol: str | None = None
    query: str | None = None


@dataclass
class Reply:
    """One operation's answer at one target, before the target line and notes are added."""

    lines: list[str]
    metadata: dict[str, Any]
    count: int
    complete: bool
    notes: list[str]
    #: The server knew the name (a call hierarchy item with no callers still resolves).
    resolved: bool
    #: A hover left out because of the read rules (no "what is on the line" added).
    withheld: bool = False


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
    question = Question(operation, path, line, character, symbol, query)
    if path is not None and not path.is_file():
        raise ToolError(f"{sources.relative(path)} is not a file; give the lsp tool a source file.")
    try:
        if operation == "diagnostics":
            answer = await diagnostics(bridge, sources, path)
        elif operation == "documentSymbol":
            answer = await _document_symbols(bridge, sources, path, symbol)
        elif operation == "workspaceSymbol":
            answer = await _workspace_symbols(bridge, sources, path, query or symbol)
        else:
            answer = await _at_position(bridge, sources, question)
    except UnsupportedOperation as error:
        raise ToolError(_unsupported(error, operation, path)) from None
    except NoServerForFile as error:
        raise ToolError(_no_server(bridge, error, path)) from None
    except BridgeError as error:
        raise ToolError(f"The language server could not answer {operation}: {error}") from None
    if sources.left_out:
        answer.text += (
            f"\n\n({fmt.plural(sources.left_out, 'result')} in files the read rules deny "
            f"{'was' if sources.left_out == 1 else 'were'} left out.)"
        )
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


async def _workspace_symbols(
    bridge: Bridge, sources: Sources, path: Path | None, query: str | None
) -> Navigation:
    if not query:
        raise ToolError("workspaceSymbol needs query: the name, or part of it, to look for.")
    hits = await workspace_symbols(bridge, sources, query, path)
    if not hits.symbols:
        return _empty("workspaceSymbol", query, f"No symbols match {query!r}", hits)
    head = f"{fmt.plural(len(hits.symbols), 'symbol')} match {query!r}:"
    lines, metadata = fmt.symbol_list(sources, hits.symbols, head)
    return _finish("workspaceSymbol", query, lines, metadata, hits)


async def _at_position(bridge: Bridge, sources: Sources, q: Question) -> Navigation:
    path, line, character, symbol = q.path, q.line, q.character, q.symbol
    if path is None and symbol is None:
        raise ToolError(f"{q.operation} needs a place: filePath with line (and character), or symbol.")
    if path is None:
        if line is not None:
            raise ToolError("line needs filePath; or give only symbol to look it up in the workspace.")
        found = await resolve_symbol(bridge, sources, sources.root, symbol or "", None)
    elif symbol is not None:
        found = await _symbol_near_line(bridge, sources, path, q)
    elif line is None:
        raise ToolError(f"{q.operation} needs line (and character) or symbol as well as filePath.")
    elif character is None:
        return await _first_on_line(bridge, sources, q.operation, path, line - 1)
    else:
        found = _exact(sources, path, line - 1, character - 1)
    if isinstance(found, Ambiguous):
        return _ambiguous(q.operation, sources, found)
    reply = await _ask(bridge, sources, q.operation, found)
    return _answer(q.operation, sources, found, reply)


async def _symbol_near_line(bridge: Bridge, sources: Sources, path: Path, q: Question) -> Target | Ambiguous:
    """``symbol`` on ``line`` if it is written there; otherwise looked up in the file."""
    symbol = q.symbol or ""
    if q.line is None:
        return await resolve_symbol(bridge, sources, sources.root, symbol, path)
    line = q.line - 1
    check_line(sources, path, line)
    last = symbol.replace("::", ".").replace("/", ".").split(".")[-1]
    name = on_line(sources, path, line, last, None if q.character is None else q.character - 1)
    if name is not None:
        text = sources.line(path, line)
        return Target(path, lsp.Position(line=line, character=to_utf16(text, name.column)), last)
    found = await resolve_symbol(bridge, sources, sources.root, symbol, path)
    if isinstance(found, Target):
        used = fmt.where(sources, found.path, found.position)
        found.note = f"{symbol!r} is not on line {q.line}; used the declaration at {used}"
    return found


def _exact(sources: Sources, path: Path, line: int, column: int) -> Target:
    """A line and column from the model: refused with what is on the line if it points at nothing."""
    check_line(sources, path, line)
    text = sources.line(path, line)
    hit = name_at(text, column)
    if hit is None and (column >= len(text) or text[column].isspace()):
        where = "past the end of" if column > len(text) else "whitespace on"
        raise ToolError(
            f"Character {column + 1} is {where} line {line + 1}, so there is nothing to ask about. "
            f"{describe_line(sources, path, line)}\n"
            "Pass symbol with the name (and this line) instead of counting characters."
        )
    return Target(path, lsp.Position(line=line, character=to_utf16(text, column)), hit.text if hit else "")


async def _first_on_line(
    bridge: Bridge, sources: Sources, operation: Operation, path: Path, line: int
) -> Navigation:
    """No column: the first name on the line that the server resolves."""
    check_line(sources, path, line)
    text = sources.line(path, line)
    names = [n for n in names_on(text) if n.text not in KEYWORDS] or names_on(text)
    if not names:
        raise ToolError(f"There is no name to ask about. {describe_line(sources, path, line)}")
    tried: list[str] = []
    reply: Reply | None = None
    target: Target | None = None
    for name in names[:LINE_TRIES]:
        target = Target(path, lsp.Position(line=line, character=to_utf16(text, name.column)), name.text)
        reply = await _ask(bridge, sources, operation, target)
        tried.append(name.text)
        if reply.resolved:
            if len(tried) > 1:
                target.note = f"the first name on line {line + 1} with an answer; tried {', '.join(tried)}"
            return _answer(operation, sources, target, reply)
    assert reply is not None and target is not None
    reply.lines = [
        f"No {operation} result for any name on line {line + 1} (tried {', '.join(tried)}). "
        f"{describe_line(sources, path, line)}"
    ]
    return _answer(operation, sources, target, reply)


async def _ask(bridge: Bridge, sources: Sources, operation: Operation, target: Target) -> Reply:
    path, pos = target.path, target.position
    subject = f"{_quoted(target.name)}{fmt.where(sources, path, pos)}"
    if operation in NOUNS:
        one, many, prep = NOUNS[operation]
        asks = {
            "goToDefinition": bridge.definition,
            "findReferences": bridge.references,
            "goToImplementation": bridge.implementation,
        }
        answer = await asks[operation](path, pos)
        found = answer.value
        if sources.hidden is not None:
            found = [span for span in found if sources.shows_uri(span[0])]
        lines, metadata = fmt.locations(sources, found, one, many, f"{prep} {subject}")
        return _reply(lines, metadata, len(found), answer, f"No {many} {prep} {subject}.")
    if operation == "hover":
        if sources.hidden is not None:
            return await _hover_where_shown(bridge, sources, target, subject)
        hovers = await bridge.hover(path, pos)
        text = fmt.hover_text(hovers.value)
        return _reply([text], {}, 1 if text else 0, hovers, f"No hover information for {subject}.")
    prepared = await bridge.prepare_call_hierarchy(path, pos)
    items = prepared.value
    if sources.hidden is not None:
        items = [item for item in items if sources.shows_uri(item.uri)]
    if operation == "prepareCallHierarchy" or not items:
        lines = [fmt.item_line(sources, item) for item in items]
        data = {"items": [fmt.item_data(sources, item) for item in items]}
        empty = f"No function or method at {subject} for a call hierarchy."
        return _reply(lines, data, len(items), prepared, empty)
    lines, metadata, count = [], {"calls": [], "items": []}, 0
    notes, complete = list(prepared.notes), prepared.complete
    for item in items:
        ask = bridge.incoming_calls if operation == "incomingCalls" else bridge.outgoing_calls
        calls = await ask(item)
        found = calls.value
        if sources.hidden is not None:
            found = [call for call in found if sources.shows_uri(_other(call).uri)]
        part, data, shown = fmt.calls(sources, item, found)
        lines += part
        metadata["calls"] += data["calls"]
        metadata["items"].append(data["item"])
        count += shown
        complete &= calls.complete
        notes += calls.notes
    return Reply(lines, metadata, count, complete, notes, resolved=True)


async def _hover_where_shown(bridge: Bridge, sources: Sources, target: Target, subject: str) -> Reply:
    """Hover when read rules deny some files: the server's text for a name defined in one of them
    is its signature, docstring or value, so it is withheld. Where the name is defined is asked
    together with the hover (one more request, only when a read rule denies something)."""
    path, pos = target.path, target.position
    hovers, defined = await asyncio.gather(
        bridge.hover(path, pos), bridge.definition(path, pos), return_exceptions=True
    )
    if isinstance(hovers, BaseException):
        raise hovers
    hidden = sources.hidden
    assert hidden is not None
    if isinstance(defined, BaseException):
        if not isinstance(defined, BridgeError):
            raise defined
        why = (
            f"where it is defined could not be checked ({defined}), and while read rules deny some "
            "files the lsp tool shows a hover only for names defined in files read may show."
        )
    elif any(hidden(sources.named(span[0])[0]) for span in defined.value):
        why = (
            "it is defined in a file the read rules deny, and the lsp tool shows no more than read "
            "would (the server's text would show its signature and docs from there)."
        )
    else:
        text = fmt.hover_text(hovers.value)
        return _reply([text], {}, 1 if text else 0, hovers, f"No hover information for {subject}.")
    lines = [f"No hover shown for {subject}: {why}"]
    return Reply(lines, {"withheld": True}, 0, hovers.complete, list(hovers.notes), True, withheld=True)


def _other(call: lsp.CallHierarchyIncomingCall | lsp.CallHierarchyOutgoingCall) -> lsp.CallHierarchyItem:
    """The caller of an incoming call, the callee of an outgoing one."""
    return call.from_ if isinstance(call, lsp.CallHierarchyIncomingCall) else call.to


def _quoted(name: str) -> str:
    return f"{name} at " if name else ""


def _reply(lines: list[str], metadata: dict[str, Any], count: int, answer: Answer[Any], empty: str) -> Reply:
    return Reply(lines if count else [empty], metadata, count, answer.complete, list(answer.notes), count > 0)


def _answer(operation: Operation, sources: Sources, target: Target, reply: Reply) -> Navigation:
    pos = target.position
    title = f"{operation} {target.name or ''} {fmt.where(sources, target.path, pos)}".replace("  ", " ")
    lines = list(reply.lines)
    if target.note:
        lines.insert(1 if reply.count else 0, f"({target.note}.)")
    if not reply.count and reply.complete and target.complete and not reply.withheld:
        lines.append(describe_line(sources, target.path, pos.line))
    complete = reply.complete and target.complete
    notes = [*target.notes, *reply.notes]
    lines = fmt.with_notes(lines, complete, notes, bool(reply.count))
    metadata = {
        "operation": operation,
        "count": reply.count,
        "complete": complete,
        "notes": notes,
        "target": {
            "path": sources.relative(target.path),
            "line": pos.line + 1,
            "character": sources.column(target.path, pos),
            "name": target.name,
        },
        **reply.metadata,
    }
    return Navigation(title, "\n".join(lines), metadata)


def _finish(
    operation: str, subject: str, lines: list[str], metadata: dict[str, Any], hits: Hits
) -> Navigation:
    count = len(hits.symbols) if metadata else 0
    lines = fmt.with_notes(lines, hits.complete, hits.notes, bool(count))
    data = {"operation": operation, "count": count, "complete": hits.complete, "notes": hits.notes}
    return Navigation(f"{operation} {subject}", "\n".join(lines), {**data, **metadata})


def _empty(operation: str, subject: str, message: str, hits: Hits) -> Navigation:
    return _finish(operation, subject, [f"{message}."], {}, hits)


def _ambiguous(operation: Operation, sources: Sources, found: Ambiguous) -> Navigation:
    head = (
        f"{found.symbol!r} matches {len(found.candidates)} symbols; nothing was asked. "
        "Call again with one of these as symbol (the longer name), or with its filePath and line:"
    )
    lines, metadata = fmt.symbol_list(sources, found.candidates, head)
    data = {"operation": operation, "count": 0, "ambiguous": True, "candidates": metadata["symbols"]}
    return Navigation(f"{operation} {found.symbol} (ambiguous)", "\n".join(lines), data)


def _unsupported(error: UnsupportedOperation, operation: Operation, path: Path | None) -> str:
    capability = "".join(w.capitalize() if i else w for i, w in enumerate(error.provider.split("_")))
    servers = ", ".join(error.servers)
    where = f" for {path.name}" if path else ""
    advice = ALTERNATIVES.get(error.provider, "use grep and read instead")
    return (
        f"{operation} is not supported by {servers}, the language server{where}: it does not offer "
        f"{capability}. Instead, {advice}."
    )


def _no_server(bridge: Bridge, error: NoServerForFile, path: Path | None) -> str:
    suffix = path.suffix if path else ""
    known = [s.name for s in bridge.registry.all() if suffix and suffix in s.extensions]
    if known:
        return (
            f"{error}. Known servers for {suffix} files that are not enabled: {', '.join(known)}; "
            f"enable one in lspilot.toml ([lsp.servers.{known[0]}] enabled = true)."
        )
    return (
        f"{error}: lspilot has no language server for {suffix or 'these'} files. Use grep and read instead."
    )


class Lsp(Tool[LspParams]):
    id = "lsp"
    Params = LspParams
    permission = "lsp"

    async def run(self, params: LspParams, ctx: ToolContext) -> ToolResult:
        path: Path | None = None
        hidden = read_denied(ctx)
        if params.filePath:
            path = await ctx.authorize(params.filePath, "lsp", f"{params.operation} in {params.filePath}")
            if not path.exists():
                raise ToolError(_missing(path, ctx))
            if hidden is not None and hidden(shown := ctx.relative(real_path(path))):
                raise PermissionDenied(
                    f"Permission denied: read {shown} (a read rule denies it), and the lsp tool shows "
                    "no more than read would. This is configured by the user; do not retry it."
                )
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


def read_denied(ctx: ToolContext) -> Callable[[str], bool] | None:
    """Whether the ``read`` rules deny a workspace-relative path (None when no rule denies
    anything, as by default: then nothing is checked)."""
    engine = ctx.env.permissions
    denies = [r.pattern for r in engine.rules if r.action == "deny" and wildcard_match("read", r.permission)]
    candidates = wildcard_any(denies)
    if candidates is None:
        return None
    fullmatch = candidates.fullmatch

    def hidden(relative: str) -> bool:
        return fullmatch(relative) is not None and engine.action("read", relative) == "deny"

    return hidden
