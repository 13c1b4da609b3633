"""lspilot configuration: TOML files merged user-wide then per project, plus the data dir.

Files (later ones win): ``<user config dir>/config.toml``, ``<workspace>/lspilot.toml``,
``<workspace>/.lspilot/config.toml``. Permissions are the exception: the user's rules are applied
after the project's, so a repository's config cannot loosen what its user has tightened (see
``Config.permission_rules`` for where an agent's rules go).
The project's files count only in a workspace the user trusts (``daemon.trust``): elsewhere only
their deny and ask permission rules apply (a repository may tighten, never loosen), and the
project's tools are not loaded.
``LSPILOT_DATA_DIR`` moves the data dir (installed servers, logs, saved outputs, sessions).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import platformdirs

if TYPE_CHECKING:  # imported where used: `lspilot serve` must answer its editor before lsprotocol loads
    from lsp_bridge import BridgeConfig
    from tools import OutputLimits, Rule

    from .agents import Agent


class ConfigError(Exception):
    """A configuration file is invalid; the message names the file and the key."""


class UsageError(ConfigError):
    """What the command line (or the editor's request) names is not there: a session, an agent, a
    workspace folder. The CLI exits 2 with it, as for any other usage error."""


TOP_LEVEL_KEYS = {"model", "api_base", "provider_options", "agents", "permission", "tools", "lsp"}


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
    #: Each file that was read, with its contents, in the order they were applied.
    layers: tuple[tuple[Path, dict[str, Any]], ...] = ()
    #: The user trusts the workspace: its config files count in full and its tools are loaded.
    trusted: bool = False

    def _file(self, section: str, *keys: str) -> str:
        """``"FILE: "`` for the last file that sets one of ``keys`` in ``[section]`` (the one whose
        value is in effect), for a message about it."""
        for file, table in reversed(self.layers):
            values = table.get(section)
            if isinstance(values, dict) and any(key in values for key in keys):
                return f"{file}: "
        return ""

    def permission_rules(self, agent: Agent | None = None) -> list[Rule]:
        """The rules for ``agent``, the last match winning: the defaults; the project's rules,
        then the project's for the agent; the user's; the agent's own restrictions; the user's
        for the agent. So a repository cannot loosen what its user set, a rule for every agent
        (``bash = "allow"``) does not open up the plan agent, and only the user's rules for an
        agent loosen its restrictions."""
        from tools import DEFAULT_RULES, rules_from_config  # noqa: PLC0415

        user = user_config_dir()
        layers: dict[bool, list[Rule]] = {False: [], True: []}  # by "is the user's"
        for file, table in self.layers:
            try:
                layers[file.is_relative_to(user)] += rules_from_config(table.get("permission", {}), str(file))
            except ValueError as error:
                raise ConfigError(str(error)) from None
        own: dict[bool, list[Rule]] = {False: [], True: []}
        for file, rules in agent.configured_rules if agent else ():
            own[file.is_relative_to(user)] += rules
        restrictions = agent.rules if agent else ()
        return [*DEFAULT_RULES, *layers[False], *own[False], *layers[True], *restrictions, *own[True]]

    def output_limits(self) -> OutputLimits:
        """``[tools] max_lines / max_bytes``; sub-tables (``[tools.bash]``, ...) belong to one tool each."""
        from tools import OutputLimits  # noqa: PLC0415

        table: dict[str, Any] = self.raw.get("tools", {})
        limits = {key: value for key, value in table.items() if not isinstance(value, dict)}
        known = {"max_lines", "max_bytes"}
        unknown = set(limits) - known
        if unknown:
            raise ConfigError(
                f"{self._file('tools', *unknown)}unknown [tools] settings: {sorted(unknown)}; "
                f"known: {sorted(known)} and one table per tool"
            )
        for key, value in limits.items():
            if not isinstance(value, int) or value < 1:
                raise ConfigError(
                    f"{self._file('tools', key)}[tools] {key} must be a positive integer, not {value!r}"
                )
        self._check_tool_tables(table)
        return OutputLimits(**limits)

    def _check_tool_tables(self, table: dict[str, Any]) -> None:
        """``[tools.bash]`` and ``[tools.edit]``: a mistake in the one dropped the bash tool with a
        traceback, in the other it was ignored (``warnings = "false"`` turned warnings on)."""
        from tools import ToolError  # noqa: PLC0415
        from tools.bash import BashSettings  # noqa: PLC0415

        try:
            BashSettings.from_settings({"tools": {"bash": table.get("bash", {})}})
        except ToolError as error:
            raise ConfigError(f"{self._file('tools', 'bash')}{error}") from None
        edit: Any = table.get("edit", {})
        where = f"{self._file('tools', 'edit')}[tools.edit]"  # a table: other values are refused above
        unknown = sorted(set(edit) - {"warnings"})  # pyright: ignore[reportUnknownArgumentType]
        if unknown:
            raise ConfigError(f"{where}: unknown settings {unknown}; known: ['warnings']")
        if not isinstance(edit.get("warnings", False), bool):
            raise ConfigError(f"{where} warnings must be true or false, not {edit['warnings']!r}")

    def bridge(self) -> BridgeConfig:
        from lsp_bridge import BridgeConfig  # noqa: PLC0415

        lsp: dict[str, Any] = dict(self.raw.get("lsp", {}))
        servers = lsp.pop("servers", {})
        known = set(BridgeConfig.__dataclass_fields__) - {"data_dir", "servers"}
        unknown = set(lsp) - known
        if unknown:
            raise ConfigError(
                f"{self._file('lsp', *unknown)}unknown [lsp] settings: {sorted(unknown)}; "
                f"known: {sorted(known)}"
            )
        for key, value in lsp.items():
            default = BridgeConfig.__dataclass_fields__[key].default
            where = self._file("lsp", key)
            if isinstance(default, bool):
                if not isinstance(value, bool):
                    raise ConfigError(f"{where}[lsp] {key} must be true or false, not {value!r}")
            elif isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ConfigError(f"{where}[lsp] {key} must be a positive number, not {value!r}")
        if not isinstance(servers, dict):
            raise ConfigError(
                f"{self._file('lsp', 'servers')}[lsp] servers must be a table ([lsp.servers.NAME]), "
                f"not {servers!r}"
            )
        return BridgeConfig(data_dir=data_dir(), servers=servers, **lsp)


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)  # pyright: ignore[reportUnknownArgumentType]
        else:
            merged[key] = value
    return merged


TABLES = ("provider_options", "agents", "permission", "tools", "lsp")
STRINGS = ("model", "api_base")
#: provider_options that litellm sends as they are: a value of the wrong type failed the request
#: as a connection error (retried for ~30 s), or was left for the provider to refuse.
NUMBERS = ("timeout", "temperature", "top_p", "presence_penalty", "frequency_penalty")
INTEGERS = ("max_tokens", "max_completion_tokens", "seed")
#: An api_key of another type failed every request inside litellm ("'int' object has no attribute
#: 'strip'"), which the loop took for a server error and retried.
OPTION_STRINGS = ("api_key", "api_version", "organization")
#: What lspilot sets in every request itself; from provider_options they replaced it without a
#: word (``messages = []`` sent no conversation, ``stream = false`` failed every call).
RESERVED_OPTIONS = {
    "model": "set `model` (or an agent's `model`) instead",
    "messages": "lspilot sends the conversation",
    "tools": "lspilot sends the agent's tools",
    "stream": "lspilot streams every answer",
    "stream_options": "lspilot asks for the usage with every streamed answer",
    "num_retries": "lspilot retries itself, visibly",
    "n": "lspilot reads one answer",
}
#: ``[lsp.servers.NAME]`` fields (``lsp_bridge.registry``) and what each must be: the registry
#: converted what it got (``command = "gopls serve"`` became one letter per word, ``enabled =
#: "false"`` true) or failed with a traceback.
SERVER_FIELDS = {
    **dict.fromkeys(("command", "extensions", "root_markers"), "strings"),
    **dict.fromkeys(("language_ids", "init_options", "settings", "env"), "table"),
    **dict.fromkeys(("enabled", "counts_disk_bom"), "bool"),
    **dict.fromkeys(("publish_delay", "new_file_delay"), "number"),
}


def _check_types(file: Path, table: dict[str, Any]) -> None:
    for key in TABLES:
        if key in table and not isinstance(table[key], dict):
            raise ConfigError(
                f"{file}: {key} must be a table ([{key}] or {key} = {{ ... }}), not {table[key]!r}"
            )
    for key in STRINGS:
        if key in table and not isinstance(table[key], str):
            raise ConfigError(f"{file}: {key} must be a string, not {table[key]!r}")
    _check_provider_options(file, table.get("provider_options", {}))
    _check_servers(file, table.get("lsp", {}).get("servers", {}))


def _check_provider_options(file: Path, options: dict[str, Any]) -> None:
    for key, value in options.items():
        if key in RESERVED_OPTIONS:
            raise ConfigError(f"{file}: provider_options.{key} cannot be set: {RESERVED_OPTIONS[key]}")
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if key in NUMBERS and not number:
            raise ConfigError(f"{file}: provider_options.{key} must be a number, not {value!r}")
        if key in INTEGERS and (not number or not isinstance(value, int)):
            raise ConfigError(f"{file}: provider_options.{key} must be an integer, not {value!r}")
        if key in OPTION_STRINGS and not isinstance(value, str):
            raise ConfigError(f"{file}: provider_options.{key} must be a string, not {value!r}")
    headers = options.get("extra_headers", {})
    if not isinstance(headers, dict):
        raise ConfigError(f"{file}: provider_options.extra_headers must be a table, not {headers!r}")
    for name, value in headers.items():  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(value, str):
            raise ConfigError(
                f"{file}: provider_options.extra_headers.{name} must be a string, not {value!r}"
            )


def _check_servers(file: Path, servers: Any) -> None:
    if not isinstance(servers, dict):
        return  # said by Config.bridge, with the file whose value is in effect
    for name, spec in servers.items():  # pyright: ignore[reportUnknownVariableType]
        where = f"{file}: lsp.servers.{name}"
        if not isinstance(spec, dict):
            raise ConfigError(f"{where} must be a table ([lsp.servers.{name}]), not {spec!r}")
        unknown = sorted(set(spec) - set(SERVER_FIELDS))  # pyright: ignore[reportUnknownArgumentType]
        if unknown:
            raise ConfigError(f"{where}: unknown settings {unknown}; known: {sorted(SERVER_FIELDS)}")
        for key, value in spec.items():  # pyright: ignore[reportUnknownVariableType]
            kind = SERVER_FIELDS[key]
            strings = isinstance(value, list) and all(isinstance(v, str) for v in value)  # pyright: ignore[reportUnknownVariableType]
            if kind == "strings" and not (strings and (value or key != "command")):
                raise ConfigError(f'{where}.{key} must be a list of strings, e.g. ["a", "b"], not {value!r}')
            if kind == "table" and not isinstance(value, dict):
                raise ConfigError(f"{where}.{key} must be a table, not {value!r}")
            if kind == "bool" and not isinstance(value, bool):
                raise ConfigError(f"{where}.{key} must be true or false, not {value!r}")
            if kind == "number" and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise ConfigError(f"{where}.{key} must be a number, not {value!r}")


def files(workspace: Path) -> tuple[Path, ...]:
    """The configuration files of ``workspace``, the later ones winning: the user's, then the
    project's (``project_files``)."""
    return (user_config_dir() / "config.toml", *project_files(workspace))


def project_files(workspace: Path) -> tuple[Path, Path]:
    """The workspace's own configuration files: in full only once the user trusts it."""
    return workspace / "lspilot.toml", workspace / ".lspilot" / "config.toml"


def stamp(workspace: Path) -> tuple[tuple[int, int] | bool | None, ...]:
    """What ``workspace``'s configuration files are now (modification time and size, or None for
    a missing one), and whether the user trusts it: a daemon reads them again when this changes."""
    from . import trust  # noqa: PLC0415 - trust reads the data dir from here

    stamps: list[tuple[int, int] | bool | None] = []
    for file in files(workspace):
        try:
            status = file.stat()
        except OSError:
            stamps.append(None)
        else:
            stamps.append((status.st_mtime_ns, status.st_size))
    return (*stamps, trust.is_trusted(workspace))


def check_workspace(workspace: Path) -> None:
    """A ``UsageError`` when the workspace is no folder (``--root`` naming a file or a path that
    does not exist)."""
    if not workspace.is_dir():
        what = "is not a folder" if workspace.exists() else "does not exist"
        raise UsageError(f"the workspace {workspace} {what}: give a project folder (--root DIR)")


def read_file(file: Path) -> dict[str, Any] | None:
    """The TOML table in ``file`` (None when there is no such file); a ``ConfigError`` when it
    cannot be read or is no TOML."""
    if not file.is_file():
        return None
    try:
        # utf-8-sig: Notepad and PowerShell start UTF-8 with a byte order mark, which TOML refuses
        return tomllib.loads(file.read_text(encoding="utf-8-sig"))
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{file}: invalid TOML: {error}") from None
    except RecursionError:  # tomllib's parser is recursive: a[[[[...]]]] hundreds deep
        raise ConfigError(f"{file}: invalid TOML: nested too deeply") from None
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"{file}: invalid TOML: not UTF-8 text ({error.reason} at byte {error.start})"
        ) from None
    except OSError as error:
        raise ConfigError(f"{file}: cannot be read: {error.strerror or error}") from None


def load(workspace: Path) -> Config:
    """The merged configuration of ``workspace``; a ``ConfigError`` when a file is invalid, or a
    ``UsageError`` when the workspace is no folder. In a workspace the user does not trust, what
    its files would loosen is left out, and a warning says so."""
    from . import trust  # noqa: PLC0415 - trust reads the data dir from here

    check_workspace(workspace)
    trusted = trust.is_trusted(workspace)
    raw: dict[str, Any] = {}
    layers: list[tuple[Path, dict[str, Any]]] = []
    for file in files(workspace):
        table = read_file(file)
        if table is None:
            continue
        if not trusted and file in project_files(workspace):
            table = trust.tightening(table)
        unknown = set(table) - TOP_LEVEL_KEYS
        if unknown:
            raise ConfigError(f"{file}: unknown settings {sorted(unknown)}; known: {sorted(TOP_LEVEL_KEYS)}")
        _check_types(file, table)
        layers.append((file, table))
        raw = _merge(raw, table)
    if not trusted:
        trust.warn_untrusted(workspace)
    return Config(workspace=workspace.resolve(), raw=raw, layers=tuple(layers), trusted=trusted)
