"""The Anthropic side of the scripted model: ``POST /v1/messages`` answered as Anthropic answers.

litellm talks to Anthropic (and to Claude on Bedrock and Vertex) in the Messages API, not in
OpenAI's chat format, so what lspilot sends such providers is tested against this: the same
:class:`~daemon.scripted_model.Turn` scripts, streamed as Anthropic's server-sent events
(``message_start``, content blocks of thinking, text and tool use, ``message_delta``,
``message_stop``) or answered whole. A turn's ``reasoning`` is a thinking block signed with a
signature derived from its text.

Requests are checked against the rules of Anthropic's that a client can break, with Anthropic's
wording: with thinking enabled, an assistant message that ends in tool use must start with its
thinking block, unchanged (Anthropic checks the signature); at most four ``cache_control``
breakpoints. A broken rule answers 400 ``invalid_request_error``, as Anthropic does.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from .scripted_model import Turn

JSON = dict[str, Any]
MAX_BREAKPOINTS = 4

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def signature(thinking: str) -> str:
    """The signature this server gives (and expects back with) a thinking block."""
    return "sig-" + hashlib.sha256(thinking.encode()).hexdigest()[:32]


def error_body(status: int, message: str | None) -> JSON:
    kind = _ERROR_TYPES.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": message or f"HTTP {status}"}}


def check(body: JSON) -> str | None:
    """What Anthropic would refuse in this request body, in its words (None: nothing)."""
    messages = cast(list[JSON], body.get("messages") or [])
    breakpoints = _count_breakpoints(body)
    if breakpoints > MAX_BREAKPOINTS:
        return (
            f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {breakpoints}."
        )
    if (body.get("thinking") or {}).get("type") != "enabled":
        return None
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") != "assistant":
            continue
        content = _blocks(message.get("content"))
        if not any(block.get("type") == "tool_use" for block in content):
            return None  # the last assistant message ends no tool use: nothing to check
        first = content[0] if content else {}
        if first.get("type") == "redacted_thinking":
            return None
        if first.get("type") != "thinking":
            return (
                f"messages.{index}.content.0.type: Expected `thinking` or `redacted_thinking`, but "
                f"found `{first.get('type')}`. When `thinking` is enabled, a final `assistant` "
                "message must start with a thinking block (preceeding the lastmost set of "
                "`tool_use` and `tool_result` blocks). We recommend you include thinking blocks "
                "from previous turns."
            )
        if first.get("signature") != signature(str(first.get("thinking", ""))):
            return f"messages.{index}.content.0: Invalid `signature` in `thinking` block"
        return None
    return None


def _blocks(content: Any) -> list[JSON]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [cast(JSON, block) for block in cast(list[Any], content or []) if isinstance(block, dict)]


def _count_breakpoints(body: JSON) -> int:
    system = body.get("system")
    blocks = _blocks(system) if isinstance(system, list) else []
    blocks += [cast(JSON, tool) for tool in cast(list[Any], body.get("tools") or [])]
    for message in cast(list[JSON], body.get("messages") or []):
        blocks += _blocks(message.get("content"))
    return sum(1 for block in blocks if block.get("cache_control"))


def _pieces(text: str, parts: int = 3) -> list[str]:
    size = max(1, -(-len(text) // parts))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _usage(turn: Turn, body: JSON) -> JSON:
    cached = turn.usage.cached_tokens if turn.usage else 0
    if turn.usage is not None:
        prompt, completion = turn.usage.prompt_tokens, turn.usage.completion_tokens
    else:  # a rough estimate, about four characters a token
        prompt = max(1, len(json.dumps(body.get("messages", []))) // 4)
        completion = max(1, (len(turn.text) + len(turn.reasoning)) // 4)
    return {
        "input_tokens": max(0, prompt - cached),
        "output_tokens": completion,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": cached,
    }


def _stop_reason(turn: Turn) -> str:
    if turn.finish_reason == "length":
        return "max_tokens"
    return "tool_use" if turn.tool_calls else "end_turn"


def _content(turn: Turn, number: int) -> list[JSON]:
    """The answer's content blocks, whole: thinking, text, tool uses."""
    content: list[JSON] = []
    if turn.reasoning:
        content.append(
            {"type": "thinking", "thinking": turn.reasoning, "signature": signature(turn.reasoning)}
        )
    if turn.text:
        content.append({"type": "text", "text": turn.text})
    for index, (name, arguments) in enumerate(turn.tool_calls):
        parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
        content.append({"type": "tool_use", "id": f"toolu_{number}_{index}", "name": name, "input": parsed})
    return content


def message(turn: Turn, body: JSON, number: int) -> JSON:
    """A whole (non-streamed) answer."""
    return {
        "id": f"msg_scripted_{number}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "scripted"),
        "content": _content(turn, number),
        "stop_reason": _stop_reason(turn),
        "stop_sequence": None,
        "usage": _usage(turn, body),
    }


def events(turn: Turn, body: JSON, number: int) -> Iterator[tuple[str, JSON]]:
    """The answer as Anthropic streams it: ``(event name, data)`` pairs."""
    head = message(turn, body, number)
    usage = head.pop("usage")
    yield (
        "message_start",
        {
            "type": "message_start",
            "message": {**head, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}},
        },
    )
    for index, block in enumerate(_content(turn, number)):
        kind = block["type"]
        if kind == "thinking":
            start: JSON = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(block["thinking"])]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "text":
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"])]
        else:
            start = {**block, "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": p} for p in _pieces(json.dumps(block["input"]))
            ]
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": start}
        for delta in deltas:
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": head["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        },
    )
    yield "message_stop", {"type": "message_stop"}
