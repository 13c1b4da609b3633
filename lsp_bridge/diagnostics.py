"""Diagnostics of exactly a document's current version, from one server.

Pulled (``textDocument/diagnostic``) when the server offers it; otherwise the
``publishDiagnostics`` carrying that version, or, for servers that send no version, the first
publish that arrived at least the server's ``publish_delay`` after the change was sent (what it
publishes sooner is about an older text). Waits on the publish, never sleeps.

A server still loading may not offer pull yet: basedpyright registers it as its load ends, and
publishes nothing meanwhile (a client that can pull gets no pushes). So while it loads, the
publish and the end of the load are waited for together, and a server that offers pull once
loaded is pulled.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, cast

from lsprotocol import types as lsp

from .connection import ServerConnection
from .documents import Document
from .publishes import PushedDiagnostics
from .registry import BridgeConfig


async def of_version(
    conn: ServerConnection, doc: Document, config: BridgeConfig, notes: list[str]
) -> list[lsp.Diagnostic]:
    """The diagnostics ``conn`` has for ``doc`` as last sent to it (a note if none came)."""
    deadline = time.monotonic() + config.diagnostics_timeout
    if not conn.pull_diagnostics and not conn.loading.ready:
        await _publish_or_load(conn, doc, config.diagnostics_timeout)
    if conn.pull_diagnostics:
        params: dict[str, Any] = {"textDocument": {"uri": doc.uri}}
        identifier = _pull_identifier(conn)
        if identifier is not None:
            params["identifier"] = identifier
        return await conn.request(
            "textDocument/diagnostic",
            params,
            config.request_timeout,
            read_only=True,
            decode=conn.diagnostics_from_json,
        )
    version = conn.open_documents[doc.uri][0]
    pushed = await conn.published.wait(
        doc.uri, _answers(conn, doc), max(0.0, deadline - time.monotonic()), conn.check_alive
    )
    if pushed is None:
        notes.append(
            f"{conn.spec.name} published no diagnostics for version {version} within "
            f"{config.diagnostics_timeout:g}s"
        )
        current = conn.published.latest.get(doc.uri)
        return current.diagnostics if current else []
    return pushed.diagnostics


def _answers(conn: ServerConnection, doc: Document) -> Callable[[PushedDiagnostics], bool]:
    """Whether a publish is about ``doc`` as last sent: its version, or without a version, the
    first publish that arrived after the change was sent and late enough to reflect it (see
    ServerSpec.publish_delay)."""
    version, _text, sent_seq, sent_at, _changes = conn.open_documents[doc.uri]
    after = sent_at + conn.spec.publish_delay
    return lambda p: p.version == version if p.version is not None else p.seq > sent_seq and p.at >= after


async def _publish_or_load(conn: ServerConnection, doc: Document, timeout: float) -> None:
    """Until the publish for ``doc`` arrives, the server's load ends, or ``timeout``."""
    published = asyncio.ensure_future(
        conn.published.wait(doc.uri, _answers(conn, doc), timeout, conn.check_alive)
    )
    loaded = asyncio.ensure_future(conn.loading.wait(timeout))
    try:
        await asyncio.wait([published, loaded], return_when=asyncio.FIRST_COMPLETED)
        if published.done():
            published.result()  # a server gone raises here
    finally:
        published.cancel()
        loaded.cancel()
        await asyncio.gather(published, loaded, return_exceptions=True)


def _pull_identifier(conn: ServerConnection) -> str | None:
    provider = conn.capabilities.diagnostic_provider
    identifier = getattr(provider, "identifier", None)
    if identifier is None:
        for reg in conn.registrations.values():
            options: Any = reg.register_options
            if reg.method == "textDocument/diagnostic" and isinstance(options, dict):
                identifier = cast(dict[str, Any], options).get("identifier")
    return identifier if isinstance(identifier, str) else None
