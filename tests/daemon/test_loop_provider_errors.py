"""The agent loop when the provider fails: retries (429, 5xx, broken and stalled streams), errors
that end the turn at once (auth, a missing key, quota, a refused or unknown api_base), and
compaction when the conversation overflows the model."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import email.utils
import io
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from daemon.loop import Retry
from daemon.run import Renderer
from daemon.scripted_model import ScriptedModel, Turn, Usage
from daemon.transcript import as_json

from .looping import Human, make_loop, script, workspace

__all__ = ["workspace"]  # the fixture, shared with the other test_loop_* files


async def test_rate_limit_is_retried_visibly(workspace: Path, fake: ScriptedModel) -> None:
    script(fake, Turn.rate_limited(retry_after=0.05), Turn(error=500), Turn(text="ok"))
    loop, events = make_loop(workspace, fake, Human())
    result = await loop.run_turn("hi")
    assert (result.stop_reason, result.text) == ("end", "ok")
    retries = [e.data for e in events if e.type == "retry"]
    assert [r["attempt"] for r in retries] == [1, 2]
    assert retries[0]["wait"] == 0.05 and retries[0]["error"].startswith("RateLimitError")
    assert len(fake.requests) == 3


@pytest.mark.parametrize("header", ["nan", "-3", "inf", "soon", "date"])
async def test_a_retry_after_that_is_no_wait_is_not_waited(
    workspace: Path, fake: ScriptedModel, header: str
) -> None:
    # "nan" reached asyncio.sleep (no wait at all); "inf" would have waited for ever. An HTTP
    # date (RFC 9110 allows one) was ignored.
    soon = email.utils.format_datetime(datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=2))
    script(fake, Turn.rate_limited(retry_after=soon if header == "date" else header), Turn(text="ok"))
    loop, events = make_loop(workspace, fake, Human())
    result = await asyncio.wait_for(loop.run_turn("hi"), 60)
    assert (result.stop_reason, result.text) == ("end", "ok")
    [wait] = [e.data["wait"] for e in events if e.type == "retry"]
    if header == "date":
        assert 0.5 < wait <= 2  # the date is kept to the second
    else:
        assert wait == loop.retry.base_delay  # the backoff's own first wait


async def test_a_retry_after_a_broken_stream_tells_listeners_to_drop_its_text(
    workspace: Path, fake: ScriptedModel
) -> None:
    script(fake, Turn(text="Let me read the file now.", cut_after_chunks=3), Turn(text="second attempt"))
    loop, events = make_loop(workspace, fake, Human())
    result = await loop.run_turn("go")
    assert result.text == "second attempt"
    [retry] = [e.data for e in events if e.type == "retry"]
    assert retry["discarded"] is True
    streamed = {e.data["messageId"] for e in events if e.type == "text"}
    assert streamed == {retry["messageId"]}  # the message whose broken-off text listeners drop
    shown = io.StringIO()
    renderer = Renderer(shown, False, workspace)
    for event in events:
        renderer(event)
    assert "broke off and is discarded" in shown.getvalue()
    assert shown.getvalue().endswith("second attempt")
    # The store drops it too: the message holds the second attempt alone.
    [*_, answer] = as_json(loop.store, loop.env.session.id)["messages"]
    assert [(p["kind"], p["text"]) for p in answer["parts"]] == [("text", "second attempt")]


async def test_a_stream_broken_on_the_last_attempt_keeps_what_the_user_saw(
    workspace: Path, fake: ScriptedModel
) -> None:
    script(fake, Turn(reasoning="Thinking it over.", text="The answer is", cut_after_chunks=6))
    loop, events = make_loop(workspace, fake, Human())
    loop.retry = dataclasses.replace(loop.retry, attempts=1)
    result = await loop.run_turn("go")
    assert result.stop_reason == "error"
    shown = {
        kind: "".join(e.data["delta"] for e in events if e.type == kind) for kind in ("reasoning", "text")
    }
    assert shown["reasoning"] == "Thinking it over." and shown["text"], shown  # cut in the text
    [*_, answer] = as_json(loop.store, loop.env.session.id)["messages"]
    kept = [(p["kind"], p["text"]) for p in answer["parts"]]
    assert kept[:2] == [("reasoning", shown["reasoning"]), ("text", shown["text"])], kept
    assert [kind for kind, _ in kept[2:]] == ["error"], kept


async def test_a_stream_that_stalls_midway_is_abandoned_and_retried(
    workspace: Path, fake: ScriptedModel
) -> None:
    # The provider's own timeout (600 s per read) would leave the user looking at half an answer.
    script(fake, Turn(text="Let me look at it and", stall_after_chunks=2), Turn(text="the answer"))
    loop, events = make_loop(workspace, fake, Human())
    loop.retry = dataclasses.replace(loop.retry, stall=1.0)
    result = await asyncio.wait_for(loop.run_turn("go"), 60)
    assert (result.stop_reason, result.text) == ("end", "the answer")
    [retry] = [e.data for e in events if e.type == "retry"]
    assert retry["discarded"] is True
    assert retry["error"] == "StreamStalled: the provider sent nothing for 1s in the middle of its answer"
    parts = as_json(loop.store, loop.env.session.id)["messages"][-1]["parts"]
    assert [(p["kind"], p["text"]) for p in parts if p["text"]] == [("text", "the answer")]


async def test_auth_errors_stop_the_turn_with_a_message(workspace: Path, fake: ScriptedModel) -> None:
    script(fake, Turn(error=401, error_message="Incorrect API key provided"))
    loop, _ = make_loop(workspace, fake, Human())
    result = await loop.run_turn("hi")
    assert result.stop_reason == "error"
    assert result.error is not None and "Incorrect API key provided" in result.error
    assert len(fake.requests) == 1


@pytest.mark.parametrize(
    ("model", "variable"),
    [("openai/scripted", "OPENAI_API_KEY"), ("gemini/gemini-2.0-flash", "GEMINI_API_KEY")],
)
async def test_a_missing_api_key_fails_at_once_and_names_the_variable(
    workspace: Path, fake: ScriptedModel, monkeypatch: pytest.MonkeyPatch, model: str, variable: str
) -> None:
    # litellm raises these before sending anything, as InternalServerError or APIConnectionError.
    for name in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    loop, events = make_loop(workspace, fake, Human())
    loop.model = dataclasses.replace(loop.model, model=model)
    result = await loop.run_turn("hi")
    assert result.stop_reason == "error" and result.error is not None
    assert f"(no usable API key for {model}: set " in result.error and variable in result.error
    assert not [e for e in events if e.type == "retry"] and not fake.requests


async def test_a_long_retry_after_or_an_exhausted_quota_ends_the_turn(
    workspace: Path, fake: ScriptedModel
) -> None:
    script(fake, Turn.rate_limited(retry_after=86400))
    loop, events = make_loop(workspace, fake, Human())
    result = await asyncio.wait_for(loop.run_turn("hi"), 60)
    assert result.stop_reason == "error" and result.error is not None
    assert result.error.endswith("(the provider asks to wait 86400s before trying again)")
    quota = "You exceeded your current quota, please check your plan and billing details."
    script(fake, Turn(error=429, error_code="insufficient_quota", error_message=quota))
    result = await asyncio.wait_for(loop.run_turn("hi"), 60)
    assert result.error is not None and quota in result.error and "waiting will not help" in result.error
    assert not [e for e in events if e.type == "retry"] and len(fake.requests) == 2


async def test_a_refused_connection_fails_fast_naming_the_api_base(
    workspace: Path, fake: ScriptedModel
) -> None:
    # A local server (Ollama, vLLM) that is not running: one quick retry, then the error, instead
    # of the ~30 s of backoff that 429s, 5xx and timeouts get (the tests above).
    with socket.socket() as bound:  # bound but not listening: connections to it are refused
        bound.bind(("127.0.0.1", 0))
        api_base = f"http://127.0.0.1:{bound.getsockname()[1]}/v1"
        error = await _one_quick_retry(workspace, fake, api_base)
    assert f"(nothing accepts connections at {api_base}: start the server there" in error


async def test_a_host_name_that_does_not_resolve_fails_fast_naming_the_api_base(
    workspace: Path, fake: ScriptedModel
) -> None:
    # A typo in api_base: no DNS answer will come by waiting ~30 s. (.invalid never resolves:
    # RFC 6761, also offline.)
    api_base = "http://lspilot-test.invalid:8000/v1"
    error = await _one_quick_retry(workspace, fake, api_base)
    assert f"(the host name of {api_base} does not resolve: correct api_base" in error


async def _one_quick_retry(workspace: Path, fake: ScriptedModel, api_base: str) -> str:
    """A turn against ``api_base`` under the real retry policy's attempts: it ends in an error
    after one retry, having asked nothing of the scripted model. The error's text."""
    loop, events = make_loop(workspace, fake, Human())
    loop.model = dataclasses.replace(loop.model, api_base=api_base)
    loop.retry = Retry(base_delay=0.01)
    result = await asyncio.wait_for(loop.run_turn("hi"), 60)
    assert result.stop_reason == "error" and result.error is not None
    assert [e.data["attempt"] for e in events if e.type == "retry"] == [1]
    assert not fake.requests
    return result.error


