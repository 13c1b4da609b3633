"""Which servers serve a file, and at which root (kept per path until files are created or
deleted): built-ins plus servers declared in config."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .errors import BridgeError, NoServerForFile
from .servers import BUILTIN
from .spec import Install, ServerSpec


@dataclass(frozen=True)
class BridgeConfig:
    """Everything lsp_bridge can be told; the daemon builds it from lspilot's config files."""

    data_dir: Path
    servers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict[str, Mapping[str, Any]])
    auto_install: bool = True
    start_timeout: float = 60.0
    request_timeout: float = 30.0
    ready_timeout: float = 60.0
    diagnostics_timeout: float = 15.0
    idle_timeout: float = 900.0
    max_open_documents: int = 200


class ServerRegistry:
    """Server definitions by name; maps a file to the enabled servers for its type."""

    def __init__(self, specs: Iterable[ServerSpec]) -> None:
        self._specs = {spec.name: spec for spec in specs}

    @classmethod
    def from_config(cls, overrides: Mapping[str, Mapping[str, Any]]) -> ServerRegistry:
        specs = {spec.name: spec for spec in BUILTIN}
        for name, raw in overrides.items():
            specs[name] = spec_from_config(name, raw, specs.get(name))
        return cls(specs.values())

    def get(self, name: str) -> ServerSpec:
        try:
            return self._specs[name]
        except KeyError:
            known = ", ".join(sorted(self._specs))
            raise BridgeError(f"unknown language server {name!r}; known: {known}") from None

    def all(self) -> list[ServerSpec]:
        return list(self._specs.values())

    def for_file(self, path: Path) -> list[ServerSpec]:
        return [s for s in self._specs.values() if s.enabled and s.handles(path.name)]


_FIELDS = {
    "command": tuple,
    "extensions": tuple,
    "root_markers": tuple,
    "language_ids": dict,
    "init_options": dict,
    "settings": dict,
    "env": dict,
    "enabled": bool,
    "publish_delay": float,
    "new_file_delay": float,
    "counts_disk_bom": bool,
}


def spec_from_config(name: str, raw: Mapping[str, Any], base: ServerSpec | None) -> ServerSpec:
    """A server from config: override fields of a built-in, or declare a new one.

    Example (``.lspilot/config.toml``)::

        [lsp.servers.gopls]
        command = ["gopls"]
        extensions = [".go"]
        language_ids = {".go" = "go"}
        root_markers = ["go.mod", ".git"]
    """
    unknown = set(raw) - set(_FIELDS)
    if unknown:
        raise BridgeError(f"server {name!r}: unknown settings {sorted(unknown)}")
    values: dict[str, Any] = {key: _FIELDS[key](value) for key, value in raw.items()}
    if base is not None:
        return replace(base, **values)
    missing = {"command", "extensions"} - set(values)
    if missing:
        raise BridgeError(f"server {name!r}: a new server needs {sorted(missing)}")
    values.setdefault("enabled", True)
    values.setdefault("root_markers", (".git",))
    values.setdefault("language_ids", {})
    install = Install(kind="system", candidates=(values["command"][0],))
    return ServerSpec(name=name, install=install, **values)


def find_root(path: Path, markers: Iterable[str], workspace: Path | None = None) -> Path:
    """The nearest ancestor of ``path`` holding one of ``markers``.

    Falls back to the workspace root when the file is inside it, else to the file's folder.
    """
    markers = tuple(markers)
    start = path if path.is_dir() else path.parent
    for folder in (start, *start.parents):
        if any((folder / marker).exists() for marker in markers):
            return folder
        if workspace is not None and folder == workspace:
            break
    if workspace is not None and start.is_relative_to(workspace):
        return workspace
    return start


ROUTE_CACHE_SIZE = 4096


@dataclass(frozen=True)
class Route:
    """Where a path's questions go: its resolved form and the (server, root) pairs for it."""

    path: Path
    targets: list[tuple[ServerSpec, Path]]
    layout: int  # the layout version it was computed at


class Router:
    """Paths to routes, kept while the layout version (created/deleted files) is unchanged.

    Resolving symlinks and looking for root markers costs a dozen stat calls per question, so
    routes are kept until the file watchers report a created or deleted file or folder (the
    only way a symlink or a root marker changes). Only paths inside the workspace are kept:
    there every folder between a file and its root is watched.
    """

    def __init__(self, registry: ServerRegistry, workspace: Path) -> None:
        self.registry = registry
        self.workspace = workspace
        self._routes: dict[Path, Route] = {}

    def route(self, path: Path, layout: int) -> Route:
        cached = self._routes.get(path)
        if cached is not None and cached.layout == layout:
            return cached
        try:
            resolved = path.resolve()
        except (OSError, RuntimeError) as error:  # a symlink loop (RuntimeError before 3.13)
            raise BridgeError(f"cannot resolve {path}: {error}") from None
        specs = self.registry.for_file(resolved)
        if not specs:
            raise NoServerForFile(f"no language server is configured for {path.name}")
        targets = [(s, find_root(resolved, s.root_markers, self.workspace)) for s in specs]
        route = Route(resolved, targets, layout)
        if resolved.is_relative_to(self.workspace):
            if len(self._routes) >= ROUTE_CACHE_SIZE:
                self._routes.clear()
            self._routes[path] = route
        return route
