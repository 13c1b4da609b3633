"""Diagnostics of exactly a document's current version, from one server.

Pulled (``textDocument/diagnostic``) when the server offers it; otherwise the
``publishDiagnostics`` carrying that version, or, for servers that send no version, the first
publish that arrived at least the server's ``publish_delay`` after the change was sent (what it
publishes sooner is about an older text). Waits on the publish, never sleeps.
"""

from __future__ import annotations

from typing import Any, cast

from lsprotocol import types as lsp

from .connection import ServerConnection
from .documents import Document
from .registry import BridgeConfig


async def of_version(
    conn: ServerConnection, doc: Document, config: BridgeConfig, notes: list[str]
) -> list[lsp.Diagnostic]:
    """The diagnostics ``conn`` has for ``doc`` as last sent to it (a note if none came)."""
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
    version, _text, sent_seq, sent_at = conn.open_documents[doc.uri]
    # Without a version, the first publish that arrived after the change was sent and late
    # enough to reflect it (see ServerSpec.publish_delay).
    after = sent_at + conn.spec.publish_delay
    pushed = await conn.published.wait(
        doc.uri,
        lambda p: p.version == version if p.version is not None else p.seq > sent_seq and p.at >= after,
        config.diagnostics_timeout,
        conn.check_alive,
    )
    if pushed is None:
        notes.append(
            f"{conn.spec.name} published no diagnostics for version {version} within "
            f"{config.diagnostics_timeout:g}s"
        )
        current = conn.published.latest.get(doc.uri)
        return current.diagnostics if current else []
    return pushed.diagnostics


def _pull_identifier(conn: ServerConnection) -> str | None:
    provider = conn.capabilities.diagnostic_provider
    identifier = getattr(provider, "identifier", None)
    if identifier is None:
        for reg in conn.registrations.values():
            options: Any = reg.register_options
            if reg.method == "textDocument/diagnostic" and isinstance(options, dict):
                identifier = cast(dict[str, Any], options).get("identifier")
    return identifier if isinstance(identifier, str) else None
