"""lsp_bridge: lspilot's client of real language servers.

Use ``Bridge`` (one per workspace) to ask definition, references, implementation, call
hierarchy, symbols, hover and diagnostics-after-change; everything else is machinery.
This package imports nothing from ``tools`` or ``daemon``.
"""

from __future__ import annotations

from .bridge import Answer, Bridge
from .errors import (
    BridgeError,
    FileUnreadable,
    NoServerForFile,
    RequestFailed,
    RequestTimeout,
    ServerBroken,
    ServerNotInstalled,
    ServerStartError,
    ServerTerminated,
    UnsupportedOperation,
)
from .registry import BridgeConfig, ServerRegistry
from .results import Span, span_location, span_start

__all__ = [
    "Answer",
    "Bridge",
    "BridgeConfig",
    "BridgeError",
    "FileUnreadable",
    "NoServerForFile",
    "RequestFailed",
    "RequestTimeout",
    "ServerBroken",
    "ServerNotInstalled",
    "ServerRegistry",
    "ServerStartError",
    "ServerTerminated",
    "Span",
    "UnsupportedOperation",
    "span_location",
    "span_start",
]
