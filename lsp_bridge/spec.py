"""What lsp_bridge needs to know about a language server: how to start, install and trust it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

InstallKind = Literal["pypi", "npm", "system"]


@dataclass(frozen=True)
class Install:
    """How `lspilot servers install` provides the server.

    pypi/npm servers are installed from a lock file shipped in ``servers/locks/<name>/`` into
    lspilot's data dir; system servers are looked up on PATH (``candidates``, first found wins).
    """

    kind: InstallKind
    packages: tuple[str, ...] = ()
    candidates: tuple[str, ...] = ()
    hint: str = ""


@dataclass(frozen=True)
class Readiness:
    """How to tell that a server's answers are complete.

    ``log_pattern``: a window/logMessage text the server sends once its project is loaded.
    ``progress``: wait until every $/progress token that began has ended.
    ``open_starts_progress``: the server loads its project only once a document is opened, and
    reports that load as $/progress; when one of these files is in the root, the first answer
    waits for that progress to end (clangd's background index, tsserver's project load).
    ``open_registers_watchers``: the server watches the disk only through the client's
    workspace/didChangeWatchedFiles, and registers them once a document's project is built
    (tsgo, sometimes after answering the first question); the first answer waits for that
    registration, since a file changed before it would never be reported to the server.
    """

    log_pattern: re.Pattern[str] | None = None
    progress: bool = True
    open_starts_progress: tuple[str, ...] = ()
    open_registers_watchers: bool = False


@dataclass(frozen=True)
class ServerSpec:
    """A language server definition: one per file in ``lsp_bridge/servers/``."""

    name: str
    command: tuple[str, ...]
    extensions: tuple[str, ...]
    language_ids: dict[str, str]
    root_markers: tuple[str, ...]
    install: Install
    init_options: dict[str, Any] = field(default_factory=dict[str, Any])
    settings: dict[str, Any] = field(default_factory=dict[str, Any])
    env: dict[str, str] = field(default_factory=dict[str, str])
    readiness: Readiness = Readiness()
    shutdown_params_null: bool = True
    #: Seconds after a change before a publish without a version can reflect it: what the server
    #: publishes sooner comes from its work on an earlier text.
    publish_delay: float = 0.0
    #: Seconds after a file appears on disk before the server (watching the disk itself, told
    #: nothing by the client) takes it in: diagnostics asked sooner would miss it.
    new_file_delay: float = 0.0
    #: It counts the BOM of a file it reads from disk itself (one it does not have open) as a
    #: column of the first line (basedpyright, clangd; TypeScript's and jedi's servers drop it).
    counts_disk_bom: bool = False
    enabled: bool = False  # used without configuration (one default per language)

    def language_id(self, path: str) -> str:
        for ext, lang in self.language_ids.items():
            if path.endswith(ext):
                return lang
        return "plaintext"

    def handles(self, path: str) -> bool:
        return path.endswith(self.extensions)

    def setting(self, section: str | None) -> Any:
        """The value of a dotted settings section, as workspace/configuration asks for it."""
        if not section:
            return self.settings
        node: Any = self.settings
        if section in node:
            return node[section]
        for part in section.split("."):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]  # pyright: ignore[reportUnknownVariableType]
        return node  # pyright: ignore[reportUnknownVariableType]
