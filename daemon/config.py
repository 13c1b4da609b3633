"""lspilot configuration: TOML files merged user-wide then per project, plus the data dir.

Files (later ones win): ``<user config dir>/lspilot/config.toml``, ``<workspace>/.lspilot/config.toml``.
``LSPILOT_DATA_DIR`` moves the data dir (installed servers, logs, saved outputs).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from lsp_bridge import BridgeConfig, BridgeError


def data_dir() -> Path:
    override = os.environ.get("LSPILOT_DATA_DIR")
    return Path(override) if override else Path(platformdirs.user_data_dir("lspilot"))


def user_config_dir() -> Path:
    override = os.environ.get("LSPILOT_CONFIG_DIR")
    return Path(override) if override else Path(platformdirs.user_config_dir("lspilot"))


def log_dir() -> Path:
    return (
        Path(platformdirs.user_log_dir("lspilot"))
        if "LSPILOT_DATA_DIR" not in os.environ
        else data_dir() / "logs"
    )


@dataclass(frozen=True)
class Config:
    workspace: Path
    raw: dict[str, Any]

    def bridge(self) -> BridgeConfig:
        lsp: dict[str, Any] = dict(self.raw.get("lsp", {}))
        servers = lsp.pop("servers", {})
        known = set(BridgeConfig.__dataclass_fields__) - {"data_dir", "servers"}
        unknown = set(lsp) - known
        if unknown:
            raise BridgeError(f"unknown [lsp] settings: {sorted(unknown)}; known: {sorted(known)}")
        return BridgeConfig(data_dir=data_dir(), servers=servers, **lsp)


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)  # pyright: ignore[reportUnknownArgumentType]
        else:
            merged[key] = value
    return merged


def load(workspace: Path) -> Config:
    raw: dict[str, Any] = {}
    for file in (user_config_dir() / "config.toml", workspace / ".lspilot" / "config.toml"):
        if file.is_file():
            try:
                raw = _merge(raw, tomllib.loads(file.read_text()))
            except tomllib.TOMLDecodeError as error:
                raise BridgeError(f"{file}: invalid TOML: {error}") from None
    return Config(workspace=workspace.resolve(), raw=raw)
