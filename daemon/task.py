"""task: hand a self-contained job to a subagent, which works in a child session of its own.

Lives in daemon/ because it runs the agent loop. The subagent gets its agent's tools minus
``task`` (no nesting) and ``todowrite``/``todoread``; its progress streams into this call's
metadata; its final answer is the result. Passing ``session_id`` resumes an earlier subagent.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from tools import Tool, ToolContext, ToolError, ToolResult

from .config import ConfigError
from .loop import Event

if TYPE_CHECKING:
    from .runtime import Runtime

EXCLUDED = frozenset({"task", "todowrite", "todoread"})


class TaskParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    description: str = Field(description="A short (3-5 words) description of the task")
    prompt: str = Field(description="The complete task for the subagent: it sees nothing else")
    subagent_type: str = Field(description="Which subagent to use (see the list in the description)")
    session_id: str | None = Field(default=None, description="Continue this earlier subagent session")


class Task(Tool[TaskParams]):
    id = "task"
    Params = TaskParams
    permission = "task"

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        subagents = [a for a in runtime.agents().values() if a.subagent]
        listing = "\n".join(f"- {a.name}: {a.description}" for a in subagents)
        self.description = (
            "Launch a subagent for a self-contained job (a broad search, a multi-step investigation) "
            "so its work does not fill this conversation. It sees only your prompt: say exactly "
            "what to do and what to report back. Run several at once when they are independent.\n"
            f"Subagents:\n{listing}"
        )

    async def run(self, params: TaskParams, ctx: ToolContext) -> ToolResult:
        agent = self.runtime.agents().get(params.subagent_type)
        if agent is None or not agent.subagent:
            names = ", ".join(a.name for a in self.runtime.agents().values() if a.subagent)
            raise ToolError(f"There is no subagent {params.subagent_type!r}; use one of: {names}.")
        tools = (agent.tools or frozenset(self.runtime.registry.tools)) - EXCLUDED
        child_agent = dataclasses.replace(agent, tools=frozenset(tools))
        steps: list[str] = []

        def forward(event: Event) -> None:
            if event.type == "tool" and event.data["state"] in ("completed", "error"):
                steps.append(f"{event.data['tool']}: {event.data.get('title') or event.data['state']}")
                ctx.metadata(params.description, {"sessionId": loop.env.session.id, "steps": list(steps)})

        try:
            loop = self.runtime.loop(
                ctx.env.permissions.asker,
                session_id=params.session_id,
                agent=child_agent,
                listeners=[forward],
                parent=ctx.env,
            )
            try:
                result = await loop.run_turn(params.prompt)
            finally:
                await loop.env.close()
        except ConfigError as error:  # no such session, or another turn is running in it
            raise ToolError(str(error)) from None
        if result.stop_reason not in ("end", "max_steps"):
            raise ToolError(
                f"The {agent.name} subagent stopped ({result.stop_reason}): {result.error or ''}".strip()
            )
        return ToolResult(
            title=params.description,
            output=f"{result.text}\n\n(subagent session_id: {loop.env.session.id}; pass it to continue)",
            metadata={"sessionId": loop.env.session.id, "steps": steps, "stopReason": result.stop_reason},
        )
