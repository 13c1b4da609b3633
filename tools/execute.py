"""The wrapper every tool call goes through, whoever makes it (agent loop, editor, CLI, batch).

Name repair -> JSON parsing -> ``before`` hooks -> validation -> run (cancellable through
``ctx.abort``) -> output truncation -> ``after`` hooks. Failures become an ``Outcome`` with an
error the model can act on; nothing raises out of here but cancellation of the caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import sys
import time
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from .base import Tool, ToolError, ToolResult
from .context import ToolContext, ToolEnv
from .permission import PermissionRejected
from .registry import HookCall, ToolRegistry, ToolVetoed
from .truncate import NOTES_ROOM, OutputLimits, truncate

log = logging.getLogger(__name__)


@dataclass
class Outcome:
    call_id: str
    tool: str
    args: dict[str, Any]
    result: ToolResult | None = None
    error: str | None = None
    #: The user rejected without a word, or cancelled: the loop should stop the turn.
    stops_turn: bool = False
    started: float = field(default_factory=time.time)
    ended: float = 0.0

    @property
    def model_text(self) -> str:
        """What the model reads back for this call."""
        if self.result is not None:
            return self.result.output
        return f"Error: {self.error}"


def validation_message(tool: Tool[Any], error: ValidationError) -> str:
    custom = tool.format_validation_error(error)
    if custom:
        return custom
    problems = "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in error.errors()
    )
    return (
        f"The {tool.id} tool was called with invalid arguments: {problems}. "
        "Please rewrite the input so it satisfies the expected schema."
    )


def _accepts_none(params: type[BaseModel], name: str) -> bool:
    info = params.model_fields.get(name)
    if info is None:
        return True  # unknown keys are left for validation to report
    annotation = info.annotation
    return get_origin(annotation) in (Union, types.UnionType) and type(None) in get_args(annotation)


def _drop_nulls(params: type[BaseModel], args: dict[str, Any]) -> dict[str, Any]:
    """Models (and OpenAI strict mode) send ``null`` for optional parameters: treat as omitted."""
    return {k: v for k, v in args.items() if v is not None or _accepts_none(params, k)}


async def execute(
    registry: ToolRegistry, name: str, raw_args: str | dict[str, Any], ctx: ToolContext
) -> Outcome:
    outcome = Outcome(ctx.call_id, name, {})
    try:
        await _execute(registry, name, raw_args, ctx, outcome)
    finally:
        outcome.ended = time.time()
    return outcome


async def _execute(
    registry: ToolRegistry, name: str, raw_args: str | dict[str, Any], ctx: ToolContext, outcome: Outcome
) -> None:
    tool = registry.get(name)
    if tool is None:
        invalid = registry.get("invalid")
        if invalid is None:
            outcome.error = f"There is no tool called {name!r}."
            return
        names = ", ".join(sorted(t for t in registry.tools if t != "invalid"))
        error = f"There is no tool called {name!r}. The tools you can call are: {names}."
        tool, raw_args = invalid, {"tool": name, "error": error}
    outcome.tool = tool.id
    if tool.id != "invalid" and not _may_call(tool, ctx.env):
        outcome.error = f"the {tool.id} tool is not available to the {ctx.env.agent} agent."
        return
    if isinstance(raw_args, str):
        try:
            raw_args = json.loads(raw_args or "{}")
        except (json.JSONDecodeError, RecursionError) as error:  # RecursionError: nested too deep
            why = "nested too deeply" if isinstance(error, RecursionError) else error
            outcome.error = (
                f"The {tool.id} tool was called with arguments that are not valid JSON ({why}). "
                "Please send the arguments as one JSON object."
            )
            return
    if not isinstance(raw_args, dict):
        outcome.error = (
            f"The {tool.id} tool needs its arguments as a JSON object, not {type(raw_args).__name__}."
        )
        return
    call = HookCall(tool.id, ctx.call_id, ctx.session_id, _drop_nulls(tool.Params, raw_args))
    outcome.args = call.args
    try:
        for hook in registry.before:
            await hook(call)
        params = tool.Params.model_validate(call.args)
    except ToolVetoed as veto:
        outcome.error = f"The call was blocked before it ran: {veto}"
        return
    except ValidationError as error:
        outcome.error = validation_message(tool, error)
        return
    outcome.args = call.args
    if ctx.depth > 0 and tool.id == "batch":
        outcome.error = "batch cannot be nested inside batch; call the tools directly."
        return
    ctx.run_tool = functools.partial(_nested, registry, ctx)
    await _run(tool, params, ctx, outcome)
    if outcome.result is not None:
        _bound(outcome.result, ctx, tool.id)
    for after in registry.after:
        try:
            await after(call, outcome)
        except Exception:
            log.exception("after-hook failed for %s", tool.id)


def _may_call(tool: Tool[Any], env: ToolEnv) -> bool:
    """Whether the agent may call ``tool``: one it is offered (a call in a batch too; todowrite,
    question, skill and task ask no permission of their own, not being offered is their rule)."""
    if env.tools is not None:
        return tool.id in env.tools
    return not (tool.permission and env.permissions.denied_outright(tool.permission))


async def _nested(
    registry: ToolRegistry, parent: ToolContext, name: str, args: dict[str, Any], call_id: str
) -> Outcome:
    child = ToolContext(parent.env, call_id, parent.message_id, parent.abort, depth=parent.depth + 1)
    return await execute(registry, name, args, child)


async def _run(tool: Tool[Any], params: BaseModel, ctx: ToolContext, outcome: Outcome) -> None:
    """Run the tool in the caller's task, which ``ctx.abort`` cancels while the tool runs; that
    cancellation ends here as "Cancelled by the user.", while a cancellation of the caller goes
    on up once the tool's cleanup (killing subprocesses) ran. (A task of its own would cost two
    event loop turns per call.)"""
    task = asyncio.current_task()
    assert task is not None
    before = task.cancelling()
    ctx.abort.guard(task)
    try:
        outcome.result = await tool.run(params, ctx)
        outcome.stops_turn = outcome.result.stops_turn
    except asyncio.CancelledError:
        outcome.error = "Cancelled by the user." if ctx.abort.is_set() else "Cancelled."
        outcome.stops_turn = True
    except PermissionRejected as rejected:
        outcome.error = str(rejected)
        outcome.stops_turn = rejected.stops_turn
    except ToolError as error:
        outcome.error = str(error)
    except OSError as error:  # the file system's answer (a symlink loop, no permission, a name too long)
        named = isinstance(error.filename, str | bytes)
        where = f": {ctx.relative(Path(os.fsdecode(error.filename)))}" if named else ""
        outcome.error = f"{error.strerror or error}{where}"
    except Exception as error:
        log.exception("tool %s failed", tool.id)
        outcome.error = (
            f"The {tool.id} tool failed unexpectedly ({type(error).__name__}: {error}). "
            "This is a fault in lspilot, not in your input; the details are in lspilot's log."
        )
    finally:
        ctx.abort.release(task)
    if task.cancelling() > before:
        await _settle_abort(task, before, ctx.abort.is_set())


async def _settle_abort(task: asyncio.Task[Any], before: int, aborted: bool) -> None:
    """The caller's task was cancelled during the call: take back the abort's cancellation (its
    request may still be pending if the tool finished first) and re-raise the caller's own."""
    if aborted:
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.sleep(0)  # a pending cancellation is delivered here, not in the caller
        task.uncancel()
    if task.cancelling() > before:
        raise asyncio.CancelledError


def _bound(result: ToolResult, ctx: ToolContext, tool: str) -> None:
    """Truncate unless the tool bounded its own output (it then sets ``metadata['truncated']``);
    what such a tool returns beyond ``max_bytes`` and ``NOTES_ROOM`` is cut all the same (its
    own count of lines stands), so no output is ever unbounded."""
    limits = ctx.env.limits
    if "truncated" in result.metadata:
        room = limits.max_bytes + NOTES_ROOM
        if len(result.output) * 4 <= room or len(result.output.encode("utf-8", "surrogatepass")) <= room:
            return
        log.warning("the %s tool bounded its output but returned over %d bytes", tool, room)
        limits = OutputLimits(max_lines=sys.maxsize, max_bytes=limits.max_bytes)
    cut = truncate(result.output, limits, ctx.env.output_dir, f"{ctx.call_id or 'call'}")
    result.output = cut.output
    result.metadata["truncated"] = result.metadata.get("truncated") or cut.path is not None
    if cut.path is not None:
        result.metadata["outputPath"] = str(cut.path)
