"""Where an lsp call points: a file and an LSP position, from a symbol's name path or a line.

Models name things better than they count columns. ``symbol`` is a name or a name path
(``Shape.area``, ``geometry/total_volume``, ``ns::f``) matched against documentSymbol in the
file, or against workspace/symbol hits (then documentSymbol in their files) without one. Several
matches are returned as candidates, never guessed between.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types as lsp
from rapidfuzz import fuzz, process

from lsp_bridge import Bridge, BridgeError
from lsp_bridge.documents import from_utf16, to_utf16

from ._lsp_source import KEYWORDS, Name, Sources, names_on, same_name, shown
from .base import ToolError

SEPARATORS = re.compile(r"::|[./#]")
NEAR_BUDGET = 5000
#: Projects (servers) asked for workspace symbols when no file is given.
MAX_PROJECTS = 8
SKIPPED_DIRS = frozenset({"node_modules", "__pycache__", "venv", "build", "dist", "target", "out"})


@dataclass(frozen=True)
class Symbol:
    """A declared symbol: its chain of names (containers, then its own), kind and name range."""

    chain: tuple[str, ...]
    kind: lsp.SymbolKind
    path: Path
    selection: lsp.Range
    detail: str = ""

    @property
    def name(self) -> str:
        return ".".join(self.chain)


@dataclass
class Target:
    """A resolved position, how it was chosen, and notes from the lookups that found it."""

    path: Path
    position: lsp.Position
    name: str
    note: str = ""
    complete: bool = True
    notes: list[str] = field(default_factory=list[str])


@dataclass
class Ambiguous:
    """``symbol`` named several symbols: the model picks one."""

    symbol: str
    candidates: list[Symbol]
    complete: bool = True
    notes: list[str] = field(default_factory=list[str])


@dataclass
class Hits:
    """Symbols from lookups, with the readiness of the servers that gave them."""

    symbols: list[Symbol] = field(default_factory=list[Symbol])
    complete: bool = True
    notes: list[str] = field(default_factory=list[str])
    #: The projects past ``MAX_PROJECTS`` that were not asked, said as a sentence ("" if none).
    #: Not a reason to ask again later, so kept apart from ``complete`` and ``notes``.
    unsearched: str = ""


def flatten(items: Sequence[lsp.DocumentSymbol | lsp.SymbolInformation], path: Path) -> list[Symbol]:
    """documentSymbol trees (or flat SymbolInformation) as a list, parents first."""
    found: list[Symbol] = []

    def walk(item: lsp.DocumentSymbol | lsp.SymbolInformation, parents: tuple[str, ...]) -> None:
        if isinstance(item, lsp.SymbolInformation):
            found.append(
                Symbol(
                    (*name_parts(item.container_name or ""), item.name), item.kind, path, item.location.range
                )
            )
            return
        chain = (*parents, item.name)
        found.append(Symbol(chain, item.kind, path, item.selection_range, item.detail or ""))
        for child in sorted(item.children or [], key=_start):
            walk(child, chain)

    for item in sorted(items, key=_start):
        walk(item, ())
    return found


def _start(item: lsp.DocumentSymbol | lsp.SymbolInformation) -> tuple[int, int]:
    start = item.location.range.start if isinstance(item, lsp.SymbolInformation) else item.range.start
    return (start.line, start.character)


def name_parts(name_path: str) -> tuple[str, ...]:
    """``Shape.area``, ``calc/total_area``, ``ns::f``, ``Cube#volume``: the names, outermost first."""
    return tuple(p for p in SEPARATORS.split(name_path.strip()) if p)


def module_parts(relative: str) -> tuple[str, ...]:
    """``pkg/calc.py`` -> (pkg, calc): a name path may start with the module or file."""
    parts = relative.replace("\\", "/").split("/")
    parts[-1] = parts[-1].split(".")[0]
    return tuple(p for p in parts if p not in ("", "__init__", "index", ".."))


