"""question: ask the user something and wait for the answer (same channel as permission asks)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from .base import Tool, ToolError, ToolResult
from .context import ToolContext


class QuestionParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    question: str = Field(min_length=1, description="The question, complete and self-contained")
    options: list[str] = Field(
        default_factory=list[str],
        max_length=8,
        description="Suggested answers the user can pick from (they may still answer freely)",
    )


class Question(Tool[QuestionParams]):
    id = "question"
    Params = QuestionParams
    permission = "question"

    async def run(self, params: QuestionParams, ctx: ToolContext) -> ToolResult:
        answer = await ctx.env.permissions.asker.question(params.question, params.options)
        if not answer.strip():
            raise ToolError("The user gave no answer. Continue with your best judgement or stop and explain.")
        return ToolResult(
            title=params.question,
            output=f"The user answered: {answer}",
            metadata={"question": params.question, "answer": answer},
        )
