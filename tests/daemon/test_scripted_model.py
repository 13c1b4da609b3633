"""The scripted model server, driven by the real litellm over HTTP as the agent loop drives it."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

# litellm reads this on import: use the bundled price map, never fetch it from the network.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
import litellm
from litellm.exceptions import ContextWindowExceededError, InternalServerError, RateLimitError

from daemon.scripted_model import JSON, ScriptedModel, Turn, Usage

litellm.suppress_debug_info = True
pytestmark = pytest.mark.timeout(60)

USER = [{"role": "user", "content": "Where is total_area defined?"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} tool.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
    for name in ("read", "grep")
]


@pytest.fixture
def script() -> Iterator[list[ScriptedModel]]:
    """The models a test started with ``serve``; all are stopped, and no server thread is left."""
    started: list[ScriptedModel] = []
    yield started
    for model in started:
        model.stop()
    assert not _server_threads()


def serve(started: list[ScriptedModel], *turns: Turn | Any) -> ScriptedModel:
    model = ScriptedModel(list(turns))
    started.append(model)
    model.start()
    return model


def _server_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("scripted-model")]


async def stream(model: ScriptedModel, messages: list[JSON] = USER, **options: Any) -> list[Any]:
    response: Any = await litellm.acompletion(
        model="openai/scripted",
        api_base=model.api_base,
        api_key="sk-fake",
        messages=messages,
        tools=TOOLS,
        stream=True,
        stream_options={"include_usage": True},
        num_retries=0,
        **options,
    )
    return [chunk async for chunk in response]


async def complete(model: ScriptedModel, messages: list[JSON] = USER) -> Any:
    return await litellm.acompletion(
        model="openai/scripted", api_base=model.api_base, api_key="sk-fake", messages=messages, num_retries=0
    )


def deltas(chunks: list[Any], attribute: str) -> list[str]:
    return [value for c in chunks if c.choices and (value := getattr(c.choices[0].delta, attribute, None))]


async def test_streamed_text_reasoning_and_usage(script: list[ScriptedModel]) -> None:
    text = "total_area is defined in geometry/total.py, line 3."
    model = serve(script, Turn(text=text, reasoning="Look for the def.", usage=Usage(1200, 40, 1000)))

    chunks = await stream(model)

    assert len(deltas(chunks, "content")) > 1
    assert "".join(deltas(chunks, "content")) == text
    assert "".join(deltas(chunks, "reasoning_content")) == "Look for the def."
    built: Any = litellm.stream_chunk_builder(chunks)
    assert built.choices[0].message.content == text
    assert built.choices[0].finish_reason == "stop"
    assert (built.usage.prompt_tokens, built.usage.completion_tokens) == (1200, 40)
    assert built.usage.prompt_tokens_details.cached_tokens == 1000
    model.assert_done()


async def test_parallel_tool_calls_are_assembled(script: list[ScriptedModel]) -> None:
    model = serve(
        script,
        Turn(
            text="Let me look.", tool_calls=[("read", {"path": "geometry/total.py"}), ("grep", {"path": "."})]
        ),
    )

    chunks = await stream(model)

    built: Any = litellm.stream_chunk_builder(chunks)
    calls = built.choices[0].message.tool_calls
    assert [(c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("read", {"path": "geometry/total.py"}),
        ("grep", {"path": "."}),
    ]
    assert len({c.id for c in calls}) == 2
    assert built.choices[0].finish_reason == "tool_calls"
    assert built.choices[0].message.content == "Let me look."


async def test_arguments_given_as_text_are_sent_verbatim(script: list[ScriptedModel]) -> None:
    model = serve(script, Turn(tool_calls=[("read", '{"path": "a.py"')]))

    built: Any = litellm.stream_chunk_builder(await stream(model))

    assert built.choices[0].message.tool_calls[0].function.arguments == '{"path": "a.py"'


async def test_requests_record_what_the_model_was_sent(script: list[ScriptedModel]) -> None:
    model = serve(script, Turn(tool_calls=[("read", {"path": "a.py"})]), Turn(text="It is in a.py."))

    built: Any = litellm.stream_chunk_builder(await stream(model))
    call = built.choices[0].message.tool_calls[0]
    follow_up = [
        *USER,
        {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_call_id": call.id, "content": "def total_area(): ..."},
    ]
    await stream(model, follow_up)

    first, second = model.requests
    assert first["messages"] == USER
    assert [t["function"]["name"] for t in first["tools"]] == ["read", "grep"]
    assert first["stream"] is True
    tool_message = second["messages"][-1]
    assert tool_message == {"role": "tool", "tool_call_id": call.id, "content": "def total_area(): ..."}
    assert second["messages"][1]["tool_calls"][0]["function"]["name"] == "read"
    model.assert_done()


async def test_a_turn_can_answer_from_the_request(script: list[ScriptedModel]) -> None:
    def echo(request: JSON) -> Turn:
        return Turn(text=f"You said: {request['messages'][-1]['content']}")

    model = serve(script, echo)

    chunks = await stream(model)

    assert "".join(deltas(chunks, "content")) == "You said: Where is total_area defined?"


async def test_non_streaming_answer(script: list[ScriptedModel]) -> None:
    model = serve(
        script, Turn(text="A summary.", usage=Usage(500, 20)), Turn(tool_calls=[("read", {"path": "x"})])
    )

    summary = await complete(model)
    calls = await complete(model)

    assert summary.choices[0].message.content == "A summary."
    assert (summary.usage.prompt_tokens, summary.usage.completion_tokens) == (500, 20)
    assert calls.choices[0].message.tool_calls[0].function.name == "read"
    assert json.loads(calls.choices[0].message.tool_calls[0].function.arguments) == {"path": "x"}
    assert "stream" not in model.requests[0] or not model.requests[0]["stream"]


async def test_rate_limit_is_not_retried_by_litellm_with_num_retries_zero(
    script: list[ScriptedModel],
) -> None:
    model = serve(script, Turn.rate_limited(retry_after=0.01), Turn(text="unused"))

    with pytest.raises(RateLimitError) as raised:
        await stream(model)

    assert "Rate limit reached" in str(raised.value)
    assert len(model.requests) == 1


async def test_server_error(script: list[ScriptedModel]) -> None:
    model = serve(script, Turn.server_error())

    with pytest.raises(InternalServerError):
        await stream(model)


async def test_context_window_overflow(script: list[ScriptedModel]) -> None:
    model = serve(script, Turn.context_overflow())

    with pytest.raises(ContextWindowExceededError) as raised:
        await stream(model)

    assert "maximum context length" in str(raised.value)


async def test_running_out_of_script_is_a_loud_500(script: list[ScriptedModel]) -> None:
    model = serve(script, Turn(text="only one"))
    await stream(model)

    with pytest.raises(InternalServerError) as raised:
        await stream(model)

    assert "script exhausted" in str(raised.value)
    assert model.errors and "request #2" in model.errors[0]
    with pytest.raises(AssertionError, match="script exhausted"):
        model.assert_done()


async def test_a_stalled_stream_can_be_cancelled(script: list[ScriptedModel]) -> None:
    model = serve(script, Turn(text="This answer never finishes.", stall_after_chunks=2))
    first = asyncio.Event()
    received: list[Any] = []

    async def consume() -> None:
        response: Any = await litellm.acompletion(
            model="openai/scripted",
            api_base=model.api_base,
            api_key="sk-fake",
            messages=USER,
            stream=True,
            num_retries=0,
        )
        async for chunk in response:
            received.append(chunk)
            first.set()

    task = asyncio.create_task(consume())
    await first.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    model.stop()

    assert not _server_threads()
    assert "This answer never finishes.".startswith("".join(deltas(received, "content")))


@pytest.mark.parametrize(
    ("turn", "streamed"),
    [
        (Turn(text="never sent", stall_after_chunks=0), False),
        (Turn(text="late", delay=600), False),
        (Turn(text="cut short in the middle", stall_after_chunks=3), True),
    ],
)
async def test_stop_ends_a_stall_or_delay_the_client_still_waits_on(
    script: list[ScriptedModel], turn: Turn, streamed: bool
) -> None:
    arrived = threading.Event()

    def answer(request: JSON) -> Turn:
        arrived.set()
        return turn

    model = serve(script, answer)
    task = asyncio.create_task(stream(model) if streamed else complete(model))
    assert await asyncio.to_thread(arrived.wait, 30)

    model.stop()

    with pytest.raises(openai.APIError):  # litellm's errors share only openai's base class
        await task
    assert not _server_threads()


async def test_models_listing(script: list[ScriptedModel]) -> None:
    model = serve(script)

    async with httpx.AsyncClient() as client:
        listing = (await client.get(f"{model.api_base}/models")).json()

    assert [m["id"] for m in listing["data"]] == ["scripted"]
    assert model.requests == []


def test_context_manager_starts_and_stops() -> None:
    with ScriptedModel([]) as model:
        assert model.api_base.startswith("http://127.0.0.1:")
        assert _server_threads()
    assert not _server_threads()
    with pytest.raises(RuntimeError):
        _ = model.api_base