def match(symbols: list[Symbol], wanted: str, sources: Sources, *, within: bool = False) -> list[Symbol]:
    """Symbols whose chain (optionally after their module path) ends with ``wanted``'s parts;
    exact case first, then ignoring case. Each declaration once. ``within``: only the containers
    are compared (``wanted`` without its last part, which the server matched as it matches names).

    A name in the chain may be a path itself: clangd names a method defined out of line
    ``Shape::area`` (inside ``geo``), which ``geo::Shape::area`` and ``Shape::area`` name."""
    parts = name_parts(wanted)[: -1 if within else None]
    if not parts:
        return []
    folds: tuple[Callable[[str], str], ...] = (same_name, lambda name: same_name(name).casefold())
    for fold in folds:
        key = tuple(fold(p) for p in parts)
        chosen: dict[tuple[Path, int, int], Symbol] = {}
        for symbol in symbols:
            full = (*module_parts(sources.relative(symbol.path)), *_chain_parts(symbol.chain))
            full = full[:-1] if within else full
            if tuple(fold(p) for p in full[-len(key) :]) == key:
                start = symbol.selection.start
                chosen.setdefault((symbol.path, start.line, start.character), symbol)
        if chosen:
            return list(chosen.values())
    return []


def _chain_parts(chain: tuple[str, ...]) -> tuple[str, ...]:
    """The names of a chain, its qualified names (``Shape::area``) split as name paths are."""
    if not any(SEPARATORS.search(name) for name in chain):
        return chain
    return tuple(part for name in chain for part in name_parts(name) or (name,))


def name_position(sources: Sources, symbol: Symbol) -> lsp.Position:
    """Where ``symbol``'s name is written: servers give the name range, or (workspace symbols of
    some servers) the whole declaration, which starts with ``export``, ``def``..."""
    name = symbol.chain[-1]
    start = symbol.selection.start
    pattern = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")
    for number in range(start.line, max(start.line, symbol.selection.end.line) + 1):
        line = sources.line(symbol.path, number)
        first = from_utf16(line, start.character) if number == start.line else 0
        found = pattern.search(line, first)
        if found:
            return lsp.Position(line=number, character=to_utf16(line, found.start()))
    return start


def suggestions(symbols: list[Symbol], wanted: str, limit: int = 5) -> list[Symbol]:
    by_name = {s.name: s for s in symbols}
    best = process.extract(wanted, list(by_name), scorer=fuzz.WRatio, limit=limit, score_cutoff=60)
    return [by_name[name] for name, _score, _ in best]


async def file_symbols(bridge: Bridge, path: Path) -> Hits:
    answer = await bridge.document_symbols(path)
    return Hits(flatten(answer.value, path), answer.complete, list(answer.notes))


async def workspace_symbols(bridge: Bridge, sources: Sources, query: str, near: Path | None) -> Hits:
    """workspace/symbol from the servers of ``near``, or of one file per language and project in
    the workspace (asked at once; ``MAX_PROJECTS`` at most, the others named in a note)."""
    hits = Hits()
    targets = [near] if near is not None else near_files(bridge, sources.root)
    if not targets:
        raise ToolError(
            f"No file in {sources.root} is handled by a language server, so there are no symbols to search; "
            "give filePath, or use grep."
        )
    if len(targets) > MAX_PROJECTS:
        others = ", ".join(sources.relative(path.parent) for path in targets[MAX_PROJECTS:])
        more = len(targets) - MAX_PROJECTS
        hits.unsearched = (
            f"{more} more {'project was' if more == 1 else 'projects were'} not searched ({others}); "
            "give filePath in one of them to search it"
        )
        targets = targets[:MAX_PROJECTS]
    answers = await asyncio.gather(
        *(bridge.workspace_symbols(query, near=path) for path in targets), return_exceptions=True
    )
    seen: set[tuple[Path, int, int]] = set()
    for path, answer in zip(targets, answers, strict=True):
        if isinstance(answer, BaseException):
            if not isinstance(answer, BridgeError) or len(targets) == 1:
                raise answer
            hits.notes.append(f"the project of {sources.relative(path)} was not searched: {answer}")
            hits.complete = False
            continue
        hits.complete &= answer.complete
        hits.notes += answer.notes
        for item in answer.value:
            location = item.location
            if isinstance(location, lsp.Location) and sources.shows_uri(location.uri):
                # (not a bare URI: no server here sends those; nor in a file read rules deny)
                chain = (*name_parts(item.container_name or ""), item.name)
                file = sources.canonical(sources.named(location.uri)[1])
                symbol = Symbol(chain, item.kind, file, location.range)
                start = name_position(sources, symbol)  # some servers give the whole declaration
                # two routes to one server, or two names of one file
                if (symbol.path, start.line, start.character) in seen:
                    continue
                seen.add((symbol.path, start.line, start.character))
                end = lsp.Position(line=start.line, character=start.character + len(item.name))
                hits.symbols.append(Symbol(chain, item.kind, symbol.path, lsp.Range(start=start, end=end)))
    return hits