async def test_overflow_compacts_then_succeeds(workspace: Path, fake: ScriptedModel) -> None:
    script(fake, Turn(text="first answer"))
    loop, events = make_loop(workspace, fake, Human())
    await loop.run_turn("first question")
    script(
        fake,
        Turn.context_overflow(),
        Turn(text="SUMMARY: asked a first question", usage=Usage(prompt_tokens=500, completion_tokens=20)),
        Turn(text="second answer"),
    )
    result = await loop.run_turn("second question")
    assert (result.stop_reason, result.text) == ("end", "second answer")
    assert any(e.type == "compaction" for e in events)
    [summary] = [m for m in loop.store.messages(loop.env.session.id) if m["role"] == "summary"]
    assert json.loads(summary["usage"]) == {"prompt": 500, "completion": 20}  # on the books
    summary_request, retried = fake.requests[-2:]
    assert "first question" in json.dumps(summary_request["messages"])
    sent = retried["messages"]
    assert "SUMMARY: asked a first question" in sent[1]["content"]
    assert sent[-1] == {"role": "user", "content": "second question"}
    assert "first answer" not in json.dumps(sent)


async def test_a_failed_compaction_ends_the_turn_as_an_error(workspace: Path, fake: ScriptedModel) -> None:
    script(fake, Turn(text="first answer"))
    loop, events = make_loop(workspace, fake, Human())
    await loop.run_turn("first question")
    failing = True

    def answer(body: dict[str, Any]) -> Turn:
        if failing:  # the step overflows; the summary request fails (litellm retries it twice)
            return Turn.context_overflow() if body.get("stream") else Turn(error=503)
        return Turn(text="second answer")

    fake.push(*[answer] * 6)
    result = await loop.run_turn("second question")
    assert result.stop_reason == "error" and result.error is not None
    assert result.error.startswith("The conversation is too long for the model, and summarising it failed: ")
    ends = [e.data["stopReason"] for e in events if e.type == "turn.end"]
    assert ends == ["end", "error"]
    assert [e.data["message"] for e in events if e.type == "error"] == [result.error]
    last = as_json(loop.store, loop.env.session.id)["messages"][-1]
    assert [(p["kind"], p["text"]) for p in last["parts"]] == [("error", result.error)]
    failing = False
    assert (await loop.run_turn("and now?")).text == "second answer"


