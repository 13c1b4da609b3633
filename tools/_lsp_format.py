"""What the model reads from the lsp tool, and the structured copy editors get in metadata.

Locations: a count line, then ``path:line:col  source line`` (workspace-relative, 1-based),
grouped by file, capped with a note. Calls: the prepared item, then each caller or callee as
``name (kind) path:line:col`` with its call sites. Positions in metadata are 1-based too.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from lsp_bridge import Span
from lsp_bridge.documents import from_utf16, to_utf16

from ._lsp_resolve import Symbol, kind_name
from ._lsp_source import Sources, shown

#: Locations, symbols, calls or diagnostics shown to the model; the rest is counted in a note.
LIMIT = 100
SEVERITY = {1: "error", 2: "warning", 3: "info", 4: "hint"}


@dataclass
class Navigation:
    """The answer: ``text`` for the model, ``metadata`` (1-based, workspace-relative) for editors."""

    title: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict[str, Any])


def with_notes(lines: list[str], complete: bool, notes: list[str], found: bool) -> list[str]:
    """Never a bare "no results" from a server that was still loading."""
    if complete:
        return lines
    why = "; ".join(dict.fromkeys(notes)) or "a language server was still loading"  # each once
    if found:
        return [*lines, "", f"(The answer may be incomplete: {why}.)"]
    return [f"Nothing found yet, but the answer may be incomplete: {why}. Ask again in a moment.", *lines]


def plural(count: int, one: str, many: str | None = None) -> str:
    return f"{count} {one if count == 1 else many or one + 's'}"


def span(sources: Sources, path: Path, rng: lsp.Range) -> dict[str, int]:
    return {
        "line": rng.start.line + 1,
        "character": sources.column(path, rng.start),
        "endLine": rng.end.line + 1,
        "endCharacter": sources.column(path, rng.end),
    }


def where(sources: Sources, path: Path, pos: lsp.Position) -> str:
    return f"{sources.relative(path)}:{pos.line + 1}:{sources.column(path, pos)}"


def entry(sources: Sources, path: Path, pos: lsp.Position, indent: str = "") -> str:
    text = shown(sources.line(path, pos.line))
    return f"{indent}{where(sources, path, pos)}  {text}".rstrip()


def capped(shown_count: int, total: int, noun: str) -> list[str]:
    if shown_count >= total:
        return []
    return [f"(Showing {shown_count} of {total} {noun}; the full list is in the metadata.)"]


def locations(
    sources: Sources, found: list[Span], one: str, many: str, subject: str
) -> tuple[list[str], dict[str, Any]]:
    """Lines for a list of locations, sorted by file then position, a blank line between files.

    Answers can hold thousands of locations: they are sorted once (by URI, which usually sorts
    the files as their names do), each file is named and read once, and the metadata of all
    locations is one comprehension when, as usual, no column needs converting."""
    ordered = sorted(found)  # by URI, then position
    files = sources.files(list(dict.fromkeys([span_[0] for span_ in ordered])))
    names = [relative for relative, _text in files.values()]
    if sorted(names) != names:  # some URIs sort apart from their names
        ordered.sort(key=lambda span_: (files[span_[0]][0], span_))
    metadata = _rows(files, ordered)
    lines = [f"{plural(len(found), one, many)} {subject} in {plural(len(files), 'file')}:"]
    uri = None
    for span_, row in zip(ordered[:LIMIT], metadata, strict=False):
        relative, text = files[span_[0]]
        if span_[0] != uri:
            uri = span_[0]
            lines.append("")
        line = text[span_[1]] if span_[1] < len(text) else ""
        lines.append(f"{relative}:{row['line']}:{row['character']}  {shown(line)}".rstrip())
    if len(found) > LIMIT:
        lines += ["", *capped(LIMIT, len(found), many)]
    return lines, {"locations": metadata, "files": len(files), "capped": len(found) > LIMIT}


def _rows(files: dict[str, tuple[str, list[str]]], ordered: list[Span]) -> list[dict[str, Any]]:
    """Metadata for ``ordered`` in ``files`` (by URI: name, lines): 1-based, columns in code
    points, clamped to the line."""
    try:
        # Usually each location is a name on one ASCII line of its file: no conversion at all.
        rows = [
            {
                "path": file[0],
                "line": line + 1,
                "character": character + 1,
                "endLine": end_line + 1,
                "endCharacter": end_character + 1,
            }
            for uri, line, character, end_line, end_character in ordered
            if end_line == line
            and character <= end_character <= len(start := (file := files[uri])[1][line])
            and start.isascii()
        ]
        if len(rows) == len(ordered):
            return rows
    except IndexError:  # a line past the end: the server's text is not the file's
        pass
    rows = []
    for uri, line, character, end_line, end_character in ordered:
        relative, text = files[uri]
        rows.append(
            {
                "path": relative,
                "line": line + 1,
                "character": _column(text, line, character),
                "endLine": end_line + 1,
                "endCharacter": _column(text, end_line, end_character),
            }
        )
    return rows


def _column(text: list[str], line: int, character: int) -> int:
    """The 1-based code point column of a UTF-16 one on ``text[line]``; the server's own where
    the line is not known (a file that cannot be read, a line past its end)."""
    return from_utf16(text[line], character) + 1 if line < len(text) else character + 1


def item_line(sources: Sources, item: lsp.CallHierarchyItem) -> str:
    relative, path = sources.named(item.uri)
    name = item_name(item, relative, path)
    return f"{name} ({kind_name(item.kind)}) {where(sources, path, item.selection_range.start)}"


def item_name(item: lsp.CallHierarchyItem, relative: str, path: Path) -> str:
    """The item's name without its kind or the absolute path of its file: a module calling at
    its top level is ``(module) bom.py`` to basedpyright and the file's absolute path to tsgo."""
    kind = f"({kind_name(item.kind)}) "
    name = item.name.removeprefix(kind) if item.name.startswith(kind) else item.name
    return relative if name == str(path) else name


