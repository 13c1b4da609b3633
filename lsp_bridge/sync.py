"""Keeping servers in sync with disk and overlays: didOpen/didChange/didClose and watched files.

Before every request the bridge calls ``refresh``: queued file-system events are drained,
changed documents re-read, every server gets didChange for documents it has open at an older
version, and didChangeWatchedFiles for files matching the globs it registered. When the watcher
reported nothing and no overlay changed, that is one non-blocking read per watched root and an
integer compare per server.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, cast
from urllib.parse import unquote

from lsprotocol import types as lsp

from .connection import ServerConnection
from .documents import DiskLines, Document, DocumentStore, incremental_change, normal_uri, uri_to_path
from .globs import glob_regex
from .watch import Watcher, merge_change, watch

log = logging.getLogger(__name__)

OVERFLOW = Path("/")  # the watcher lost events: re-read every document
MAX_UNWATCHED = 10_000  # changes kept per server until a registration covers them


class Synchronizer:
    def __init__(self, documents: DocumentStore) -> None:
        self.documents = documents
        self.disk = DiskLines()
        self._watchers: dict[Path, Watcher] = {}
        self._changes: dict[Path, lsp.FileChangeType] = {}
        # Counts drains that saw files or folders created or deleted (what can move a root
        # marker or a symlink); the bridge keeps path lookups while it stays the same.
        self.layout_version = 0

    def watch(self, root: Path) -> None:
        if any(root.is_relative_to(watched) for watched in self._watchers):
            return
        for nested in [w for w in self._watchers if w.is_relative_to(root)]:
            self._watchers.pop(nested).close()
        self._watchers[root] = watch(root)

    def covers(self, folder: str) -> bool:
        """A watcher reports changes to the files directly in ``folder`` as they happen."""
        return any(watcher.covers(folder) for watcher in self._watchers.values())

    def read_bom(self, conn: ServerConnection, uris: set[str]) -> set[str]:
        """Those of ``uris`` that ``conn`` read from disk itself (it does not have them open) and
        that start with a BOM, which a server with ``counts_disk_bom`` counts as a column of the
        first line. Called with the files of an answer's first-line locations (hundreds): those
        known to start without one cost a dict lookup, the others are read without Path
        objects, and the open-document check is only made for the rare file with a BOM."""
        disk, covers, opened = self.disk, self.covers, conn.open_documents
        known = disk.uris
        found: set[str] = set()
        for uri in [u for u in uris if (k := known.get(u)) is None or k[1]]:  # usually none
            name = unquote(uri[7:]) if uri.startswith("file:///") else str(uri_to_path(uri))
            if disk.by_uri(uri, name, covers)[1] and normal_uri(uri) not in opened:
                found.add(uri)
        return found

    def close(self) -> None:
        for watcher in self._watchers.values():
            watcher.close()
        self._watchers.clear()

    def drain(self) -> None:
        """Collect the watchers' queued events (applied by the next ``refresh``)."""
        for watcher in self._watchers.values():
            drained = watcher.drain()
            for path, kind in drained.items():
                if kind == lsp.FileChangeType.Created and self.documents.get(path) is not None:
                    # Renamed over a file we know (an atomic save): a change, not a new file.
                    drained[path] = lsp.FileChangeType.Changed
            if drained:
                if OVERFLOW in drained or any(k != lsp.FileChangeType.Changed for k in drained.values()):
                    self.layout_version += 1
                if OVERFLOW in drained:
                    self.disk.clear()
                for path, kind in drained.items():
                    merge_change(self._changes, path, kind)
                    self.disk.forget(path, folder_too=kind == lsp.FileChangeType.Deleted)

    def refresh(self, connections: list[ServerConnection], path: Path) -> Document:
        """Apply every change seen on disk, then return the (loaded) document for ``path``."""
        self.drain()
        if self._changes:  # nothing seen on disk (the usual case) skips all of this
            changes, self._changes = self._changes, {}
            stale = (
                list(self.documents)
                if OVERFLOW in changes
                else [doc for p in changes if (doc := self.documents.get(p)) is not None]
            )
            for doc in stale:
                if self.documents.refresh_from_disk(doc.path) is not None and doc.version < 0:
                    self._close_everywhere(connections, doc)
            changes.pop(OVERFLOW, None)
            if changes:
                self._notify_watched(connections, changes)
        for conn in connections:
            if conn.watch_registered:
                conn.watch_registered = False
                self._notify_unwatched(conn)
        doc = self.documents.load(path)
        latest = self.documents.latest_version
        for conn in connections:
            if conn.synced_version == latest:  # no document changed since the last pass
                continue
            for current in self.documents:
                sent = conn.open_documents.get(current.uri)
                if sent is not None and sent[0] != current.version:
                    self.ensure_open(conn, current)
                elif sent is None and _unsaved_in_editor(current) and _serves(conn, current.path):
                    # Questions about other files see it too, as the editor shows it (not
                    # as the disk has it: references would point at the wrong lines).
                    self.ensure_open(conn, current)
            conn.synced_version = latest
        return doc

    def ensure_open(self, conn: ServerConnection, doc: Document) -> None:
        """didOpen, or didChange (incremental when the server takes it) to ``doc.version``."""
        sent = conn.open_documents.get(doc.uri)
        if sent is not None and sent[0] == doc.version:
            return
        seq = conn.published.seq
        if sent is None:
            item = {"uri": doc.uri, "languageId": conn.spec.language_id(doc.path.name)}
            conn.notify(
                "textDocument/didOpen", {"textDocument": {**item, "version": doc.version, "text": doc.text}}
            )
        else:
            change = incremental_change(sent[1], doc.text) if conn.incremental_sync else {"text": doc.text}
            conn.notify(
                "textDocument/didChange",
                {"textDocument": {"uri": doc.uri, "version": doc.version}, "contentChanges": [change]},
            )
        if sent is not None or doc.overlay:  # opening a file as the disk has it changes nothing
            conn.changes += 1
        conn.open_documents[doc.uri] = (doc.version, doc.text, seq, time.monotonic(), conn.changes)

    def evict(self, connections: list[ServerConnection]) -> None:
        for doc in self.documents.evict():
            self._close_everywhere(connections, doc)

    def forget(self, conn: ServerConnection) -> None:
        conn.open_documents.clear()

    def _close_everywhere(self, connections: list[ServerConnection], doc: Document) -> None:
        for conn in connections:
            if conn.open_documents.pop(doc.uri, None) is not None and conn.alive:
                conn.changes += doc.overlay  # the server reads the disk's text again
                conn.notify(
                    "textDocument/didClose",
                    lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=doc.uri)),
                )

    def _notify_watched(
        self, connections: list[ServerConnection], changes: dict[Path, lsp.FileChangeType]
    ) -> None:
        for conn in connections:
            # An open document's text comes by didChange (this same pass), not from disk.
            seen = {
                path: kind
                for path, kind in changes.items()
                if kind != lsp.FileChangeType.Changed or path.as_uri() not in conn.open_documents
            }
            under = {path: kind for path, kind in seen.items() if path.is_relative_to(conn.root)}
            if under:
                conn.changes += 1  # servers that watch the disk themselves (tsserver) see it too
            if any(k == lsp.FileChangeType.Created and conn.spec.handles(p.name) for p, k in under.items()):
                conn.file_created_at = time.monotonic()
            globs = watched_file_globs(conn) if under else []
            matched: dict[Path, lsp.FileChangeType] = {}
            for path, kind in under.items():
                if _matches(globs, path, conn.root):
                    matched[path] = kind
                    conn.unwatched.pop(path, None)  # this event supersedes a kept one
                elif len(conn.unwatched) < MAX_UNWATCHED:
                    # A server registers its watchers when it has built a project (tsgo, in the
                    # background and glob by glob): a change it did not watch yet is kept, not
                    # dropped, or the server would never learn of it.
                    merge_change(conn.unwatched, path, kind)
            self._send_watched(conn, matched)

    def _notify_unwatched(self, conn: ServerConnection) -> None:
        """Send the kept changes that the server's registrations now cover."""
        if not conn.unwatched:
            return
        globs = watched_file_globs(conn)
        covered = {p: k for p, k in conn.unwatched.items() if _matches(globs, p, conn.root)}
        for path in covered:
            del conn.unwatched[path]
        self._send_watched(conn, covered)

    def _send_watched(self, conn: ServerConnection, changes: dict[Path, lsp.FileChangeType]) -> None:
        if not changes:
            return
        log.debug("%s: %d watched files changed", conn.spec.name, len(changes))
        if any(
            kind != lsp.FileChangeType.Changed and conn.spec.handles(path.name)
            for path, kind in changes.items()
        ):  # only source files change what the server counts (and logs it has loaded)
            conn.loading.expect_rescan()  # before the change: see its docstring
        conn.notify(
            "workspace/didChangeWatchedFiles",
            lsp.DidChangeWatchedFilesParams(
                changes=[lsp.FileEvent(uri=path.as_uri(), type=kind) for path, kind in changes.items()]
            ),
        )


