"""invalid: where calls to tools that do not exist are routed, to tell the model what does."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .base import Tool, ToolError, ToolResult
from .context import ToolContext


class InvalidParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tool: str = Field(description="The tool name the model asked for")
    error: str = Field(description="What was wrong with the call")


class Invalid(Tool[InvalidParams]):
    id = "invalid"
    Params = InvalidParams
    description = "Reports a call to a tool that does not exist. Never call this tool yourself."

    async def run(self, params: InvalidParams, ctx: ToolContext) -> ToolResult:
        raise ToolError(params.error)
