"""todowrite / todoread: the session's task list, which the model keeps to plan and show progress."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .base import Tool, ToolError, ToolResult
from .context import Todo, ToolContext


class TodoItem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(description="A short unique id for the task")
    content: str = Field(min_length=1, description="What to do, in a few words")
    status: Literal["pending", "in_progress", "completed", "cancelled"] = Field(
        description="pending, in_progress (one task at a time), completed or cancelled"
    )
    priority: Literal["high", "medium", "low"] = Field(default="medium", description="high, medium or low")


class TodoWriteParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    todos: list[TodoItem] = Field(description="The whole updated task list (replaces the previous one)")


class TodoReadParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


def render(todos: list[Todo]) -> str:
    marks = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]", "cancelled": "[-]"}
    return (
        "\n".join(f"{marks[t.status]} {t.content} ({t.priority}, id {t.id})" for t in todos) or "(no tasks)"
    )


def _summary(todos: list[Todo]) -> dict[str, object]:
    return {
        "todos": [vars(t) for t in todos],
        "open": sum(t.status in ("pending", "in_progress") for t in todos),
    }


class TodoWrite(Tool[TodoWriteParams]):
    id = "todowrite"
    Params = TodoWriteParams
    permission = "todo"

    async def run(self, params: TodoWriteParams, ctx: ToolContext) -> ToolResult:
        ids = [t.id for t in params.todos]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ToolError(f"Task ids must be unique; repeated: {', '.join(duplicates)}.")
        todos = [Todo(t.id, t.content, t.status, t.priority) for t in params.todos]
        ctx.env.session.set_todos(todos)
        meta = _summary(todos)
        return ToolResult(f"{meta['open']} open tasks", render(todos), meta)


class TodoRead(Tool[TodoReadParams]):
    id = "todoread"
    Params = TodoReadParams
    permission = "todo"

    async def run(self, params: TodoReadParams, ctx: ToolContext) -> ToolResult:
        todos = ctx.env.session.todos()
        meta = _summary(todos)
        return ToolResult(f"{meta['open']} open tasks", render(todos), meta)
