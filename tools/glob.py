"""The `glob` tool (placeholder while the ripgrep-backed version is written)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .base import Tool, ToolError, ToolResult
from .context import ToolContext


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pattern: str = Field(description="The pattern to search for.")
    path: str | None = Field(default=None, description="The folder to search in (default: workspace root).")


class Glob(Tool[Params]):
    id = "glob"
    Params = Params
    permission = "read"
    description = "Not available yet."

    async def run(self, params: Params, ctx: ToolContext) -> ToolResult:
        raise ToolError("The glob tool is not implemented yet.")
