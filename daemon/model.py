"""The model, through litellm: one streamed step, and what a provider error means for the loop.

litellm costs seconds and hundreds of MB to import, so it is imported on first use (``warm()``
starts that early in a thread). It must never print to stdout (that is the JSON-RPC stream in
``lspilot serve``), and it must not fetch its price map from the network.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Literal

_lock = threading.Lock()


def litellm() -> ModuleType:
    with _lock:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm as module  # noqa: PLC0415 - costly; imported on first use only

        module.suppress_debug_info = True
        module.drop_params = True  # providers that reject an option drop it instead of failing
        module.telemetry = False
        # litellm's own handler writes INFO records to stdout; route its loggers to ours instead.
        for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
            logger = logging.getLogger(name)
            for handler in list(logger.handlers):
                logger.removeHandler(handler)
            logger.setLevel(logging.WARNING)
            logger.propagate = True
        return module


def warm() -> None:
    """Start importing litellm in a background thread so the first turn does not wait for it."""
    threading.Thread(target=litellm, name="litellm-import", daemon=True).start()


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # raw JSON text, parsed by the tool wrapper (which reports malformed JSON)


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


ErrorKind = Literal["transient", "overflow", "fatal"]


def classify(error: BaseException) -> ErrorKind:
    """transient: retry with backoff; overflow: compact and retry; fatal: stop with the message."""
    lib = litellm()
    if isinstance(error, lib.ContextWindowExceededError):
        return "overflow"
    transient: tuple[type[BaseException], ...] = (
        lib.RateLimitError,
        lib.InternalServerError,  # also how litellm reports a dropped connection
        lib.ServiceUnavailableError,
        lib.APIConnectionError,
        lib.Timeout,
        getattr(lib, "MidStreamFallbackError", ConnectionError),  # the stream broke off midway
        ConnectionError,
        TimeoutError,
    )
    if isinstance(error, transient):
        return "transient"
    if getattr(error, "status_code", None) in (408, 409, 429, 500, 502, 503, 504):
        return "transient"
    return "fatal"


def retry_after(error: BaseException) -> float | None:
    """The provider's own Retry-After, in seconds, when it sent one."""
    value = None
    for headers in (getattr(error, "litellm_response_headers", None), getattr(error, "headers", None)):
        if headers is not None and hasattr(headers, "get"):
            value = value or headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def describe(error: BaseException) -> str:
    """A provider error as one line for the user (litellm's messages carry the provider's text)."""
    text = str(error).strip()
    message = text.splitlines()[0] if text else ""
    # litellm prefixes its class name and the provider's: "litellm.RateLimitError: RateLimitError:
    # OpenAIException - Rate limit reached" -> "Rate limit reached"
    message = re.sub(r"^(litellm\.\w+: )?(\w+Error: )?(\w+Exception - )?", "", message)
    return f"{type(error).__name__}: {message or 'no details'}"[:500]


@dataclass(frozen=True)
class ModelSettings:
    model: str
    api_base: str | None = None
    options: dict[str, Any] = field(default_factory=dict[str, Any])


async def stream_step(
    settings: ModelSettings, messages: list[dict[str, Any]], tools: list[dict[str, Any]], step: Step
) -> AsyncIterator[Delta]:
    """Stream one completion, yielding text/reasoning deltas and filling ``step`` as it goes."""
    lib = await asyncio.to_thread(litellm)
    kwargs: dict[str, Any] = {
        "model": settings.model,
        "messages": messages,
        "stream": True,
        "stream_options": {"include_usage": True},
        "num_retries": 0,  # the loop retries, visibly
        **settings.options,
    }
    if tools:
        kwargs["tools"] = tools
    if settings.api_base:
        kwargs["api_base"] = settings.api_base
    response = await lib.acompletion(**kwargs)
    calls: dict[int, dict[str, str]] = {}
    chunks: list[Any] = []
    async for chunk in response:
        chunks.append(chunk)
        usage = getattr(chunk, "usage", None)
        if usage:
            step.usage = {
                "prompt": getattr(usage, "prompt_tokens", 0) or 0,
                "completion": getattr(usage, "completion_tokens", 0) or 0,
            }
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        step.finish = choice.finish_reason or step.finish
        delta = choice.delta
        if getattr(delta, "reasoning_content", None):
            step.reasoning += delta.reasoning_content
            yield Delta("reasoning", delta.reasoning_content)
        if delta.content:
            step.text += delta.content
            yield Delta("text", delta.content)
        for call in delta.tool_calls or []:
            entry = calls.setdefault(call.index or 0, {"id": "", "name": "", "arguments": ""})
            entry["id"] = call.id or entry["id"]
            if call.function:
                entry["name"] += call.function.name or ""
                entry["arguments"] += call.function.arguments or ""
    step.tool_calls = [
        ToolCall(c["id"] or f"call_{i}", c["name"], c["arguments"]) for i, c in sorted(calls.items())
    ]
    step.cost = _cost(lib, chunks, messages)


def _cost(lib: ModuleType, chunks: list[Any], messages: list[dict[str, Any]]) -> float:
    try:
        built = lib.stream_chunk_builder(chunks, messages=messages)
        return float(lib.completion_cost(completion_response=built) or 0.0)
    except Exception:  # unknown or local models have no price: cost stays 0
        return 0.0


async def complete(settings: ModelSettings, messages: list[dict[str, Any]]) -> str:
    """A plain, non-streamed completion (used for compaction summaries)."""
    lib = await asyncio.to_thread(litellm)
    kwargs: dict[str, Any] = {
        "model": settings.model,
        "messages": messages,
        "num_retries": 2,
        **settings.options,
    }
    if settings.api_base:
        kwargs["api_base"] = settings.api_base
    response = await lib.acompletion(**kwargs)
    return response.choices[0].message.content or ""


def arguments_text(arguments: str) -> str:
    """Canonical JSON of a call's arguments (for the doom-loop check); the raw text if malformed."""
    try:
        return json.dumps(json.loads(arguments), sort_keys=True)
    except json.JSONDecodeError:
        return arguments
