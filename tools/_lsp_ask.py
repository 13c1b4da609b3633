"""The lsp tool's operations asked at one place: definitions, references, implementations, hover
and call hierarchy.

The place comes from ``symbol`` (with or without ``line``), ``line`` alone (the first name the
server answers for) or ``line`` and ``character`` (exactly there, refused on whitespace); the
answer is one ``Reply``, then the target line, notes and metadata (``_answer``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from lsp_bridge import Answer, Bridge
from lsp_bridge.documents import to_utf16

from . import _lsp_format as fmt
from ._lsp_format import Navigation
from ._lsp_read_rules import UNQUOTED, hover_or_why_not, unquoted
from ._lsp_resolve import Ambiguous, Target, check_line, describe_line, name_parts, on_line, resolve_symbol
from ._lsp_source import KEYWORDS, Sources, name_at, names_on
from .base import ToolError

#: (one, many, preposition) for the location operations.
NOUNS = {
    "goToDefinition": ("definition", "definitions", "of"),
    "findReferences": ("reference", "references", "to"),
    "goToImplementation": ("implementation", "implementations", "of"),
}
#: How many names on a line are tried when only the line is given.
LINE_TRIES = 6


@dataclass(frozen=True)
class Question:
    """What was asked: 1-based ``line``/``character`` as the model gives them."""

    operation: str
    path: Path | None = None
    line: int | None = None
    character: int | None = None
    symbol: str | None = None


@dataclass
class Reply:
    """One operation's answer at one target, before the target line and notes are added."""

    lines: list[str]
    metadata: dict[str, Any]
    count: int
    complete: bool
    notes: list[str]
    #: The server knew the name (a call hierarchy item with no callers still resolves, and so
    #: does a name whose results are all in files the read rules deny).
    resolved: bool
    #: The whole answer was left out because of the read rules: a hover, or every result (no
    #: "what is on the line" added: the name was right).
    withheld: bool = False


async def at_position(bridge: Bridge, sources: Sources, q: Question) -> Navigation:
    """Answer ``q`` at the place it names; candidates instead when its symbol is ambiguous."""
    path, line, character, symbol = q.path, q.line, q.character, q.symbol
    if path is None and symbol is None:
        raise ToolError(f"{q.operation} needs a place: filePath with line (and character), or symbol.")
    if path is None:
        if line is not None:
            raise ToolError("line needs filePath; or give only symbol to look it up in the workspace.")
        found = await resolve_symbol(bridge, sources, symbol or "", None)
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
        return await resolve_symbol(bridge, sources, symbol, path)
    line = q.line - 1
    check_line(sources, path, line)
    last = (name_parts(symbol) or (symbol,))[-1]
    name = on_line(sources, path, line, last, None if q.character is None else q.character - 1)
    if name is not None:
        text = sources.line(path, line)
        return Target(path, lsp.Position(line=line, character=to_utf16(text, name.column)), last)
    found = await resolve_symbol(bridge, sources, symbol, path)
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
        where = "past the end of" if column >= len(text) else "whitespace on"
        raise ToolError(
            f"Character {column + 1} is {where} line {line + 1}, so there is nothing to ask about. "
            f"{describe_line(sources, path, line)}\n"
            "Pass symbol with the name (and this line) instead of counting characters."
        )
    return Target(path, lsp.Position(line=line, character=to_utf16(text, column)), hit.text if hit else "")


