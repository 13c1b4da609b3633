"""The OpenAI side of the scripted model: a :class:`~daemon.scripted_model.Turn` as OpenAI's
chat completion, or as its stream of ``chat.completion.chunk`` events (role, reasoning, text in
pieces, tool calls with their arguments in pieces, the finish, a usage chunk when asked for),
OpenAI's error bodies, and what OpenAI refuses in a request (``check``). The server that sends
them is ``daemon/scripted_model.py``; the Anthropic side is ``daemon/scripted_anthropic.py``.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .scripted_model import Turn

JSON = dict[str, Any]

_ERRORS: dict[int, tuple[str, str | None, str]] = {  # status -> (type, code, default message)
    400: ("invalid_request_error", None, "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again later."),
    500: ("server_error", None, "The server had an error while processing your request."),
    503: ("server_error", None, "The server is overloaded. Please try again later."),
}


def _pieces(text: str, parts: int = 3) -> list[str]:
    """``text`` cut into at most ``parts`` consecutive non-empty pieces."""
    if not text:
        return []
    size = math.ceil(len(text) / parts)
    return [text[i : i + size] for i in range(0, len(text), size)]


def error_body(status: int, message: str | None, code: str | None, param: str | None = None) -> JSON:
    kind, default_code, default_message = _ERRORS.get(status, ("api_error", None, f"HTTP {status}"))
    message = message or default_message
    return {"error": {"message": message, "type": kind, "param": param, "code": code or default_code}}


#: The longest tool call id OpenAI takes.
MAX_ID = 40
#: The tool call ids Mistral's models take (its API, and servers running them with its tokenizer).
MISTRAL_ID = re.compile(r"[A-Za-z0-9]{9}")


def check(body: JSON) -> tuple[str, str, str] | None:
    """What the server would refuse in this request body: (message, param, code) in its words, or
    None. OpenAI refuses tool call ids over 40 characters (another provider's can be longer); a
    model named like one of Mistral's (``devstral-small``) refuses any but nine letters and digits."""
    mistral = any(name in str(body.get("model", "")).lower() for name in ("mistral", "devstral"))
    for index, message in enumerate(body.get("messages") or []):
        calls = enumerate(message.get("tool_calls") or [])
        ids = [(f"tool_calls[{n}].id", call.get("id")) for n, call in calls]
        ids.append(("tool_call_id", message.get("tool_call_id")))
        for where, call_id in ids:
            if not isinstance(call_id, str):
                continue
            if mistral and not MISTRAL_ID.fullmatch(call_id):
                problem = f"Tool call id was {call_id} but must be a-z, A-Z, 0-9, with a length of 9."
                return problem, f"messages[{index}].{where}", "3280"
            if len(call_id) > MAX_ID:
                param = f"messages[{index}].{where}"
                return (
                    f"Invalid '{param}': string too long. Expected a string with maximum length "
                    f"{MAX_ID}, but got a string with length {len(call_id)} instead.",
                    param,
                    "string_above_max_length",
                )
    return None


def _arguments(arguments: dict[str, Any] | str) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _usage(turn: Turn, body: JSON) -> JSON:
    if turn.usage is not None:
        prompt, completion, cached = (
            turn.usage.prompt_tokens,
            turn.usage.completion_tokens,
            turn.usage.cached_tokens,
        )
    else:  # a rough estimate, about four characters a token
        sent = len(json.dumps(body.get("messages", [])))
        said = len(turn.text) + len(turn.reasoning) + sum(len(_arguments(a)) for _, a in turn.tool_calls)
        prompt, completion, cached = max(1, sent // 4), max(1, said // 4), 0
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def _finish(turn: Turn) -> str:
    return turn.finish_reason or ("tool_calls" if turn.tool_calls else "stop")


def envelope(kind: str, body: JSON, number: int) -> JSON:
    return {
        "id": f"chatcmpl-scripted-{number}",
        "object": kind,
        "created": int(time.time()),
        "model": body.get("model", "scripted"),
        "system_fingerprint": None,
    }


def completion(turn: Turn, body: JSON, number: int) -> JSON:
    message: JSON = {"role": "assistant", "content": turn.text or None}
    if turn.reasoning:
        message["reasoning_content"] = turn.reasoning
    if turn.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{number}_{i}",
                "type": "function",
                "function": {"name": n, "arguments": _arguments(a)},
            }
            for i, (n, a) in enumerate(turn.tool_calls)
        ]
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": _finish(turn)}
    return {**envelope("chat.completion", body, number), "choices": [choice], "usage": _usage(turn, body)}


def chunks(turn: Turn, body: JSON, number: int, usage_wanted: bool) -> Iterator[JSON]:
    """The stream events as OpenAI sends them: role, reasoning, text, tool calls, finish, usage."""
    common = envelope("chat.completion.chunk", body, number)

    def chunk(delta: JSON, finish: str | None = None) -> JSON:
        return {
            **common,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    yield chunk({"role": "assistant", "content": ""})
    for piece in _pieces(turn.reasoning):
        yield chunk({"reasoning_content": piece})
    for piece in _pieces(turn.text):
        yield chunk({"content": piece})
    for index, (name, arguments) in enumerate(turn.tool_calls):
        head = {"index": index, "id": f"call_{number}_{index}", "type": "function"}
        yield chunk({"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]})
        for piece in _pieces(_arguments(arguments)):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, _finish(turn))
    if usage_wanted:
        yield {**common, "choices": [], "usage": _usage(turn, body)}
