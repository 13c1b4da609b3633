"""Typed errors raised by lsp_bridge; callers branch on the type, users read the message."""

from __future__ import annotations


class BridgeError(Exception):
    """Base class of every error lsp_bridge raises on purpose."""


class FileUnreadable(BridgeError):
    """A source file lspilot reads for a server (to open it, or to show an answer's lines)
    is missing, a folder, a FIFO, unreadable or binary: lspilot's problem, not the server's."""


class NoServerForFile(BridgeError):
    """No configured language server handles this file type."""


class UnsupportedOperation(BridgeError):
    """No server for the file offers the capability a request needs."""

    def __init__(self, method: str, provider: str, servers: list[str], path: str) -> None:
        super().__init__(f"{method} is not supported by the server(s) for {path}: {', '.join(servers)}")
        self.method = method
        self.provider = provider
        self.servers = servers


class ServerNotInstalled(BridgeError):
    """The server's executable is missing; the message names the install command."""


class ServerStartError(BridgeError):
    """The server process started but failed to initialize."""


class ServerTerminated(BridgeError):
    """The server process exited while a request was pending or being sent."""


class ServerBroken(BridgeError):
    """The server crashed repeatedly and will not be restarted until the bridge is reset."""


class RequestTimeout(BridgeError):
    """The server did not answer in time; the request was cancelled with $/cancelRequest."""


class RequestFailed(BridgeError):
    """The server answered with a JSON-RPC error."""

    def __init__(self, method: str, code: int | None, message: str) -> None:
        super().__init__(f"{method} failed ({code}): {message}")
        self.method = method
        self.code = code
