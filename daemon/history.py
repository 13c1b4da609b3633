"""A session's stored messages as the model's message list, and compaction when it overflows.

Compaction asks the model to summarise everything before the latest user message; the summary
is stored as a ``summary`` message and replaces the older history from then on (the stored
messages themselves are kept, so ``sessions show`` still has everything).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from . import jsontext
from .model import ModelSettings, Step, complete, litellm
from .provider_errors import classify
from .store import Store

SUMMARY_PROMPT = (
    "Summarise the conversation so far for yourself, to continue the work without it: the user's "
    "goals and instructions, what has been done (files read and changed, with paths), what was "
    "found, decisions made, and what remains. Be specific and brief."
)


#: Providers (litellm's prefixes) that want a message's reasoning text back: DeepSeek's and
#: Moonshot's (Kimi) thinking modes refuse assistant messages without it.
REASONING_BACK = ("deepseek", "moonshot")

#: A tool call id every provider takes: OpenAI refuses ids over 40 characters, Anthropic any
#: character but these, and Mistral's models (its API, and servers that run them with its
#: tokenizer) anything but exactly nine letters and digits. Ids another provider made can be
#: anything (OpenAI's Responses API makes 51 characters, proxies hundreds).
PORTABLE_ID = re.compile(r"[A-Za-z0-9]{9}")
#: Names in the models whose ids must be ``PORTABLE_ID``s, even those they made (litellm makes
#: up longer ones when a server sends none).
NINE_CHARACTER_IDS = ("mistral", "devstral", "codestral", "magistral", "ministral", "pixtral")
_BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

#: Characters of transcript the summary request is tried with, the next one when it overflows
#: (about 50k, 12k and 3k tokens: a model with a small context can still summarise).
BUDGETS = (200_000, 50_000, 12_000)


def messages(store: Store, session_id: str, model: str | None = None) -> list[dict[str, Any]]:
    """The session as the model's message list; ``model``'s own signed thinking goes back with
    the messages it made (a provider accepts only the signatures it gave)."""
    rows = store.messages(session_id)
    parts = store.session_parts(session_id)
    start = 0
    out: list[dict[str, Any]] = []
    for index, row in enumerate(rows):
        if row["role"] == "summary":
            start = index
    for row in rows[start:]:
        own = parts.get(row["id"], [])
        if row["role"] == "summary":
            summary = "".join(p["text"] for p in own if p["kind"] == "summary")
            out = [{"role": "user", "content": f"(Summary of the earlier conversation)\n{summary}"}]
            covered: int = json.loads(own[0]["metadata"] or "{}").get("covers", 0) if own else 0
            return out + _after(rows, parts, covered, model)
        out += _message(row, own, model)
    return out


def _after(
    rows: list[Any], parts: dict[str, list[Any]], covered: int, model: str | None = None
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for row in rows:
        if row["seq"] > covered and row["role"] != "summary":
            out += _message(row, parts.get(row["id"], []), model)
    return out


def _message(row: Any, parts: list[Any], model: str | None) -> list[dict[str, Any]]:
    text = "".join(p["text"] for p in parts if p["kind"] == "text")
    if row["role"] == "user":
        return [{"role": "user", "content": text}]
    calls = [p for p in parts if p["kind"] == "tool"]
    if not text and not calls:
        return []
    assistant: dict[str, Any] = {"role": "assistant", "content": text or None}
    own = model is not None and row["model"] == model
    if model is not None and own:
        assistant |= _own_reasoning([p for p in parts if p["kind"] == "reasoning"], model)
    strict = model is not None and any(name in model.lower() for name in NINE_CHARACTER_IDS)
    ids = [p["call_id"] if own and not strict else _portable(p["call_id"]) for p in calls]
    if calls:
        assistant["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": p["tool"], "arguments": _replayable(p["input"])},
            }
            for p, call_id in zip(calls, ids, strict=True)
        ]
    results = [
        {"role": "tool", "tool_call_id": call_id, "content": _result(p)}
        for p, call_id in zip(calls, ids, strict=True)
    ]
    attached = [p for p in parts if p["kind"] == "attachment"]
    if not attached:
        return [assistant, *results]
    return [assistant, *results, *_attachments(attached, calls, results, model)]


def _attachments(
    attached: list[Any], calls: list[Any], results: list[dict[str, Any]], model: str | None
) -> list[dict[str, Any]]:
    """The images and PDFs the calls attached (read, webfetch), for the model to see: a user
    message after the tool results (a tool message carries only text in OpenAI's API, which
    litellm speaks). One the model cannot take is left out, its call's result saying so. None
    in a summary's transcript (no ``model``), which is text."""
    if model is None:
        return []
    shown: list[dict[str, Any]] = []
    for part in attached:
        info = json.loads(part["metadata"] or "{}")
        if _can_see(model, info["mime"]):
            name, url = info["filename"], part["text"]
            shown.append({"type": "text", "text": f"{name}:"})
            if info["mime"] == "application/pdf":
                shown.append({"type": "file", "file": {"file_data": url, "filename": name}})
            else:
                shown.append({"type": "image_url", "image_url": {"url": url}})
            continue
        for call, result in zip(calls, results, strict=True):
            if call["call_id"] == info["callId"]:
                what = "a PDF" if info["mime"] == "application/pdf" else "an image"
                result["content"] += f"\n(Not sent: this model ({model}) cannot be given {what}.)"
    if not shown:
        return []
    return [{"role": "user", "content": [{"type": "text", "text": "Attached by the calls above:"}, *shown]}]


