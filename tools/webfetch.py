"""The ``webfetch`` tool: fetch a URL and return it as markdown, text or html (work in progress)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .base import Tool, ToolError, ToolResult
from .context import ToolContext


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(description="The http:// or https:// URL to fetch.")
    format: Literal["markdown", "text", "html"] = Field(
        default="markdown", description="How to return the content: markdown (default), text, or html."
    )
    timeout: float | None = Field(
        default=None, gt=0, le=120, description="Timeout in seconds (default 30, at most 120)."
    )


class WebFetch(Tool[Params]):
    id = "webfetch"
    Params = Params
    permission = "webfetch"

    async def run(self, params: Params, ctx: ToolContext) -> ToolResult:
        raise ToolError("webfetch is not implemented yet.")