def _walk(root: Path) -> Iterator[tuple[str, set[str], list[str]]]:
    """(folder, every name in it, its files) through the workspace: a bounded walk, shallow
    first; hidden, dependency and build folders skipped."""
    seen = 0
    for folder, dirs, files in os.walk(root):
        names = {*dirs, *files}
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS)
        yield folder, names, sorted(files)
        seen += len(files)
        if seen > NEAR_BUDGET:
            break


def workspace_files(root: Path) -> list[Path]:
    """Files in the workspace (``_walk``'s bounded walk)."""
    return [Path(folder, n) for folder, _names, files in _walk(root) for n in files]


def source_files(bridge: Bridge, root: Path) -> list[Path]:
    """Files in the workspace that a language server handles (``_walk``'s bounded walk)."""
    return [path for path in workspace_files(root) if bridge.registry.for_file(path)]


def near_files(bridge: Bridge, root: Path) -> list[Path]:
    """One file per language server and project in the workspace: where workspace/symbol is
    asked when no file is given. A monorepo's packages (each with its own pyproject.toml,
    tsconfig.json or compile_commands.json) are projects of their own, each with its own server
    process, as the bridge roots a file at its nearest root marker."""
    specs = [spec for spec in bridge.registry.all() if spec.enabled]
    projects: dict[str, dict[str, str]] = {}  # folder -> server -> its project's root
    outer = dict.fromkeys([spec.name for spec in specs], str(root))
    chosen: dict[tuple[str, str], Path] = {}
    for folder, names, files in _walk(root):
        around = projects.get(os.path.dirname(folder), outer) if folder != str(root) else outer
        here = projects[folder] = {
            spec.name: folder if not names.isdisjoint(spec.root_markers) else around[spec.name]
            for spec in specs
        }
        for name in files:
            for spec in bridge.registry.for_file(Path(name)):
                chosen.setdefault((spec.name, here[spec.name]), Path(folder, name))
    return list(dict.fromkeys(chosen.values()))


async def resolve_symbol(
    bridge: Bridge, sources: Sources, wanted: str, path: Path | None
) -> Target | Ambiguous:
    """The declaration ``wanted`` names, in ``path`` or anywhere in the workspace."""
    last = name_parts(wanted)[-1:] or (wanted,)
    if path is not None:
        hits = await file_symbols(bridge, path)
        where = sources.relative(path)
        pool = hits.symbols
    else:
        hits = await workspace_symbols(bridge, sources, last[0], None)
        where = "the workspace"
        files = {s.path for s in hits.symbols if s.chain[-1].casefold() == last[0].casefold()}
        pool = await declared(bridge, files, hits) or hits.symbols
    matches = _one_per_overload(match(pool, wanted, sources))
    if len(matches) > 1:
        unsearched = [hits.unsearched] if hits.unsearched else []
        return Ambiguous(wanted, matches, hits.complete and not unsearched, [*hits.notes, *unsearched])
    if not matches and path is not None and len(name_parts(wanted)) == 1:
        used = first_use(sources, path, last[0])
        if used is not None:
            note = f"{wanted} is not declared in {where}; used its first use, line {used.line + 1}"
            return Target(path, used, last[0], note, hits.complete, hits.notes)
    if not matches:
        raise ToolError(_missing(wanted, where, pool, hits, sources))
    symbol = matches[0]
    note = f"found in the first {MAX_PROJECTS} projects; {hits.unsearched}" if hits.unsearched else ""
    return Target(
        symbol.path, name_position(sources, symbol), symbol.chain[-1], note, hits.complete, hits.notes
    )


