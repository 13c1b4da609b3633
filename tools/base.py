"""What a tool is: an id, a description the model reads, a pydantic ``Params`` model and ``run``.

Built-in tools subclass ``Tool`` in one file each, with the description in a ``.md`` file of the
same name beside it. Custom tools (project, user, plugins) can also use ``define_tool``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

if TYPE_CHECKING:
    from .context import ToolContext

P = TypeVar("P", bound=BaseModel)


class ToolError(Exception):
    """A failure the model should read and act on (no traceback reaches the model)."""


@dataclass(frozen=True)
class Attachment:
    """A file handed to the model beside the text output (an image, a PDF)."""

    mime: str
    data: bytes
    filename: str


@dataclass
class ToolResult:
    title: str
    output: str
    metadata: dict[str, Any] = field(default_factory=dict[str, Any])
    attachments: list[Attachment] = field(default_factory=list[Attachment])
    #: The user rejected part of the work without feedback (a call in a batch): the turn ends
    #: after this call, as when a rejection is raised.
    stops_turn: bool = False


class Tool(Generic[P]):
    """Subclass with ``id``, ``Params`` and ``run``; ``description`` defaults to ``<id>.md`` (or
    ``<module>.md``) beside the module."""

    id: str
    Params: type[P]
    description: str = ""
    #: The permission that governs this tool (used to hide tools an agent may never use).
    permission: str | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__dict__.get("description"):
            return
        source = inspect.getsourcefile(cls)
        if not source:
            return
        tool_id = cls.__dict__.get("id")
        names = [f"{tool_id}.md"] if isinstance(tool_id, str) else []
        for doc in (Path(source).with_name(n) for n in [*names, Path(source).with_suffix(".md").name]):
            if doc.is_file():
                cls.description = doc.read_text().strip()
                return

    async def init(self, ctx: InitContext) -> None:
        """Optional: adapt ``description`` or state to the configuration before the tool is offered."""

    async def run(self, params: P, ctx: ToolContext) -> ToolResult:
        raise NotImplementedError

    def available_for(self, model: str) -> bool:
        """Whether this tool is offered to ``model`` (some tools suit some model families only)."""
        del model
        return True

    def format_validation_error(self, error: ValidationError) -> str | None:
        """A tool's own wording for invalid arguments, or None for the standard message."""
        del error
        return None


@dataclass(frozen=True)
class InitContext:
    root: Path
    agent: str
    settings: dict[str, Any]


RunFunction = Callable[[Any, "ToolContext"], Awaitable[ToolResult]]


class FunctionTool(Tool[BaseModel]):
    """A tool built from a function by ``define_tool``."""

    id = "function"

    def __init__(
        self,
        tool_id: str,
        description: str,
        params: type[BaseModel],
        run: RunFunction,
        permission: str | None,
    ) -> None:
        self.id = tool_id
        self.description = description
        self.Params = params
        self._run = run
        self.permission = permission

    async def run(self, params: BaseModel, ctx: ToolContext) -> ToolResult:
        return await self._run(params, ctx)


def define_tool(
    description: str, params: type[BaseModel], *, id: str = "", permission: str | None = None
) -> Callable[[RunFunction], FunctionTool]:
    """Decorator for custom tools: ``@define_tool("Says hello", HelloParams)`` above ``async def``.

    Without ``id`` the tool is named after the module and variable it is exported as.
    """

    def wrap(run: RunFunction) -> FunctionTool:
        return FunctionTool(id, description, params, run, permission)

    return wrap