def item_data(sources: Sources, item: lsp.CallHierarchyItem) -> dict[str, Any]:
    relative, path = sources.named(item.uri)
    start = item.selection_range.start
    return {
        "name": item_name(item, relative, path),
        "kind": kind_name(item.kind),
        "path": sources.relative(path),
        "line": start.line + 1,
        "character": sources.column(path, start),
        "detail": item.detail or "",
    }


def other(call: lsp.CallHierarchyIncomingCall | lsp.CallHierarchyOutgoingCall) -> lsp.CallHierarchyItem:
    """The caller of an incoming call, the callee of an outgoing one."""
    return call.from_ if isinstance(call, lsp.CallHierarchyIncomingCall) else call.to


def calls(
    sources: Sources,
    item: lsp.CallHierarchyItem,
    found: Sequence[lsp.CallHierarchyIncomingCall | lsp.CallHierarchyOutgoingCall],
    incoming: bool,
) -> tuple[list[str], dict[str, Any], int]:
    """The item, then its callers (``incoming``: call sites in the caller) or callees (call sites
    in the item).

    Overloads of one callee called at the same places (``sum`` in typeshed) are shown once, and
    so is a call site a server repeats (typescript-language-server and tsgo name a call of an
    overloaded method once per overload)."""
    noun = ("caller", "callers") if incoming else ("callee", "callees")
    groups: dict[tuple[str, tuple[tuple[int, int], ...]], list[lsp.CallHierarchyItem]] = {}
    sites: dict[tuple[str, tuple[tuple[int, int], ...]], Sequence[lsp.Range]] = {}
    data: list[dict[str, Any]] = []
    for call in found:
        called = other(call)
        site_path = sources.named(called.uri if incoming else item.uri)[1]
        ranges = [
            _at_name(sources, site_path, rng, (item if incoming else called).name)
            for rng in _distinct(call.from_ranges)
        ]
        key = (called.name, tuple((r.start.line, r.start.character) for r in ranges))
        groups.setdefault(key, []).append(called)
        sites[key] = ranges
        data.append(
            {
                **item_data(sources, called),
                "fromPath": sources.relative(site_path),
                "fromRanges": [span(sources, site_path, rng) for rng in ranges],
            }
        )
    files = {sources.named(others[0].uri)[0] for others in groups.values()}
    head = f"{plural(len(groups), *noun)} in {plural(len(files), 'file')}:" if groups else f"no {noun[1]}"
    lines = [item_line(sources, item), head]
    for key, others in list(groups.items())[:LIMIT]:
        more = f" (and {plural(len(others) - 1, 'other overload')})" if len(others) > 1 else ""
        lines.append(f"  {item_line(sources, others[0])}{more}")
        site_path = sources.named(others[0].uri if incoming else item.uri)[1]
        for rng in sites[key][:10]:
            lines.append(entry(sources, site_path, rng.start, "      called at "))
        if len(sites[key]) > 10:
            lines.append(f"      ... and {len(sites[key]) - 10} more call sites")
    lines += capped(min(len(groups), LIMIT), len(groups), noun[1])
    metadata = {"item": item_data(sources, item), "calls": data, "capped": len(groups) > LIMIT}
    return lines, metadata, len(groups)


def _at_name(sources: Sources, path: Path, rng: lsp.Range, name: str) -> lsp.Range:
    """A call site from its callee's name on: typescript-language-server's and tsgo's outgoing
    calls start at the called expression (the ``p`` of ``p.move(1)``, lines before ``.move`` in a
    chain), their incoming calls and the other servers' answers at the name, left as they are."""
    end = rng.end
    line = sources.line(path, end.line)
    stop = from_utf16(line, end.character)
    begin = stop - len(name)
    if (
        begin < 0
        or line[begin:stop] != name
        or (begin and (line[begin - 1].isalnum() or line[begin - 1] in "_$"))
    ):
        return rng
    start = lsp.Position(line=end.line, character=to_utf16(line, begin))
    if (start.line, start.character) <= (rng.start.line, rng.start.character):
        return rng
    return lsp.Range(start=start, end=end)