@pytest.mark.parametrize(
    ("summary", "said"),
    [
        (Turn(text=""), "empty"),
        (Turn(text="The user asked to rena", finish_reason="length"), "cut off at the output limit"),
        (Turn(text="", finish_reason="content_filter"), "stopped by a content filter"),
    ],
)
async def test_an_empty_or_cut_off_summary_is_not_stored(
    workspace: Path, fake: ScriptedModel, summary: Turn, said: str
) -> None:
    # It was stored: the earlier conversation was replaced, in every later request of the
    # session, by "(Summary of the earlier conversation)" and nothing else.
    script(fake, Turn(text="Noted: rename area() to surface()."))
    loop, _ = make_loop(workspace, fake, Human())
    await loop.run_turn("Remember the plan: rename area() to surface().")
    script(fake, Turn.context_overflow(), summary)
    result = await loop.run_turn("Carry out the plan.")
    assert result.stop_reason == "error"
    assert result.error == (
        f"The conversation is too long for the model, and summarising it failed: the summary came back {said}"
    )
    assert not [m for m in loop.store.messages(loop.env.session.id) if m["role"] == "summary"]
    script(fake, Turn(text="Renamed."))
    await loop.run_turn("Go on.")
    assert "surface()" in json.dumps(fake.requests[-1]["messages"])  # the earlier turns are still sent


async def test_a_session_whose_first_prompt_overflowed_stays_usable(
    workspace: Path, fake: ScriptedModel
) -> None:
    limit = 60_000  # characters the model accepts (a small local model)

    def model(body: dict[str, Any]) -> Turn:
        if len(json.dumps(body["messages"])) > limit:
            return Turn.context_overflow()
        return Turn(text="SUMMARY: a pasted log" if not body.get("stream") else "4")

    fake.push(*[model] * 12)
    loop, _ = make_loop(workspace, fake, Human())
    pasted = "Why does this fail?\n" + "Traceback line ...\n" * 5000  # 95 kB
    first = await loop.run_turn(pasted)
    assert first.stop_reason == "error" and first.error is not None
    assert "this turn alone is too long for it" in first.error
    # The next turn summarises the first, with less of it when the summary request overflows too.
    second = await loop.run_turn("what is 2+2?")
    assert (second.stop_reason, second.text) == ("end", "4")
    summaries = [r for r in fake.requests if not r.get("stream")]
    assert len(json.dumps(summaries[-1]["messages"])) <= limit
    assert "characters left out" in summaries[-1]["messages"][1]["content"]
    assert (await loop.run_turn("thanks")).text == "4"