def _can_see(model: str, mime: str) -> bool:
    utils = litellm().utils
    check = utils.supports_pdf_input if mime == "application/pdf" else utils.supports_vision
    try:
        return bool(check(model=model))
    except Exception:  # a model litellm does not know: not said to see anything
        return False


def _portable(call_id: str) -> str:
    """A call id as every provider takes it (``PORTABLE_ID``): the id itself when it is one, else
    one made from it, the same each time, so the call and its result still pair. Ids another
    model made go so (the session was continued with a new model); the model that made them
    gets them back as they were (Gemini's carry its thought signatures), unless it is one of
    Mistral's."""
    if PORTABLE_ID.fullmatch(call_id):
        return call_id
    number = int.from_bytes(hashlib.sha256(call_id.encode()).digest()[:8])
    return "".join(_BASE62[number // 62**k % 62] for k in range(9))


def _own_reasoning(parts: list[Any], model: str) -> dict[str, Any]:
    """What of a message's reasoning goes back to the model that made it: Anthropic's signed
    thinking blocks, and for providers whose thinking mode wants it back on every assistant
    message, the reasoning text (without it litellm sends a blank placeholder, and the model
    loses its earlier reasoning)."""
    back: dict[str, Any] = {}
    signed = [block for p in parts for block in json.loads(p["metadata"] or "{}").get("thinking", [])]
    if signed:
        back["thinking_blocks"] = signed
    text = "".join(p["text"] for p in parts)
    if text and model.split("/", 1)[0] in REASONING_BACK:
        back["reasoning_content"] = text
    return back


def _replayable(arguments: str | None) -> str:
    """The call's arguments as sent back to the model: ``{}`` unless they are a JSON object.

    Malformed arguments (often a call cut off at the output limit) are kept in the store, but
    providers whose API takes the arguments as an object (Anthropic, Gemini, Bedrock) cannot be
    sent them: litellm fails to convert the history, in every later request of the session."""
    try:
        return arguments if arguments and isinstance(jsontext.loads(arguments), dict) else "{}"
    except ValueError:
        return "{}"


def _result(part: Any) -> str:
    if part["state"] not in ("completed", "error") or part["output"] is None:
        return "Error: this call was interrupted before it finished."
    output: str = part["output"]
    if _replayable(part["input"]) == "{}" and (part["input"] or "{}").strip() != "{}":
        output += f"\n(The arguments of this call were not a JSON object: {_preview(part['input'])})"
    return output


def _preview(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters in all)"


def _transcript(messages: list[dict[str, Any]], budget: int) -> str:
    """The messages as JSON in about ``budget`` characters: long texts, tool outputs and arguments
    keep their start and end, and the oldest messages go first when that is not enough."""
    each = budget // 4
    kept: list[str] = []
    size = 0
    for message in reversed(messages):
        shrunk = dict(message)
        if isinstance(shrunk.get("content"), str):
            shrunk["content"] = _cut(shrunk["content"], each)
        if shrunk.get("tool_calls"):
            shrunk["tool_calls"] = [
                {**c, "function": {**c["function"], "arguments": _cut(c["function"]["arguments"], each)}}
                for c in shrunk["tool_calls"]
            ]
        text = json.dumps(shrunk, ensure_ascii=False)
        if kept and size + len(text) > budget:
            kept.append(json.dumps({"role": "user", "content": "(older messages left out)"}))
            break
        kept.append(text)
        size += len(text)
    return "[" + ", ".join(reversed(kept)) + "]"


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters left out ...]\n{text[-half:]}"


class SummaryUnusable(Exception):
    """The model's summary is empty or cut short: not stored, the turn fails."""


async def compact(store: Store, session_id: str, model: ModelSettings) -> bool:
    """Summarise all but the current turn; False when there is nothing older to summarise."""
    rows = store.messages(session_id)
    last_user = max((r["seq"] for r in rows if r["role"] == "user"), default=0)
    full = messages(store, session_id)
    recent = _after(rows, store.session_parts(session_id), last_user - 1)
    older = full[: len(full) - len(recent)]
    if not older:
        return False
    summary = Step()
    for budget in BUDGETS:
        transcript = _transcript(older, budget)
        try:
            summary = await complete(
                model,
                [
                    {"role": "system", "content": SUMMARY_PROMPT},
                    {"role": "user", "content": f"The conversation as JSON messages:\n{transcript}"},
                ],
            )
            break
        except Exception as error:
            if classify(error) != "overflow" or budget == BUDGETS[-1]:
                raise
    if not summary.text.strip() or summary.finish in ("length", "content_filter"):
        # stored, it would stand for the whole earlier conversation in every later request
        why = {"length": "cut off at the output limit", "content_filter": "stopped by a content filter"}
        raise SummaryUnusable(f"the summary came back {why.get(summary.finish or '', 'empty')}")
    turn = rows[-1]["turn_id"] if rows else "compaction"
    message = store.add_message(session_id, "summary", turn, model.model)
    store.add_part(message, "summary", summary.text, metadata={"covers": last_user - 1})
    store.finish_message(message, summary.finish, summary.usage, summary.cost)
    return True
