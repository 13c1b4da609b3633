"""What the bridge's tests against real language servers share: a file's error diagnostics."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types as lsp

from lsp_bridge import Bridge


def errors(diagnostics: list[lsp.Diagnostic]) -> list[lsp.Diagnostic]:
    return [d for d in diagnostics if d.severity == lsp.DiagnosticSeverity.Error]


async def errors_after_change(bridge: Bridge, path: Path) -> list[lsp.Diagnostic]:
    """The error diagnostics of ``path`` as it is now (on disk, or the editor's open text)."""
    return errors((await bridge.diagnostics_after_change(path)).value)
