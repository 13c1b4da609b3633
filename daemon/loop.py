"""The agent loop: prompt -> model step -> tool calls -> results -> ... until the model stops.

Everything is written to the store as it happens and sent to the session's listeners as
events. Cancel the task running ``run_turn`` to stop a turn at any point.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tools import (
    InitContext,
    PermissionRejected,
    PermissionRequest,
    Tool,
    ToolContext,
    ToolEnv,
    ToolError,
    ToolRegistry,
    execute,
    tool_spec,
)
from tools.schema import provider_of

from . import history, jsontext
from .agents import Agent
from .model import ModelSettings, Step, ToolCall, arguments_text, stream_step
from .prompt import system_prompt
from .provider_errors import classify, describe, explain, retry_after
from .store import Store
from .store_errors import StoreError
from .stream_parts import StoredAnswer

log = logging.getLogger(__name__)

Listener = Callable[["Event"], None]
DOOM_LOOP_REPEATS = 3
CUT_OFF = (
    "The model's answer was cut off at its output limit. Ask it to go on, or raise max_tokens "
    "in provider_options."
)
CUT_CALL = (
    "your answer reached the output limit in the middle of this call's arguments, so the call was "
    "cut short and not run. Send less in one call: write a large file in parts (write the first "
    "part, then add the rest with edit), or split the work into several calls"
)
FILTERED = "The provider's content filter stopped the model's answer."
#: A step's finish reason that ends the turn short of an answer -> (stop reason, why).
SHORT = {"length": ("length", CUT_OFF), "content_filter": ("filtered", FILTERED)}


@dataclass
class Event:
    type: str  # turn.start | text | reasoning | tool | retry | compaction | error | turn.end
    session_id: str
    data: dict[str, Any] = field(default_factory=dict[str, Any])


@dataclass
class TurnResult:
    session_id: str
    turn_id: str
    stop_reason: str  # end | length | filtered | max_steps | cancelled | rejected | error
    text: str = ""
    error: str | None = None  # why, unless it ended with an answer (or was cancelled or rejected)


@dataclass
class Retry:
    attempts: int = 6
    #: Attempts in all when the connection is refused (nothing listens at the address) or the host
    #: name does not resolve: one quick retry for a server that is restarting, then the user
    #: hears of it instead of waiting ~30 s.
    refused_attempts: int = 2
    base_delay: float = 1.0
    max_delay: float = 30.0
    #: A longer Retry-After from the provider ends the turn (with how long it asked for) instead.
    max_retry_after: float = 60.0
    #: Seconds without a chunk, once an answer has started streaming, before the attempt is
    #: abandoned and retried (the provider's own timeout is 10 minutes).
    stall: float = 120.0


@dataclass
class Loop:
    store: Store
    registry: ToolRegistry
    env: ToolEnv
    agent: Agent
    model: ModelSettings
    system: str | None = None  # built at the first turn
    listeners: list[Listener] = field(default_factory=list[Listener])
    retry: Retry = field(default_factory=Retry)
    _recent: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    _step_failed: bool = False  # a call of the running step failed, so the others were cancelled
    _specs: tuple[tuple[int, ...], list[dict[str, Any]]] = ((), [])

    def emit(self, kind: str, **data: Any) -> None:
        event = Event(kind, self.env.session.id, data)
        for listener in self.listeners:
            try:
                listener(event)
            except Exception:
                log.exception("listener failed on %s", kind)

    async def initialize(self) -> None:
        """Let tools adapt to the configuration before they are first offered."""
        await self.registry.initialize(InitContext(self.env.root, self.agent.name, self.env.settings))

    def allowed_tools(self) -> list[Tool[Any]]:
        offered = self.registry.offered(self.env.permissions, self.model.model)
        return [t for t in offered if self.agent.tools is None or t.id in self.agent.tools]

    def tools(self) -> list[dict[str, Any]]:
        provider = provider_of(self.model.model)
        allowed = self.allowed_tools()
        key = tuple(id(t) for t in allowed)
        if self._specs[0] != key:  # schemas are costly to build: rebuild only when the tool set changes
            self._specs = (key, [tool_spec(t, provider) for t in allowed])
        return self._specs[1]

    async def run_turn(self, prompt: str) -> TurnResult:
        """Run one turn. ``SessionBusy``, before anything is stored, when another process is
        running a turn in this session."""
        async with self.store.claim(self.env.session.id):
            self.store.set_run(self.env.session.id, self.env.root, self.agent.name)
            return await self._turn(prompt)

    async def _turn(self, prompt: str) -> TurnResult:
        session_id = self.env.session.id
        turn = TurnResult(session_id, f"turn_{uuid.uuid4().hex[:12]}", "end")
        user = self.store.add_message(session_id, "user", turn.turn_id)
        self.store.add_part(user, "text", prompt)
        self.store.touch(session_id, prompt.strip().splitlines()[0][:80] if prompt.strip() else None)
        self.emit("turn.start", turnId=turn.turn_id, prompt=prompt)
        message: str | None = None
        try:
            if self.system is None:
                self.system = await system_prompt(self.agent, self.env.root)
            for _ in range(self.agent.max_steps):
                message = self.store.add_message(session_id, "assistant", turn.turn_id, self.model.model)
                step = await self._step(message)
                turn.text = step.text or turn.text
                if not step.tool_calls:
                    if step.finish in SHORT:  # litellm's names for every provider's reasons
                        self._stopped(turn, message, *SHORT[step.finish])
                    return turn
                if await self._run_tools(message, step.tool_calls, cut_off=step.finish == "length"):
                    turn.stop_reason = "rejected"
                    return turn
            limit = f"Stopped after {self.agent.max_steps} steps (the agent's step limit, max_steps)."
            self._stopped(turn, message, "max_steps", limit)
            return turn
        except asyncio.CancelledError:
            turn.stop_reason = "cancelled"
            self._note(message, "Cancelled by the user.")
            raise
        except TurnFailed as failed:
            return self._failed(turn, message, str(failed))
        except StoreError as error:  # the session cannot be written: said, not stored
            turn.stop_reason, turn.error = "error", str(error)
            self.emit("error", message=str(error))
            return turn
        except Exception as error:  # a bug: the turn still ends as an error, stored and shown
            log.exception("turn %s failed", turn.turn_id)
            return self._failed(turn, message, f"The turn failed: {describe(error)}")
        finally:
            self.emit("turn.end", turnId=turn.turn_id, stopReason=turn.stop_reason, error=turn.error)

    def _stopped(self, turn: TurnResult, message: str | None, reason: str, why: str) -> None:
        """End the turn short of an answer for ``reason``: ``why`` is stored and goes with turn.end."""
        turn.stop_reason, turn.error = reason, why
        self._note(message, why)

    def _failed(self, turn: TurnResult, message: str | None, error: str) -> TurnResult:
        turn.stop_reason, turn.error = "error", error
        self._note(message, error)
        self.emit("error", message=error)
        return turn

    def _note(self, message: str | None, text: str) -> None:
        if message:
            self.store.add_part(message, "error", text)

    async def _step(self, message: str) -> Step:
        """One model call, retried on transient errors and after compaction on overflow."""
        compacted = False
        for attempt in range(1, self.retry.attempts + 1):
            step = Step()
            answer = StoredAnswer(self.store, message)
            try:
                messages = [
                    {"role": "system", "content": self.system},
                    *history.messages(self.store, self.env.session.id, self.model.model),
                ]
                async for delta in stream_step(self.model, messages, self.tools(), step, self.retry.stall):
                    self.emit(delta.kind, delta=delta.text, messageId=message)
                    answer.streamed(delta.kind, step)
                answer.keep(step)
                self.store.finish_message(message, step.finish, step.usage, step.cost)
                return step
            except asyncio.CancelledError:
                answer.keep(step)  # what had streamed before the stop
                raise
            except StoreError:
                answer.stop()
                raise  # the session database, not the model
            except Exception as error:
                answer.keep(step)  # as the user saw it, when the turn fails here
                kind = classify(error)
                if kind == "overflow" and not compacted:
                    answer.drop()
                    compacted = True
                    self.emit("compaction", reason=describe(error))
                    if await self._compact():
                        continue
                    raise TurnFailed(
                        f"The model call failed: {describe(error)} (this turn alone is too long for it)"
                    ) from error
                limit = self.retry.refused_attempts if kind == "refused" else self.retry.attempts
                if kind not in ("transient", "refused") or attempt >= limit:
                    raise TurnFailed(explain(error, self.model)) from error
                asked = retry_after(error)
                if asked is not None and asked > self.retry.max_retry_after:
                    raise TurnFailed(
                        f"{explain(error, self.model)} (the provider asks to wait {asked:.0f}s before "
                        "trying again)"
                    ) from error
                wait = (
                    asked
                    if asked is not None
                    else min(self.retry.base_delay * 2 ** (attempt - 1), self.retry.max_delay)
                )
                # discarded: text or reasoning of this attempt was already sent; listeners drop
                # what they showed of messageId
                streamed = bool(step.text or step.reasoning)
                answer.drop()
                self.emit(
                    "retry",
                    attempt=attempt,
                    wait=wait,
                    error=describe(error),
                    discarded=streamed,
                    messageId=message,
                )
                await asyncio.sleep(wait)
        raise TurnFailed("The model call failed after compaction.")

    async def _compact(self) -> bool:
        failed = "The conversation is too long for the model, and summarising it failed"
        try:
            return await history.compact(self.store, self.env.session.id, self.model)
        except history.SummaryUnusable as error:
            raise TurnFailed(f"{failed}: {error}") from error
        except Exception as error:
            raise TurnFailed(f"{failed}: {describe(error)}") from error

    async def _run_tools(self, message: str, calls: list[ToolCall], *, cut_off: bool = False) -> bool:
        """Run a step's calls concurrently; True if the user rejected one and the turn must stop.
        ``cut_off``: the answer ended at the output limit, so its last call may be cut short."""
        parts = [
            self.store.add_part(
                message, "tool", call_id=call.id, tool=call.name, input=call.arguments, state="pending"
            )
            for call in calls
        ]
        for call in calls:
            self.emit("tool", callId=call.id, tool=call.name, state="pending", input=call.arguments)
        cut = calls[-1] if cut_off and not _is_json(calls[-1].arguments) else None
        self.env.tools = frozenset(tool.id for tool in self.allowed_tools())  # held to them by execute
        self._step_failed = False
        tasks = [
            asyncio.ensure_future(self._run_tool(message, call, part, cut=call is cut))
            for call, part in zip(calls, parts, strict=True)
        ]
        try:
            results = await asyncio.gather(*tasks)
        except BaseException:
            # One call failed (the session could not be written, ...) or the turn was cancelled:
            # the others are stopped and finished too, before the turn ends, so none of them
            # goes on changing the workspace or the session after it.
            self._step_failed = True
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        return any(results)

    async def _run_tool(self, message: str, call: ToolCall, part: int, *, cut: bool = False) -> bool:
        started = asyncio.get_running_loop().time()
        self.store.update_part(part, state="running", started=time.time())
        self.emit("tool", callId=call.id, tool=call.name, state="running")

        def progress(title: str | None, metadata: dict[str, Any]) -> None:
            self.store.update_part(part, metadata=metadata)
            self.emit("tool", callId=call.id, tool=call.name, state="running", title=title, metadata=metadata)

        ctx = ToolContext(self.env, call.id, on_metadata=progress)
        if cut:  # not a mistake in the JSON, which the model would only repeat
            came = f"{len(call.arguments)} characters of arguments came"
            self._finish(call, part, "error", f"Error: {CUT_CALL} ({came}).", {})
            return False
        try:
            try:
                await self._doom_loop_check(call, ctx)
            except ToolError as error:
                self._finish(call, part, "error", f"Error: {error}", {})
                return isinstance(error, PermissionRejected) and error.stops_turn
            except Exception as error:  # the question went unanswered (an editor answered it with an error)
                log.exception("asking about a repeated %s call failed", call.name)
                why = f"asking the user whether to go on failed ({describe(error)})"
                self._finish(call, part, "error", f"Error: {DOOM_LOOP_REPEATS} identical calls; {why}.", {})
                return True
            outcome = await execute(self.registry, call.name, call.arguments, ctx)
        except asyncio.CancelledError:
            why = ": another call of this step failed" if self._step_failed else " by the user"
            self._finish(call, part, "error", f"Error: cancelled{why}.", {})
            raise
        result = outcome.result
        state = "completed" if result is not None else "error"
        meta = result.metadata if result else {}
        for attachment in result.attachments if result else []:  # sent with the history (history.py)
            data = f"data:{attachment.mime};base64,{base64.b64encode(attachment.data).decode()}"
            info = {"callId": call.id, "mime": attachment.mime, "filename": attachment.filename}
            self.store.add_part(message, "attachment", data, metadata=info)
        self._finish(call, part, state, outcome.model_text, meta, title=result.title if result else None)
        log.debug("%s took %.3fs", call.name, asyncio.get_running_loop().time() - started)
        return outcome.stops_turn

    def _finish(
        self,
        call: ToolCall,
        part: int,
        state: str,
        output: str,
        metadata: dict[str, Any],
        *,
        title: str | None = None,
    ) -> None:
        self.store.update_part(part, state=state, output=output, metadata=metadata, ended=time.time())
        self.emit(
            "tool", callId=call.id, tool=call.name, state=state, title=title, output=output, metadata=metadata
        )

    async def _doom_loop_check(self, call: ToolCall, ctx: ToolContext) -> None:
        key = (call.name, arguments_text(call.arguments))
        self._recent = [*self._recent, key][-DOOM_LOOP_REPEATS:]
        if len(self._recent) == DOOM_LOOP_REPEATS and len(set(self._recent)) == 1:
            self._recent = []
            await ctx.ask(
                PermissionRequest(
                    "doom_loop",
                    [call.name],
                    [call.name],
                    f"{call.name} was called with the same arguments {DOOM_LOOP_REPEATS} times in a row",
                    {"tool": call.name, "arguments": json.loads(key[1]) if _is_json(key[1]) else key[1]},
                )
            )


class TurnFailed(Exception):
    pass


def _is_json(text: str) -> bool:
    try:
        jsontext.loads(text)
        return True
    except ValueError:
        return False