CURLY_QUOTE = "a header of the request holds '\u2019' (U+2019), which HTTP headers cannot carry"
CREDENTIALS = "the api_base carries credentials (user:password@host), which the HTTP client refuses"


@pytest.mark.parametrize(
    "case",
    [
        # a key copied with a curly quote: "'ascii' codec can't encode character '\u2019' in position 13"
        ("sk-copied\u2019-0123456789", "", f"{CURLY_QUOTE}: check the API key"),
        # a proxy's credentials in the URL: "Connection error."
        ("sk-fake", "me:hunter2-password@", f"{CREDENTIALS} beside the API key: take them out of the URL"),
    ],
)
async def test_a_request_that_cannot_be_sent_fails_at_once_saying_why(
    workspace: Path, fake: ScriptedModel, monkeypatch: pytest.MonkeyPatch, case: tuple[str, str, str]
) -> None:
    # litellm reports both as a connection error: retried for ~30 s, then named only by its text.
    key, userinfo, why = case
    monkeypatch.setenv("OPENAI_API_KEY", key)
    loop, events = make_loop(workspace, fake, Human())
    api_base = fake.api_base.replace("http://", f"http://{userinfo}")
    loop.model = dataclasses.replace(loop.model, api_base=api_base)
    loop.retry = Retry(base_delay=0.01)  # the real policy's attempts
    result = await asyncio.wait_for(loop.run_turn("hi"), 60)
    assert result.stop_reason == "error" and result.error is not None
    assert result.error.startswith(f"The model call failed: {why}")
    assert not [e for e in events if e.type == "retry"] and not fake.requests
    stored = json.dumps(as_json(loop.store, loop.env.session.id))
    assert "copied" not in stored and "hunter2" not in stored


async def test_a_secret_in_the_api_base_is_not_named_in_the_error(
    workspace: Path, fake: ScriptedModel
) -> None:
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        api_base = f"http://127.0.0.1:{bound.getsockname()[1]}/v1?api-version=2&api-key=gateway-0123456789"
        error = await _one_quick_retry(workspace, fake, api_base)
    masked = api_base.replace("gateway-0123456789", "[redacted]")
    assert f"(nothing accepts connections at {masked}: start the server there" in error


async def test_a_model_name_without_its_provider_says_how_to_name_it(
    workspace: Path, fake: ScriptedModel
) -> None:
    # litellm's "LLM Provider NOT provided. Pass in the LLM provider you are trying to call."
    loop, _ = make_loop(workspace, fake, Human())
    loop.model = dataclasses.replace(loop.model, model="qwen3-coder")
    result = await asyncio.wait_for(loop.run_turn("hi"), 60)
    assert result.error == (
        "The model call failed: litellm does not know which provider serves 'qwen3-coder': name the "
        "model as provider/model, e.g. openai/gpt-4o, anthropic/claude-sonnet-4-5 or ollama/qwen3 "
        "(model in lspilot.toml, LSPILOT_MODEL or --model)"
    )
    assert not fake.requests


@pytest.mark.parametrize(
    ("message", "wait"),
    [
        ("Rate limit reached for gpt-4o on tokens per min. Please try again in 50ms.", 0.05),  # OpenAI
        ("Requests per minute reached for this model. Please retry in 0.2s.", 0.2),  # Gemini
        ('Resource exhausted. [{"@type": "google.rpc.RetryInfo", "retryDelay": "0.1s"}]', 0.1),
    ],
)
async def test_a_rate_limit_without_retry_after_waits_as_long_as_its_message_says(
    workspace: Path, fake: ScriptedModel, message: str, wait: float
) -> None:
    # Without the header the backoff's own waits were used: 1, 2, 4, 8 and 16 s, all too short
    # for a "try again in 45s", then the turn ended.
    script(fake, Turn(error=429, error_message=message), Turn(text="ok"))
    loop, events = make_loop(workspace, fake, Human())
    result = await asyncio.wait_for(loop.run_turn("hi"), 60)
    assert (result.stop_reason, result.text) == ("end", "ok")
    assert [e.data["wait"] for e in events if e.type == "retry"] == [wait]
