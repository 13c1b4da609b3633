"""lsp_bridge's errors as the lsp tool reports them: what failed and the way out (another
operation, enabling a server, grep and read), with the bridge's own message kept."""

from __future__ import annotations

from pathlib import Path

from lsp_bridge import (
    Bridge,
    BridgeError,
    FileUnreadable,
    NoServerForFile,
    RequestTimeout,
    ServerBroken,
    ServerStartError,
    ServerTerminated,
    UnsupportedOperation,
)

ALTERNATIVES = {
    "implementation_provider": "use findReferences on the base class or method, or grep for it",
    "call_hierarchy_provider": "use findReferences to find where it is called, or grep",
}
#: What to do after a server crashed, gave up or did not answer (said after the bridge's words).
WAYS_OUT: tuple[tuple[type[BridgeError], str], ...] = (
    (
        ServerTerminated,
        "\nIt is started again on the next call: ask again. If it keeps crashing, use grep and read.",
    ),
    (ServerBroken, "\nIt is not started again in this session: use grep and read."),
    (
        ServerStartError,
        "\nIt is tried again on the next call, after a pause. If it keeps failing, use grep and read.",
    ),
    (
        RequestTimeout,
        "\nThe request was cancelled. Ask again (the server may have been busy), or use grep and read.",
    ),
)
#: The requests that find where ``symbol`` is declared, whatever the operation.
LOOKUPS = {"document_symbol_provider": "documentSymbol", "workspace_symbol_provider": "workspaceSymbol"}


def bridge_error(bridge: Bridge, error: BridgeError, operation: str, path: Path | None) -> str:
    """The message for ``error``, raised while answering ``operation`` about ``path``."""
    if isinstance(error, UnsupportedOperation):
        return _unsupported(error, operation, path)
    if isinstance(error, NoServerForFile):
        return _no_server(bridge, error, path)
    if isinstance(error, FileUnreadable):  # a file a server named, or one changed since it was checked
        return f"lspilot could not read a file it needs for {operation}: {error}"
    way_out = next((words for kind, words in WAYS_OUT if isinstance(error, kind)), "")
    return f"The language server could not answer {operation}: {error}{way_out}"


def _unsupported(error: UnsupportedOperation, operation: str, path: Path | None) -> str:
    capability = "".join(w.capitalize() if i else w for i, w in enumerate(error.provider.split("_")))
    servers = ", ".join(error.servers)
    where = f" for {path.name}" if path else ""
    lookup = LOOKUPS.get(error.provider)
    if lookup is not None and lookup != operation:  # the operation is offered; finding symbol is not
        return (
            f"{operation} with symbol needs {lookup}, which {servers}, the language server{where}, "
            f"does not offer ({capability}). Instead, give filePath with line (and character)."
        )
    advice = ALTERNATIVES.get(error.provider, "use grep and read")
    return (
        f"{operation} is not supported by {servers}, the language server{where}: it does not offer "
        f"{capability}. Instead, {advice}."
    )


def _no_server(bridge: Bridge, error: NoServerForFile, path: Path | None) -> str:
    suffix = path.suffix if path else ""
    known = [s.name for s in bridge.registry.all() if suffix and suffix in s.extensions]
    if known:
        return (
            f"{error}. Known servers for {suffix} files that are not enabled: {', '.join(known)}; "
            f"enable one in lspilot.toml ([lsp.servers.{known[0]}] enabled = true)."
        )
    return (
        f"{error}: lspilot has no language server for {suffix or 'these'} files. Use grep and read instead."
    )