def _unsaved_in_editor(doc: Document) -> bool:
    """An editor holds the document with text the disk does not have (not a proposed change's
    text, which only the question about it sees)."""
    return doc.overlay and doc.pins > 0


def _serves(conn: ServerConnection, path: Path) -> bool:
    return conn.spec.handles(path.name) and path.is_relative_to(conn.root)


def watched_file_globs(conn: ServerConnection) -> list[str | lsp.RelativePattern]:
    """The glob patterns of the server's didChangeWatchedFiles registrations."""
    globs: list[str | lsp.RelativePattern] = []
    for reg in conn.registrations.values():
        if reg.method == "workspace/didChangeWatchedFiles" and reg.register_options is not None:
            globs.extend(_watchers(reg.register_options))
    return globs


def _watchers(options: Any) -> list[str | lsp.RelativePattern]:
    """Glob patterns of a didChangeWatchedFiles registration (typed or raw JSON)."""
    raw: list[Any] = (
        cast(dict[str, Any], options).get("watchers", []) if isinstance(options, dict) else options.watchers
    )
    patterns: list[str | lsp.RelativePattern] = []
    for watcher in raw:
        pattern: Any = (
            cast(dict[str, Any], watcher).get("globPattern")
            if isinstance(watcher, dict)
            else watcher.glob_pattern
        )
        if isinstance(pattern, dict):
            relative = cast(dict[str, str], pattern)
            pattern = lsp.RelativePattern(base_uri=relative["baseUri"], pattern=relative["pattern"])
        if pattern is not None:
            patterns.append(pattern)
    return patterns


def _matches(globs: list[str | lsp.RelativePattern], path: Path, root: Path) -> bool:
    for glob in globs:
        if isinstance(glob, str):
            if glob_regex(glob).match(str(path)) or glob_regex(glob).match(str(path.relative_to(root))):
                return True
            continue
        base = glob.base_uri if isinstance(glob.base_uri, str) else glob.base_uri.uri
        base_path = uri_to_path(base)
        if path.is_relative_to(base_path) and glob_regex(glob.pattern).match(
            str(path.relative_to(base_path))
        ):
            return True
    return False
