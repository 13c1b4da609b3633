"""The model, through litellm: one streamed step, or one plain completion, on the model thread.
What a provider error means for the loop is in ``daemon/provider_errors.py``.

litellm costs seconds and hundreds of MB to import, so it is imported on first use (``warm()``
starts that early in a thread). It must never print to stdout (that is the JSON-RPC stream in
``lspilot serve``), and it must not fetch its price map from the network.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import os
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Literal

from . import jsontext
from .model_thread import ModelThread
from .stream_parts import Thinking, ToolCall, ToolCalls

log = logging.getLogger(__name__)
LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")
_lock = threading.Lock()
_module: ModuleType | None = None


def litellm() -> ModuleType:
    global _module  # noqa: PLW0603 - one module, imported once
    with _lock:
        if _module is not None:
            return _module
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        # Before the import, which logs (at DEBUG under `lspilot -v`) through a handler of its own
        # that writes every record below WARNING to stdout.
        for name in LOGGERS:
            logging.getLogger(name).setLevel(logging.WARNING)
        gc.disable()  # the import makes ~300k objects: full collections meanwhile stall every thread
        try:
            import litellm as module  # noqa: PLC0415 - costly; imported on first use only
        finally:
            gc.enable()

        module.suppress_debug_info = True
        module.drop_params = True  # providers that reject an option drop it instead of failing
        module.telemetry = False
        # litellm's own handler writes INFO records to stdout; route its loggers to ours instead.
        for name in LOGGERS:
            logger = logging.getLogger(name)
            for handler in list(logger.handlers):
                logger.removeHandler(handler)
            logger.setLevel(logging.WARNING)
            logger.propagate = True
        # Hundreds of thousands of long-lived objects: keep them out of the collector's full
        # passes, which would otherwise stall every thread for a long while now and then.
        gc.freeze()
        _module = module
        return module


_importer: threading.Thread | None = None


def warm() -> None:
    """Start importing litellm in a background thread so the first turn does not wait for it."""
    global _importer  # noqa: PLW0603 - the one import thread, joined by close()
    _importer = threading.Thread(target=litellm, name="litellm-import", daemon=True)
    _importer.start()


@dataclass
class Delta:
    kind: Literal["text", "reasoning"]
    text: str


@dataclass
class Step:
    text: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list[ToolCall])
    finish: str | None = None
    usage: dict[str, int] = field(default_factory=dict[str, int])
    cost: float = 0.0
    #: The provider's signed reasoning blocks (Anthropic's thinking), sent back with the step's
    #: tool calls: with thinking on, Anthropic refuses a tool loop whose thinking is missing.
    thinking: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])


@dataclass(frozen=True)
class ModelSettings:
    model: str
    api_base: str | None = None
    options: dict[str, Any] = field(default_factory=dict[str, Any])


async def _close_clients() -> None:
    """litellm keeps one HTTP client per provider and key, made on (and bound to) the loop of its
    first request; left open, their finalizers run at interpreter exit, on no loop, and import."""
    if _module is None:
        return
    await _module.close_litellm_async_clients()
    _module.in_memory_llm_clients_cache.flush_cache()  # closed: make the next request build anew


def close(timeout: float = 5.0) -> None:
    """Before the process exits: wait for a litellm import under way, close litellm's clients on
    the loop they belong to and end the model thread, so that no thread of ours is left running
    and no client is left open while the interpreter shuts down (a client's finalizer that
    imported a module then once hung `lspilot run` at exit)."""
    if _importer is not None:
        _importer.join(timeout)
    _thread.stop(_close_clients, timeout)


_thread = ModelThread()


#: Where the prompt is cached for providers that cache only at explicit breakpoints (Anthropic's
#: Claude, also on Bedrock and Vertex; at most 4): after the system message (the tools come before
#: it) and after the newest message, so each step reads everything before it from the cache.
CACHE_POINTS = ({"location": "message", "role": "system"}, {"location": "message", "index": -1})


def _cached_at_breakpoints(model: str) -> bool:
    """Claude: every model on Anthropic's own API; on Bedrock and Vertex, those litellm's model
    map says cache (older ones there refuse cache points)."""
    provider, _, name = model.rpartition("/")
    provider = provider.split("/", 1)[0]
    if provider == "anthropic" or (not provider and name.lower().startswith("claude")):
        return True
    if provider in ("bedrock", "vertex_ai") and "claude" in name.lower():
        return bool(litellm().utils.supports_prompt_caching(model))
    return False


def _request(settings: ModelSettings, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """litellm's arguments: ours, then the configured provider options (which win)."""
    kwargs: dict[str, Any] = {"model": settings.model, "messages": messages, **extra}
    if _cached_at_breakpoints(settings.model):
        kwargs["cache_control_injection_points"] = [dict(point) for point in CACHE_POINTS]
    kwargs.update(settings.options)
    if settings.api_base:
        kwargs["api_base"] = settings.api_base
    return kwargs


class StreamStalled(TimeoutError):
    """The provider stopped sending in the middle of a streamed answer (a transient error)."""