def _distinct(ranges: Sequence[lsp.Range]) -> Sequence[lsp.Range]:
    """Each range once, in order."""
    keys = [(r.start.line, r.start.character, r.end.line, r.end.character) for r in ranges]
    if len(set(keys)) == len(keys):
        return ranges
    return list({key: rng for key, rng in zip(keys, ranges, strict=True)}.values())


def symbol_data(sources: Sources, symbol: Symbol) -> dict[str, Any]:
    return {
        "name": symbol.chain[-1],
        "container": ".".join(symbol.chain[:-1]),
        "kind": kind_name(symbol.kind),
        "path": sources.relative(symbol.path),
        "line": symbol.selection.start.line + 1,
        "character": sources.column(symbol.path, symbol.selection.start),
    }


def outline(sources: Sources, path: Path, symbols: list[Symbol]) -> tuple[list[str], dict[str, Any]]:
    """documentSymbol as an indented outline: ``name (kind) line:col``."""
    lines = [f"{plural(len(symbols), 'symbol')} in {sources.relative(path)}:"]
    for symbol in symbols[: LIMIT * 3]:
        start = symbol.selection.start
        indent = "  " * len(symbol.chain)
        column = sources.column(path, start)
        lines.append(f"{indent}{symbol.chain[-1]} ({kind_name(symbol.kind)}) {start.line + 1}:{column}")
    lines += capped(min(len(symbols), LIMIT * 3), len(symbols), "symbols")
    data = [symbol_data(sources, s) for s in symbols]
    return lines, {"symbols": data, "capped": len(symbols) > LIMIT * 3}


def symbol_list(sources: Sources, symbols: list[Symbol], head: str) -> tuple[list[str], dict[str, Any]]:
    """Symbols from several files: ``Container.name (kind) path:line:col  source line``."""
    ordered = sorted(symbols, key=lambda s: (sources.relative(s.path), s.selection.start.line))
    lines = [head]
    for symbol in ordered[:LIMIT]:
        start = symbol.selection.start
        lines.append(f"  {symbol.name} ({kind_name(symbol.kind)}) {entry(sources, symbol.path, start)}")
    lines += capped(min(len(ordered), LIMIT), len(ordered), "symbols")
    return lines, {"symbols": [symbol_data(sources, s) for s in ordered], "capped": len(ordered) > LIMIT}


def hover_text(hovers: list[lsp.Hover]) -> str:
    """The server's markdown as text (HTML entities that some servers put in docstrings decoded)."""
    parts: list[str] = []
    for hover in hovers:
        contents = hover.contents
        for part in (
            contents if isinstance(contents, Sequence) and not isinstance(contents, str) else [contents]
        ):
            if isinstance(part, lsp.MarkupContent | str):
                parts.append(part if isinstance(part, str) else part.value)
            elif isinstance(part, lsp.MarkedStringWithLanguage):
                parts.append(f"```{part.language}\n{part.value}\n```")
    text = "\n\n".join(p.strip() for p in parts if p.strip())
    return html.unescape(text).replace("\xa0", " ")


def diagnostics(
    sources: Sources, found: list[tuple[Path, lsp.Diagnostic]], checked: int
) -> tuple[list[str], dict[str, Any]]:
    """Diagnostics, errors first: ``path:line:col  severity: message [code] (source)``."""
    ordered = sorted(
        found,
        key=lambda f: (f[1].severity or 1, sources.relative(f[0]), f[1].range.start.line),
    )
    counts: dict[str, int] = {}
    for _path, diag in ordered:
        name = SEVERITY.get(diag.severity or 1, "error")
        counts[name] = counts.get(name, 0) + 1
    files = len({path for path, _ in ordered})
    summary = ", ".join(plural(n, name) for name, n in counts.items())
    lines = [f"{summary} in {plural(files, 'file')} (checked {plural(checked, 'file')}):"]
    data: list[dict[str, Any]] = []
    for path, diag in ordered:
        severity = SEVERITY.get(diag.severity or 1, "error")
        code = f" [{diag.code}]" if diag.code not in (None, "") else ""
        source = f" ({diag.source})" if diag.source else ""
        message = diag.message.replace("\n", " ")
        if len(data) < LIMIT:
            lines.append(f"{where(sources, path, diag.range.start)}  {severity}: {message}{code}{source}")
            lines.append(f"    | {shown(sources.line(path, diag.range.start.line))}")
        data.append(
            {
                "path": sources.relative(path),
                **span(sources, path, diag.range),
                "severity": severity,
                "message": diag.message,
                "code": diag.code,
                "source": diag.source,
            }
        )
    lines += capped(min(len(ordered), LIMIT), len(ordered), "diagnostics")
    return lines, {"diagnostics": data, "files": files, "capped": len(ordered) > LIMIT}