async def _first_on_line(
    bridge: Bridge, sources: Sources, operation: str, path: Path, line: int
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
    reply.lines = [f"No {operation} result for any name on line {line + 1} (tried {', '.join(tried)})."]
    return _answer(operation, sources, target, reply)  # which adds what is on the line


async def _ask(bridge: Bridge, sources: Sources, operation: str, target: Target) -> Reply:
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
        empty = f"No {many} {prep} {subject}."
        return _reply(lines, metadata, len(found), answer, empty, resolved=bool(answer.value))
    if operation == "hover":
        if sources.hidden is None:
            hovers, why, files = await bridge.hover(path, pos), None, []
        else:
            hovers, why, files = await hover_or_why_not(bridge, sources, target, sources.hidden)
        if why is not None:
            withheld = f"No hover shown for {subject}: {why}"
            return _reply([], {"withheld": True}, 0, hovers, withheld, resolved=True)
        text, cut = fmt.hover_text(hovers.value), False
        if files:
            text, cut = await unquoted(text, sources, files)
        empty = f"No hover information for {subject}."
        lines = [text, "", UNQUOTED] if cut else [text]
        return _reply(
            lines, {"unquoted": True} if cut else {}, 1 if text else 0, hovers, empty, resolved=bool(text)
        )
    prepared = await bridge.prepare_call_hierarchy(path, pos)
    items = prepared.value
    if sources.hidden is not None:
        items = [item for item in items if sources.shows_uri(item.uri)]
    if operation == "prepareCallHierarchy" or not items:
        lines = [fmt.item_line(sources, item) for item in items]
        data = {"items": [fmt.item_data(sources, item) for item in items]}
        empty = (
            f"The function or method at {subject} is in a file the read rules deny."
            if prepared.value
            else f"No function or method at {subject} for a call hierarchy."
        )
        return _reply(lines, data, len(items), prepared, empty, resolved=bool(prepared.value))
    lines, metadata, count = [], {"calls": [], "items": []}, 0
    notes, complete = list(prepared.notes), prepared.complete
    for item in items:
        ask = bridge.incoming_calls if operation == "incomingCalls" else bridge.outgoing_calls
        calls = await ask(item)
        found = calls.value
        if sources.hidden is not None:
            found = [call for call in found if sources.shows_uri(fmt.other(call).uri)]
        part, data, shown = fmt.calls(sources, item, found, operation == "incomingCalls")
        lines += part
        metadata["calls"] += data["calls"]
        metadata["items"].append(data["item"])
        count += shown
        complete &= calls.complete
        notes += calls.notes
    return Reply(lines, metadata, count, complete, notes, resolved=True)


def _quoted(name: str) -> str:
    return f"{name} at " if name else ""


def _reply(
    lines: list[str], metadata: dict[str, Any], count: int, answer: Answer[Any], empty: str, *, resolved: bool
) -> Reply:
    """``resolved``: the server answered for the name, even if only in files the read rules deny."""
    return Reply(
        lines if count else [empty],
        metadata,
        count,
        answer.complete,
        list(answer.notes),
        resolved,
        withheld=resolved and not count,
    )


def _answer(operation: str, sources: Sources, target: Target, reply: Reply) -> Navigation:
    pos = target.position
    title = f"{operation} {target.name or ''} {fmt.where(sources, target.path, pos)}".replace("  ", " ")
    lines = list(reply.lines)
    if target.note:
        lines.insert(1 if reply.count else 0, f"({target.note}.)")
    if not reply.count and reply.complete and target.complete and not reply.withheld:
        lines.append(describe_line(sources, target.path, pos.line))
    complete = reply.complete and target.complete
    notes = list(dict.fromkeys([*target.notes, *reply.notes]))
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


def _ambiguous(operation: str, sources: Sources, found: Ambiguous) -> Navigation:
    head = (
        f"{found.symbol!r} matches {len(found.candidates)} symbols; nothing was asked. "
        "Call again with one of these as symbol (the longer name), or with its filePath and line:"
    )
    lines, metadata = fmt.symbol_list(sources, found.candidates, head)
    lines = fmt.with_notes(lines, found.complete, found.notes, True)
    data = {"operation": operation, "count": 0, "complete": found.complete, "notes": found.notes}
    data |= {"ambiguous": True, "candidates": metadata["symbols"]}
    return Navigation(f"{operation} {found.symbol} (ambiguous)", "\n".join(lines), data)