async def declared(bridge: Bridge, files: set[Path], hits: Hits) -> list[Symbol]:
    """The symbols of ``files`` from documentSymbol, each with its whole chain of containers
    (workspace/symbol may name none: typescript-language-server's methods); their readiness is
    added to ``hits``."""
    pool: list[Symbol] = []
    for file in sorted(files):
        found = await file_symbols(bridge, file)
        hits.complete &= found.complete
        hits.notes += found.notes
        pool += found.symbols
    return pool


def _one_per_overload(matches: list[Symbol]) -> list[Symbol]:
    """Declarations of one name in one scope that the server does not tell apart (TypeScript's
    overload signatures and their implementation, a property's getter and setter) as one: the
    last, which has the body (only it has callees). Overloads with details that differ (clangd:
    ``int (int)``, ``int (double)``) stay apart."""
    if len(matches) < 2:
        return matches
    last: dict[tuple[Path, tuple[str, ...], int, str], Symbol] = {}
    for symbol in sorted(matches, key=lambda s: (s.selection.start.line, s.selection.start.character)):
        last[(symbol.path, symbol.chain, symbol.kind, symbol.detail)] = symbol
    return list(last.values())


def first_use(sources: Sources, path: Path, name: str) -> lsp.Position | None:
    """Where ``name`` first appears as a whole word in ``path`` (an imported or used name)."""
    wanted = same_name(name)
    for number, line in enumerate(sources.lines(path)):
        found = next((n for n in names_on(line) if same_name(n.text) == wanted), None)
        if found is not None:
            return lsp.Position(line=number, character=to_utf16(line, found.column))
    return None


def _missing(wanted: str, where: str, pool: list[Symbol], hits: Hits, sources: Sources) -> str:
    message = f"No symbol named {wanted!r} in {where}."
    if sources.left_out:
        message = (
            f"No symbol named {wanted!r} in {where} that may be shown: "
            f"{'a symbol' if sources.left_out == 1 else f'{sources.left_out} symbols'} found in files "
            "the read rules deny were left out. This is configured by the user."
        )
    if hits.unsearched:
        message = message.replace(where, f"the first {MAX_PROJECTS} projects of {where}", 1)
        message += f" {hits.unsearched}."
    if not hits.complete:
        message += f" The search may be incomplete: {'; '.join(hits.notes)}."
    close = suggestions(pool, wanted)
    if close:
        rows = [
            f"  {s.name} ({kind_name(s.kind)}) {sources.relative(s.path)}:{s.selection.start.line + 1}"
            for s in close
        ]
        message += "\nDid you mean one of these?\n" + "\n".join(rows)
    elif not hits.unsearched:
        message += " Use documentSymbol on the file (or workspaceSymbol) to see the names there."
    return message


def kind_name(kind: lsp.SymbolKind | int) -> str:
    try:
        return lsp.SymbolKind(kind).name.lower()
    except ValueError:
        return "symbol"


def describe_line(sources: Sources, path: Path, line: int) -> str:
    """What is on a (0-based) line, for errors about positions: its text and its names' columns."""
    text = sources.line(path, line)
    names = [n for n in names_on(text) if n.text not in KEYWORDS]
    where = f"Line {line + 1} of {sources.relative(path)}"
    if not text.strip():
        return f"{where} is empty."
    listed = ", ".join(f"{n.text} (character {n.column + 1})" for n in names[:12])
    found = f" Names on it: {listed}." if listed else " It has no names on it."
    return f"{where} is: {shown(text)}\n{found.strip()}"


def on_line(sources: Sources, path: Path, line: int, name: str, character: int | None) -> Name | None:
    """``name`` on a (0-based) line; the occurrence nearest ``character`` (0-based) if several."""
    wanted = same_name(name)
    found = [n for n in names_on(sources.line(path, line)) if same_name(n.text) == wanted]
    if not found:
        return None
    if character is None:
        return found[0]
    return min(found, key=lambda n: 0 if n.column <= character <= n.end else abs(n.column - character))


def check_line(sources: Sources, path: Path, line: int) -> None:
    """Refuse a (0-based) line outside the file, saying how long it is."""
    count = len(sources.lines(path))
    if not 0 <= line < max(count, 1):
        raise ToolError(
            f"line {line + 1} is outside {sources.relative(path)}, which has {count} lines "
            "(lines are 1-based)."
        )
