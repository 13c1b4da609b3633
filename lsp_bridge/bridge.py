"""The Bridge: the one object the rest of lspilot uses to ask language servers questions.

It owns the server pool (``pool.ServerPool``: one process per (server, root), started lazily,
stopped when idle, restarted with backoff after a crash), the document store and the file
watchers. Before every request it re-syncs what changed on disk, opens the document where the
server needs it, and waits until the server is ready so answers are complete. Positions are LSP
positions (0-based, UTF-16 columns); the lsp tool converts for the model.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from lsprotocol import types as lsp

from .answers import Answer, each
from .bom import diagnostics_without_bom, results_without_bom, spans_without_bom
from .connection import Decode, ServerConnection
from .diagnostics import of_version
from .documents import BOM, Document, DocumentStore, uri_to_path
from .errors import NoServerForFile, UnsupportedOperation
from .pool import ServerPool
from .registry import BridgeConfig, Route, Router, ServerRegistry
from .results import Span, locations_from_json, merge_locations
from .sync import Synchronizer

log = logging.getLogger(__name__)


class Bridge:
    def __init__(self, workspace: Path, config: BridgeConfig) -> None:
        self.workspace = workspace.resolve()
        self.config = config
        self.registry = ServerRegistry.from_config(config.servers)
        self.documents = DocumentStore(config.max_open_documents)
        self._sync = Synchronizer(self.documents)
        self._pool = ServerPool(config, self._sync)
        self._router = Router(self.registry, self.workspace)
        # The last complete diagnostics per document: (its text, the store's version, them).
        self._answered: dict[Path, tuple[str, int, list[lsp.Diagnostic]]] = {}

    async def __aenter__(self) -> Bridge:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.shutdown()

    # -- servers and paths ---------------------------------------------------------------------

    @property
    def connections(self) -> list[ServerConnection]:
        return self._pool.alive

    async def connections_for(self, path: Path) -> list[ServerConnection]:
        """Running, synced connections of every enabled server for ``path`` (those that started,
        if some did)."""
        return await self._pool.at(self._route(path), [])

    def _resolved(self, path: Path) -> Path:
        """``path.resolve()``, from the route cache when a server handles the file."""
        try:
            return self._route(path).path
        except NoServerForFile:
            return path.resolve()

    def _route(self, path: Path) -> Route:
        self._sync.drain()  # a created or deleted file may move a root: see Router
        return self._router.route(path, self._sync.layout_version)

    async def reconfigure(self, config: BridgeConfig) -> None:
        """Take a changed configuration: the servers whose definition it changes (or drops or
        disables) stop and start with the new one at their next use; the others keep running.
        The documents stay: an editor's pinned buffers reach the new servers as they reach any
        server that starts (``Synchronizer.refresh``). A configuration that cannot be read
        (``BridgeError``) changes nothing. No question may be waiting for an answer meanwhile."""
        registry = ServerRegistry.from_config(config.servers)
        self.config, self.registry = config, registry
        self._router = Router(registry, self.workspace)
        self.documents.max_open = config.max_open_documents
        self._answered.clear()
        await self._pool.reconfigure(config, {spec.name: spec for spec in registry.all()})

    async def shutdown(self) -> None:
        """Stop every server (shutdown, exit, then signals) and every watcher."""
        await self._pool.shutdown()
        self._sync.close()

    # -- documents ---------------------------------------------------------------------------

    def open_document(self, path: Path, text: str | None = None) -> Document:
        """Pin a document (an editor buffer); ``text`` overrides the disk until closed (and then
        the file need not exist on disk). Paths are resolved, as questions resolve theirs (an
        editor names files by the path it opened, maybe through a symlink)."""
        path = self._resolved(path)
        if text is not None:
            self.documents.set_overlay(path, text)
        return self.documents.pin(path)

    def update_document(self, path: Path, text: str) -> None:
        self.documents.set_overlay(self._resolved(path), text)

    def close_document(self, path: Path) -> None:
        self.documents.unpin(self._resolved(path))

    async def _prepare(self, path: Path, notes: list[str]) -> tuple[list[ServerConnection], Document]:
        route = self._route(path)
        connections = await self._pool.at(route, notes)
        alive = self.connections
        doc = self._sync.refresh(alive, route.path)
        for conn in connections:
            self._sync.ensure_open(conn, doc)
        self._sync.evict(alive)
        return connections, doc

    async def _ready(self, conn: ServerConnection, notes: list[str]) -> bool:
        waited_out = conn.loading.waited_out  # not waited for again until it has been ready
        if conn.loading.ready or (not waited_out and await conn.loading.wait(self.config.ready_timeout)):
            return True
        busy = ", ".join(conn.loading.busy) or "its project load"
        if waited_out:
            notes.append(
                f"{conn.spec.name} is still busy ({busy}), as it was after {self.config.ready_timeout:g}s "
                "of waiting before, so it was not waited for again; the answer may be incomplete"
            )
        else:
            notes.append(
                f"{conn.spec.name} was still busy ({busy}) after {self.config.ready_timeout:g}s; "
                "the answer may be incomplete"
            )
        return False

    # -- questions -------------------------------------------------------------------------------

    async def ask(
        self,
        path: Path,
        method: str,
        provider: str,
        params: Callable[[Document], Any],
        decode: Decode | None = None,
    ) -> Answer[list[tuple[ServerConnection, Any]]]:
        """Send ``method`` to every ready server for ``path`` that supports it.

        Results are lsprotocol objects, their first-line positions in files the server read with
        a BOM moved as editors count them (see ``bom``), or ``decode(raw JSON)`` when given.
        """
        able, results, notes = await self._ask(path, method, provider, params, decode)
        if decode is None:
            for conn, result in zip(able, results, strict=True):
                if conn.spec.counts_disk_bom:
                    results_without_bom(result, functools.partial(self._sync.read_bom, conn))
        return Answer(list(zip(able, results, strict=True)), not notes, notes)

    async def _ask(
        self,
        path: Path,
        method: str,
        provider: str,
        params: Callable[[Document], Any],
        decode: Decode | None,
    ) -> tuple[list[ServerConnection], list[Any], list[str]]:
        """``ask``'s work: the servers that answered, their results, and notes (none: complete).
        A server that fails is left out with a note, unless no server answered."""
        notes: list[str] = []
        connections, doc = await self._prepare(path, notes)
        able = [c for c in connections if c.supports(provider, method)]
        if not able:
            raise UnsupportedOperation(method, provider, [c.spec.name for c in connections], path.name)
        timeout = self.config.request_timeout

        async def one(conn: ServerConnection) -> Any:
            if not conn.loading.ready:
                await self._ready(conn, notes)
            return await conn.request(method, params(doc), timeout, read_only=True, decode=decode)

        if len(able) == 1:  # no gather: it would cost a task and extra event loop turns
            return able, [await one(able[0])], notes
        answered, results = await each(able, one, _name, notes)
        return answered, results, notes

    async def _locations(
        self, path: Path, method: str, provider: str, params: Callable[[Document], Any]
    ) -> Answer[list[Span]]:
        able, results, notes = await self._ask(path, method, provider, params, locations_from_json)
        read_bom = self._sync.read_bom
        results = [
            spans_without_bom(r, functools.partial(read_bom, c)) if c.spec.counts_disk_bom else r
            for c, r in zip(able, results, strict=True)
        ]
        return Answer(merge_locations(results), not notes, notes)

    async def definition(self, path: Path, pos: lsp.Position) -> Answer[list[Span]]:
        return await self._locations(
            path,
            "textDocument/definition",
            "definition_provider",
            lambda d: _at(d, pos),
        )

    async def references(
        self, path: Path, pos: lsp.Position, include_declaration: bool = True
    ) -> Answer[list[Span]]:
        return await self._locations(
            path,
            "textDocument/references",
            "references_provider",
            lambda d: {**_at(d, pos), "context": {"includeDeclaration": include_declaration}},
        )

    async def implementation(self, path: Path, pos: lsp.Position) -> Answer[list[Span]]:
        return await self._locations(
            path,
            "textDocument/implementation",
            "implementation_provider",
            lambda d: _at(d, pos),
        )

    async def hover(self, path: Path, pos: lsp.Position) -> Answer[list[lsp.Hover]]:
        answer = await self.ask(
            path,
            "textDocument/hover",
            "hover_provider",
            lambda d: _at(d, pos),
        )
        hovers = [r for _c, r in answer.value if isinstance(r, lsp.Hover)]
        return Answer(hovers, answer.complete, answer.notes)

    async def document_symbols(self, path: Path) -> Answer[list[lsp.DocumentSymbol | lsp.SymbolInformation]]:
        answer = await self.ask(
            path,
            "textDocument/documentSymbol",
            "document_symbol_provider",
            lambda d: lsp.DocumentSymbolParams(text_document=_doc_id(d)),
        )
        symbols = [s for _c, result in answer.value for s in _items(result)]
        return Answer(symbols, answer.complete, answer.notes)

    async def workspace_symbols(
        self, query: str, near: Path
    ) -> Answer[list[lsp.SymbolInformation | lsp.WorkspaceSymbol]]:
        """Symbols matching ``query`` in the projects of the servers for file ``near``."""
        answer = await self.ask(
            near,
            "workspace/symbol",
            "workspace_symbol_provider",
            lambda _d: lsp.WorkspaceSymbolParams(query=query),
        )
        symbols = [s for _c, result in answer.value for s in _items(result)]
        return Answer(symbols, answer.complete, answer.notes)

    async def prepare_call_hierarchy(
        self, path: Path, pos: lsp.Position
    ) -> Answer[list[lsp.CallHierarchyItem]]:
        answer = await self.ask(
            path,
            "textDocument/prepareCallHierarchy",
            "call_hierarchy_provider",
            lambda d: _at(d, pos),
        )
        items = [i for _c, result in answer.value for i in _items(result)]
        return Answer(items, answer.complete, answer.notes)

    async def incoming_calls(
        self, item: lsp.CallHierarchyItem
    ) -> Answer[list[lsp.CallHierarchyIncomingCall]]:
        answer = await self._item_request(item, "callHierarchy/incomingCalls")
        return Answer([c for _s, r in answer.value for c in _items(r)], answer.complete, answer.notes)

    async def outgoing_calls(
        self, item: lsp.CallHierarchyItem
    ) -> Answer[list[lsp.CallHierarchyOutgoingCall]]:
        answer = await self._item_request(item, "callHierarchy/outgoingCalls")
        return Answer([c for _s, r in answer.value for c in _items(r)], answer.complete, answer.notes)

    async def _item_request(
        self, item: lsp.CallHierarchyItem, method: str
    ) -> Answer[list[tuple[ServerConnection, Any]]]:
        path = uri_to_path(item.uri)
        params = (
            lsp.CallHierarchyIncomingCallsParams(item=item)
            if method.endswith("incomingCalls")
            else lsp.CallHierarchyOutgoingCallsParams(item=item)
        )
        return await self.ask(path, method, "call_hierarchy_provider", lambda _d: params)

    async def diagnostics_after_change(
        self, path: Path, text: str | None = None
    ) -> Answer[list[lsp.Diagnostic]]:
        """Diagnostics of exactly the current version of ``path`` (disk, or ``text``)."""
        if text is not None:
            self.documents.set_overlay(self._resolved(path), text)
        notes: list[str] = []
        connections, doc = await self._prepare(path, notes)
        connections, doc = await self._check_again(path, connections, doc, notes)
        asked = (doc.text, self.documents.latest_version)
        if len(connections) == 1:  # no gather: it would cost a task and extra event loop turns
            results = [await self._diagnostics(connections[0], doc, notes)]
        else:
            _answered, results = await each(
                connections, lambda c: self._diagnostics(c, doc, notes), _name, notes
            )
        merged = [d for result in results for d in result]
        if not notes and asked[1] == self.documents.latest_version:
            self._answered.pop(doc.path, None)
            self._answered[doc.path] = (*asked, merged)
            if len(self._answered) > self.config.max_open_documents:
                del self._answered[next(iter(self._answered))]
        return Answer(merged, not notes, notes)

    async def _check_again(
        self, path: Path, connections: list[ServerConnection], doc: Document, notes: list[str]
    ) -> tuple[list[ServerConnection], Document]:
        """Servers that push diagnostics re-check a document only when it changes: when anything
        else changed since it was sent to one (a file it imports edited, deleted or created), it
        gets a new version with the same text. A server that has not yet taken in a new file (see
        ``ServerSpec.new_file_delay``) is given the time first."""
        stale = [c for c in connections if c.publish_may_be_stale(doc.uri)]
        settled = max((c.file_created_at + c.spec.new_file_delay for c in stale), default=0.0)
        if settled > time.monotonic():
            await asyncio.sleep(settled - time.monotonic())
            connections, doc = await self._prepare(path, notes)
            stale = [c for c in connections if c.publish_may_be_stale(doc.uri)]
        if stale:  # the servers that pull get the new version at the next request
            doc = self.documents.touch(doc.path)
            for conn in stale:
                self._sync.ensure_open(conn, doc)
        return connections, doc

    def source_lines(self, path: Path) -> list[str]:
        """The lines of ``path`` (resolved) as the servers see it: an open document's text, else
        the file on disk as of the last look at it (each request looks, and ``look_at_disk``),
        split as LSP counts lines; empty when it cannot be read. Do not modify the list."""
        doc = self.documents.get(path)
        return doc.lines if doc is not None else self._sync.disk.get(str(path), self._sync.covers)

    def source_files(self, files: list[tuple[str, Path]]) -> list[list[str]]:
        """``source_lines`` of each (URI, path) of an answer (hundreds of files): by URI for the
        watched files on disk, which costs a dict lookup each once they were read."""
        opened = {doc.uri for doc in self.documents}  # a kept URI is in this form (as_uri)
        disk, covers = self._sync.disk, self._sync.covers
        known = disk.uris

        def read(uri: str, path: Path) -> list[str]:
            if uri in opened or self.documents.get(path) is not None:
                return self.source_lines(path)
            return disk.by_uri(uri, str(path), covers)[0]

        return [
            found[0] if uri not in opened and (found := known.get(uri)) is not None else read(uri, path)
            for uri, path in files
        ]

    def look_at_disk(self) -> None:
        """Take in the file changes the watcher has seen since the last request."""
        self._sync.drain()

    def clear_overlay(self, path: Path, written: str | None = None) -> None:
        """Let the disk speak for ``path`` again after ``diagnostics_after_change(path, text)``
        (unless an editor pinned the document with ``open_document``). ``written``: the caller
        has just written exactly this text to ``path``, so a watched file needs no re-read (the
        watcher reports any change made since)."""
        doc = self.documents.get(self._resolved(path))
        if doc is None or doc.pins != 0:
            return
        if (
            written is not None
            and written.removeprefix(BOM) == doc.text
            and self._sync.covers(str(doc.path.parent))
        ):
            doc.overlay = False
        else:
            self.documents.clear_overlay(doc.path)

    def known_diagnostics(self, path: Path, text: str) -> list[lsp.Diagnostic] | None:
        """What ``diagnostics_after_change`` last answered for ``path``, if that was for exactly
        ``text`` and no document has changed since; None otherwise. Sends nothing."""
        answered = self._answered.get(self._resolved(path))
        if (
            answered is None
            or answered[0] != text.removeprefix(BOM)
            or answered[1] != self.documents.latest_version
        ):
            return None
        return list(answered[2])

    async def _diagnostics(
        self, conn: ServerConnection, doc: Document, notes: list[str]
    ) -> list[lsp.Diagnostic]:
        await self._ready(conn, notes)
        diagnostics = await of_version(conn, doc, self.config, notes)
        if conn.spec.counts_disk_bom:  # related locations may be in files it read from disk
            return diagnostics_without_bom(diagnostics, functools.partial(self._sync.read_bom, conn))
        return diagnostics


def _name(conn: ServerConnection) -> str:
    return conn.spec.name


def _items(result: Any) -> list[Any]:
    """A list result that servers may also send as null."""
    return cast(list[Any], result or [])


def _doc_id(doc: Document) -> lsp.TextDocumentIdentifier:
    return lsp.TextDocumentIdentifier(uri=doc.uri)


def _at(doc: Document, pos: lsp.Position) -> dict[str, Any]:
    """TextDocumentPositionParams as JSON: the params of every question about a position, built
    without lsprotocol objects and their unstructuring (most of the bridge's cost per question)."""
    return {"textDocument": {"uri": doc.uri}, "position": {"line": pos.line, "character": pos.character}}
