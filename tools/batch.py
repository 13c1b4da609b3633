"""batch: run up to ten independent tool calls at once and return all their results."""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .base import Tool, ToolError, ToolResult
from .context import ToolContext

MAX_CALLS = 10


class BatchCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tool: str = Field(description="The tool to call")
    parameters: dict[str, Any] = Field(default_factory=dict[str, Any], description="Its arguments")


class BatchParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tool_calls: list[BatchCall] = Field(
        min_length=1, max_length=MAX_CALLS, description=f"1 to {MAX_CALLS} independent tool calls"
    )


class Batch(Tool[BatchParams]):
    id = "batch"
    Params = BatchParams

    async def run(self, params: BatchParams, ctx: ToolContext) -> ToolResult:
        run_tool = ctx.run_tool
        if run_tool is None:
            raise ToolError("batch is not available here.")
        nested = [c.tool for c in params.tool_calls if c.tool.lower() == "batch"]
        if nested:
            raise ToolError("batch cannot contain batch; list the tools directly.")
        done = 0

        async def one(index: int, call: BatchCall) -> Any:
            nonlocal done
            outcome = await run_tool(call.tool, call.parameters, f"{ctx.call_id}.{index}")
            done += 1
            ctx.metadata(f"{done}/{len(params.tool_calls)} calls done")
            return outcome

        outcomes = await asyncio.gather(*(one(i, c) for i, c in enumerate(params.tool_calls)))
        failed = sum(o.error is not None for o in outcomes)
        sections = [
            f"<result index={i} tool={o.tool} status={'error' if o.error else 'ok'}>\n"
            f"{o.model_text}\n</result>"
            for i, o in enumerate(outcomes)
        ]
        return ToolResult(
            title=f"{len(outcomes) - failed}/{len(outcomes)} calls succeeded",
            output="\n".join(sections),
            metadata={
                "calls": [
                    {"tool": o.tool, "ok": o.error is None, "title": o.result.title if o.result else o.error}
                    for o in outcomes
                ]
            },
            stops_turn=any(o.stops_turn for o in outcomes),
        )
