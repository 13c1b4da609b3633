"""Which tools exist: the built-ins (an explicit list), project and user tool files, plugins.

Project tools live in ``<root>/.lspilot/tools/*.py`` (loaded only when the caller says the user
trusts the workspace), user tools in ``<user config dir>/tools/*.py``.
Each module exports tools (``define_tool`` results or ``Tool`` subclasses); an export named
``tool`` or after its file is called by the file name, any other export ``<file>_<name>``.
Plugins register through the entry-point group ``lspilot.tools``: the entry point is a tool, a
``Tool`` subclass, or a function called with the registry (to register tools and hooks).
"""

from __future__ import annotations

import importlib.util
import logging
import sys
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .base import InitContext, Tool
from .permission import PermissionEngine

if TYPE_CHECKING:
    from .execute import Outcome

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "lspilot.tools"


@dataclass
class HookCall:
    """A call as hooks see it: ``args`` may be changed by ``before`` hooks."""

    tool: str
    call_id: str
    session_id: str
    args: dict[str, Any]


class ToolVetoed(Exception):
    """Raised by a ``before`` hook to stop a call; the message reaches the model."""


BeforeHook = Callable[[HookCall], Awaitable[None]]
AfterHook = Callable[[HookCall, "Outcome"], Awaitable[None]]


@dataclass
class ToolRegistry:
    tools: dict[str, Tool[Any]] = field(default_factory=dict[str, Tool[Any]])
    before: list[BeforeHook] = field(default_factory=list[BeforeHook])
    after: list[AfterHook] = field(default_factory=list[AfterHook])
    #: Custom tool files or plugins that failed to load, with why (``lspilot tool`` prints them).
    load_errors: list[str] = field(default_factory=list[str])

    def register(self, tool: Tool[Any]) -> None:
        """Add ``tool``, replacing any tool with the same id."""
        if not getattr(tool, "id", ""):
            raise ValueError(f"tool {tool!r} has no id")
        self.tools[tool.id] = tool

    def add_hooks(self, before: BeforeHook | None = None, after: AfterHook | None = None) -> None:
        if before:
            self.before.append(before)
        if after:
            self.after.append(after)

    def get(self, name: str) -> Tool[Any] | None:
        """The tool called ``name``, repairing the case the model got wrong."""
        if name in self.tools:
            return self.tools[name]
        folded = {tool_id.lower(): tool for tool_id, tool in self.tools.items()}
        return folded.get(name.lower())

    def offered(self, permissions: PermissionEngine, model: str) -> list[Tool[Any]]:
        """Tools to show the model: not denied outright for this agent, suitable for this model."""
        return [
            tool
            for tool in self.tools.values()
            if tool.id != "invalid"
            and not (tool.permission and permissions.denied_outright(tool.permission))
            and tool.available_for(model)
        ]

    async def initialize(self, ctx: InitContext) -> None:
        """Run every tool's ``init`` (descriptions or schemas that depend on config); a tool whose
        init fails is dropped with the reason in ``load_errors`` rather than offered broken."""
        for tool_id, tool in list(self.tools.items()):
            try:
                await tool.init(ctx)
            except Exception as error:
                del self.tools[tool_id]
                self._failed(f"tool {tool_id}: init failed: {error}")

    def load_folder(self, folder: Path, namespace: str) -> None:
        for file in sorted(folder.glob("*.py")):
            try:
                module = _import_file(file, f"lspilot_{namespace}_tools.{file.stem}")
            except Exception as error:
                self._failed(f"{file}: {type(error).__name__}: {error}")
                continue
            for tool in _exported_tools(vars(module), file.stem):
                self.register(tool)

    def load_entry_points(self) -> None:
        for entry in entry_points(group=ENTRY_POINT_GROUP):
            try:
                target = entry.load()
                if isinstance(target, Tool):
                    self.register(target)  # pyright: ignore[reportUnknownArgumentType]
                elif isinstance(target, type) and issubclass(target, Tool):
                    self.register(target())  # pyright: ignore[reportUnknownArgumentType]
                elif callable(target):
                    target(self)
                else:
                    raise TypeError(f"expected a tool or a function, got {type(target).__name__}")
            except Exception as error:
                self._failed(f"entry point {entry.name} ({entry.value}): {error}")

    def _failed(self, problem: str) -> None:
        """A tool that could not be loaded: one line for the user (warned once), the traceback
        for the log (called while the error is handled)."""
        self.load_errors.append(problem)
        log.warning("%s", problem)
        log.info("%s", problem, exc_info=True)


def _import_file(file: Path, module_name: str) -> Any:
    spec = importlib.util.spec_from_file_location(module_name, file)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {file}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def _exported_tools(names: dict[str, Any], stem: str) -> Iterable[Tool[Any]]:
    for name, value in names.items():
        if name.startswith("_"):
            continue
        tool: Tool[Any] | None = None
        if isinstance(value, Tool):
            tool = value  # pyright: ignore[reportUnknownVariableType]
        elif isinstance(value, type) and issubclass(value, Tool) and value.__module__ == names["__name__"]:
            tool = value()  # pyright: ignore[reportUnknownVariableType]
        if tool is None:
            continue
        if not getattr(tool, "id", ""):
            tool.id = stem if name in ("tool", stem) else f"{stem}_{name}"
        yield tool


def builtin_tools() -> list[Tool[Any]]:
    from .apply_patch import ApplyPatch  # noqa: PLC0415
    from .bash import Bash  # noqa: PLC0415
    from .batch import Batch  # noqa: PLC0415 - batch imports the wrapper, which imports us
    from .edit import Edit  # noqa: PLC0415
    from .glob import Glob  # noqa: PLC0415
    from .grep import Grep  # noqa: PLC0415
    from .invalid import Invalid  # noqa: PLC0415
    from .ls import List  # noqa: PLC0415
    from .lsp import Lsp  # noqa: PLC0415
    from .multiedit import MultiEdit  # noqa: PLC0415
    from .question import Question  # noqa: PLC0415
    from .read import Read  # noqa: PLC0415
    from .skill import Skill  # noqa: PLC0415
    from .todo import TodoRead, TodoWrite  # noqa: PLC0415
    from .webfetch import WebFetch  # noqa: PLC0415
    from .write import Write  # noqa: PLC0415

    return [
        Read(),
        Edit(),
        MultiEdit(),
        Write(),
        ApplyPatch(),
        Glob(),
        Grep(),
        List(),
        Bash(),
        Lsp(),
        TodoWrite(),
        TodoRead(),
        Batch(),
        WebFetch(),
        Question(),
        Skill(),
        Invalid(),
    ]


def load_registry(root: Path, user_tools: Path | None, *, project: bool) -> ToolRegistry:
    """Built-ins, then plugins, then user tools, then project tools (later ones replace earlier).
    ``project``: whether to load the project's tools at all (only in a workspace the user trusts:
    importing them runs the repository's code)."""
    registry = ToolRegistry()
    for tool in builtin_tools():
        registry.register(tool)
    registry.load_entry_points()
    if user_tools:
        from .skill import Skill  # noqa: PLC0415

        registry.register(Skill(user_tools.parent / "skills"))  # the user's skills beside their tools
    if user_tools and user_tools.is_dir():
        registry.load_folder(user_tools, "user")
    folder = root / ".lspilot" / "tools"
    if project and folder.is_dir():
        registry.load_folder(folder, "project")
    return registry