async def stream_step(
    settings: ModelSettings,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    step: Step,
    stall: float | None = None,
) -> AsyncIterator[Delta]:
    """Stream one completion, yielding text/reasoning deltas and filling ``step`` as it goes.

    The request runs on the model thread; deltas, then the finished step or the provider's error,
    cross over through a queue. Closing this generator (a cancelled turn) cancels the request.
    Once the answer has started, ``stall`` seconds without a chunk fail it with ``StreamStalled``."""
    here = asyncio.get_running_loop()
    queue: asyncio.Queue[Delta | Step | BaseException] = asyncio.Queue()

    def send(item: Delta | Step | BaseException) -> None:
        here.call_soon_threadsafe(queue.put_nowait, item)

    work = _thread.submit(_stream(settings, messages, tools, send, stall))
    try:
        while True:
            item = await queue.get()
            if isinstance(item, BaseException):
                raise item
            if isinstance(item, Step):
                step.finish, step.usage, step.cost = item.finish, item.usage, item.cost
                step.tool_calls, step.thinking = item.tool_calls, item.thinking
                return
            if item.kind == "text":
                step.text += item.text
            else:
                step.reasoning += item.text
            yield item
    finally:
        work.cancel()


async def _stream(
    settings: ModelSettings,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    send: Callable[[Delta | Step | BaseException], None],
    stall: float | None = None,
) -> None:
    """On the model thread: the request, each delta sent as it comes, then the finished step."""
    response: Any = None
    try:
        lib = litellm()
        extra: dict[str, Any] = {"tools": tools} if tools else {}
        response = await lib.acompletion(
            **_request(
                settings,
                messages,
                stream=True,
                stream_options={"include_usage": True},
                num_retries=0,  # the loop retries, visibly
                **extra,
            )
        )
        step = Step()
        calls = ToolCalls()
        thinking = Thinking()
        chunks: list[Any] = []
        stream = aiter(response)
        flowing = False  # before the answer starts the provider may take its time (a long
        # prompt, a model reasoning before it answers): its own timeout applies
        while True:
            try:
                chunk = await _next_chunk(stream, stall if flowing else None)
            except StopAsyncIteration:
                break
            chunks.append(chunk)
            usage = getattr(chunk, "usage", None)
            if usage:
                step.usage = _tokens(usage)
            if not chunk.choices:
                continue
            choice = chunk.choices[0]
            step.finish = choice.finish_reason or step.finish
            delta = choice.delta
            if getattr(delta, "reasoning_content", None):
                send(Delta("reasoning", delta.reasoning_content))
            thinking.add(getattr(delta, "thinking_blocks", None))
            if delta.content:
                send(Delta("text", delta.content))
            for call in delta.tool_calls or []:
                calls.add(call)
            flowing = flowing or bool(
                getattr(delta, "reasoning_content", None) or delta.content or calls.calls
            )
        step.tool_calls = calls.finished()
        step.cost = _cost(lib, chunks, messages)
        step.thinking = thinking.blocks
        send(step)
    except asyncio.CancelledError:
        raise  # the turn was cancelled: no one is listening
    except StreamStalled as error:
        with contextlib.suppress(Exception):  # give the connection up before the retry opens another
            await response.aclose()
        send(error)
    except BaseException as error:  # the provider's error, raised where the turn runs
        send(error)


async def _next_chunk(stream: AsyncIterator[Any], stall: float | None) -> Any:
    if stall is None:
        return await anext(stream)
    limit = asyncio.timeout(stall)
    try:
        async with limit:
            return await anext(stream)
    except TimeoutError:
        if limit.expired():
            raise StreamStalled(
                f"the provider sent nothing for {stall:.0f}s in the middle of its answer"
            ) from None
        raise


def _tokens(usage: Any) -> dict[str, int]:
    tokens = {
        "prompt": getattr(usage, "prompt_tokens", 0) or 0,
        "completion": getattr(usage, "completion_tokens", 0) or 0,
    }
    cached = getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", 0) or 0
    if cached:  # read from the provider's prompt cache (part of "prompt")
        tokens["cached"] = cached
    return tokens


def _cost(lib: ModuleType, chunks: list[Any], messages: list[dict[str, Any]]) -> float:
    try:
        return _price(lib, lib.stream_chunk_builder(chunks, messages=messages))
    except Exception:  # chunks litellm cannot put together have no price either
        return 0.0


def _price(lib: ModuleType, response: Any) -> float:
    try:
        return float(lib.completion_cost(completion_response=response) or 0.0)
    except Exception:  # unknown or local models have no price: cost stays 0
        return 0.0


async def complete(settings: ModelSettings, messages: list[dict[str, Any]]) -> Step:
    """A plain, non-streamed completion (used for compaction summaries), on the model thread: its
    text, with its tokens and price for the session's books."""

    async def request() -> Step:
        lib = litellm()
        response = await lib.acompletion(**_request(settings, messages, num_retries=2))
        choice = response.choices[0]
        usage = getattr(response, "usage", None)
        return Step(
            text=choice.message.content or "",
            finish=choice.finish_reason,
            usage=_tokens(usage) if usage else {},
            cost=_price(lib, response),
        )

    work = _thread.submit(request())
    try:
        return await asyncio.wrap_future(work)
    finally:
        work.cancel()


def arguments_text(arguments: str) -> str:
    """Canonical JSON of a call's arguments (for the doom-loop check); the raw text if malformed."""
    try:
        return json.dumps(jsontext.loads(arguments), sort_keys=True)
    except ValueError:
        return arguments
