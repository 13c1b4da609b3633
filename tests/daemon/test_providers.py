"""What particular providers need, through real litellm: Anthropic's prompt caching and thinking
across tool calls, DeepSeek's reasoning sent back.

The scripted model answers ``/v1/messages`` as Anthropic does and refuses what Anthropic refuses
(daemon/scripted_anthropic.py): an assistant message with tool use that does not start with its
signed thinking block when thinking is on, more than four cache breakpoints.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from daemon import history
from daemon.loop import CUT_OFF, Loop, Retry
from daemon.model import ModelSettings, _request  # pyright: ignore[reportPrivateUsage]
from daemon.runtime import Runtime
from daemon.scripted_anthropic import signature
from daemon.scripted_model import ScriptedModel, Turn, Usage
from daemon.transcript import as_json
from tools import PermissionRequest, Reply

MODEL = "anthropic/claude-sonnet-4-5"
THINKING = {"thinking": {"type": "enabled", "budget_tokens": 1024}}


class Human:
    async def permission(self, request: PermissionRequest) -> Reply:
        del request
        return Reply("once")

    async def question(self, question: str, options: list[str]) -> str:
        del question
        return options[0] if options else "yes"


@pytest.fixture
def workspace(empty_workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-fake")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-fake")
    (empty_workspace / "a.py").write_text("def area(r):\n    return 3.14 * r * r\n")
    return empty_workspace


def anthropic_loop(
    root: Path, fake: ScriptedModel, options: dict[str, Any] | None = None, session_id: str | None = None
) -> Loop:
    api_base = fake.api_base.removesuffix("/v1")  # litellm adds /v1/messages
    loop = Runtime.open(root).loop(Human(), session_id=session_id, model=MODEL, api_base=api_base)
    loop.model = dataclasses.replace(loop.model, options=options or {})
    loop.retry = Retry(attempts=1, base_delay=0.01)
    return loop


def breakpoints(body: dict[str, Any]) -> list[str]:
    """Where the request's cache_control breakpoints are: "system", "tools" or "message N"."""
    found = ["system" for b in body.get("system") or [] if b.get("cache_control")]
    found += ["tools" for t in body.get("tools") or [] if t.get("cache_control")]
    for index, message in enumerate(body["messages"]):
        content = message["content"] if isinstance(message["content"], list) else []
        found += [f"message {index}" for b in content if b.get("cache_control")]
    return found


async def test_thinking_goes_back_signed_with_the_tool_calls_it_led_to(
    workspace: Path, fake: ScriptedModel
) -> None:
    fake.push(
        Turn(reasoning="The area function is in a.py; read it.", tool_calls=[("read", {"filePath": "a.py"})]),
        Turn(reasoning="It multiplies by 3.14.", text="area(r) is 3.14 * r * r."),
    )
    loop = anthropic_loop(workspace, fake, THINKING)
    result = await loop.run_turn("what does area do?")
    assert (result.stop_reason, result.text) == ("end", "area(r) is 3.14 * r * r."), result
    assistant = [m for m in fake.requests[1]["messages"] if m["role"] == "assistant"][-1]
    thought = "The area function is in a.py; read it."
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": thought,
        "signature": signature(thought),
    }
    assert assistant["content"][1]["type"] == "tool_use"
    stored = [p for m in as_json(loop.store, loop.env.session.id)["messages"] for p in m["parts"]]
    assert [p["text"] for p in stored if p["kind"] == "reasoning"] == [thought, "It multiplies by 3.14."]


async def test_a_later_turn_sends_the_earlier_thinking_back_too(workspace: Path, fake: ScriptedModel) -> None:
    # A session continued later (a new Loop on the stored session) replays the signed blocks
    # from the store: the second turn's tool loop is checked against them as well.
    fake.push(
        Turn(reasoning="Read it first.", tool_calls=[("read", {"filePath": "a.py"})]),
        Turn(text="It computes an area."),
        Turn(reasoning="Read it again.", tool_calls=[("read", {"filePath": "a.py"})]),
        Turn(text="Still an area."),
    )
    first = anthropic_loop(workspace, fake, THINKING)
    await first.run_turn("what does area do?")
    again = anthropic_loop(workspace, fake, THINKING, session_id=first.env.session.id)
    result = await again.run_turn("and now?")
    assert result.text == "Still an area.", fake.errors
    assistants = [m for m in fake.requests[3]["messages"] if m["role"] == "assistant"]
    firsts = [m["content"][0].get("thinking") for m in assistants if isinstance(m["content"], list)]
    assert firsts[0] == "Read it first." and firsts[-1] == "Read it again."


async def test_the_prompt_is_cached_at_the_system_message_and_the_newest_message(
    workspace: Path, fake: ScriptedModel
) -> None:
    fake.push(
        Turn(tool_calls=[("read", {"filePath": "a.py"})]),
        Turn(tool_calls=[("glob", {"pattern": "*.py"})]),
        Turn(text="Done.", usage=Usage(prompt_tokens=900, completion_tokens=5, cached_tokens=800)),
    )
    loop = anthropic_loop(workspace, fake)
    result = await loop.run_turn("look around")
    assert result.text == "Done.", fake.errors
    for body in fake.requests:
        assert breakpoints(body) == ["system", f"message {len(body['messages']) - 1}"]
    messages = as_json(loop.store, loop.env.session.id)["messages"]
    assert messages[-1]["usage"]["cached"] == 800


async def test_provider_options_can_turn_the_cache_breakpoints_off(
    workspace: Path, fake: ScriptedModel
) -> None:
    fake.push(Turn(text="Hi."))
    loop = anthropic_loop(workspace, fake, {"cache_control_injection_points": []})
    assert (await loop.run_turn("hi")).text == "Hi.", fake.errors
    assert breakpoints(fake.requests[0]) == []


async def test_openai_compatible_models_get_no_breakpoints(workspace: Path, fake: ScriptedModel) -> None:
    # Local OpenAI-compatible servers often take only string contents: caching blocks there
    # would break them, and OpenAI caches prompts without being told.
    fake.push(Turn(tool_calls=[("read", {"filePath": "a.py"})]), Turn(text="Done."))
    loop = Runtime.open(workspace).loop(Human(), model="openai/scripted", api_base=fake.api_base)
    assert (await loop.run_turn("read a.py")).text == "Done."
    for body in fake.requests:
        assert all(isinstance(m.get("content"), str | None) for m in body["messages"]), body["messages"]


async def test_a_session_continued_with_another_model_sends_ids_it_accepts(
    workspace: Path, fake: ScriptedModel
) -> None:
    # Ids another provider made can be longer than OpenAI's 40 characters (OpenAI's own Responses
    # API makes "fc_" and 48 hex digits; some proxies make hundreds): OpenAI refused the whole
    # history ("string too long ... maximum length 40"), in every request of the session.
    long_id, plain = "fc_0f0e50a1476a6c35006912c58dc9f8819192c25864eb16f07f", "aB3xK9mP2"
    runtime = Runtime.open(workspace)
    session = runtime.store.create_session(workspace.resolve())
    runtime.store.add_part(runtime.store.add_message(session, "user", "turn_1"), "text", "read a.py")
    made = runtime.store.add_message(session, "assistant", "turn_1", "openai/gpt-5-codex")
    runtime.store.add_part(made, "tool", call_id=long_id, tool="read", input='{"filePath": "a.py"}')
    runtime.store.add_part(made, "tool", call_id=plain, tool="read", input='{"filePath": "b.py"}')
    fake.push(Turn(text="It computes an area."))
    loop = runtime.loop(Human(), session_id=session, model="openai/scripted", api_base=fake.api_base)
    assert (await loop.run_turn("what does area do?")).text == "It computes an area.", fake.errors
    sent = fake.requests[0]["messages"]
    [assistant] = [m for m in sent if m["role"] == "assistant"]
    ids = [call["id"] for call in assistant["tool_calls"]]
    assert len(ids[0]) <= 40 and ids[0] != long_id and ids[1] == plain
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == ids
    # The model that made an id gets it back as it was (Gemini's carry its thought signatures).
    messages = history.messages(runtime.store, session, "openai/gpt-5-codex")
    assert [c["id"] for c in messages[1]["tool_calls"]] == [long_id, plain]


async def test_mistral_models_get_nine_character_ids_even_for_their_own_calls(
    workspace: Path, fake: ScriptedModel
) -> None:
    # Devstral behind an OpenAI-compatible server that makes OpenAI-style ids, as several do:
    # Mistral's tokenizer then refuses them in the next step ("must be a-z, A-Z, 0-9, with a
    # length of 9"), and every tool loop ended after its first call.
    fake.push(Turn(tool_calls=[("read", {"filePath": "a.py"})]), Turn(text="It computes an area."))
    loop = Runtime.open(workspace).loop(Human(), model="openai/devstral-small", api_base=fake.api_base)
    assert (await loop.run_turn("what does area do?")).text == "It computes an area.", fake.errors
    [assistant] = [m for m in fake.requests[1]["messages"] if m["role"] == "assistant"]
    [call_id] = [call["id"] for call in assistant["tool_calls"]]
    assert len(call_id) == 9 and call_id.isalnum()


async def test_an_answer_cut_off_at_max_tokens_ends_the_turn_saying_so(
    workspace: Path, fake: ScriptedModel
) -> None:
    fake.push(Turn(text="area(r) returns", finish_reason="length"))  # Anthropic's max_tokens
    result = await anthropic_loop(workspace, fake).run_turn("what does area do?")
    assert (result.stop_reason, result.text, result.error) == ("length", "area(r) returns", CUT_OFF)


async def test_deepseek_thinking_gets_its_reasoning_back(workspace: Path, fake: ScriptedModel) -> None:
    # DeepSeek's thinking mode refuses assistant messages without reasoning_content; litellm
    # then fills in a blank one, and the model loses what it had worked out.
    fake.push(
        Turn(reasoning="area is in a.py; read it.", tool_calls=[("read", {"filePath": "a.py"})]),
        Turn(text="It computes an area."),
    )
    loop = Runtime.open(workspace).loop(Human(), model="deepseek/deepseek-reasoner", api_base=fake.api_base)
    loop.model = dataclasses.replace(loop.model, options={"thinking": {"type": "enabled"}})
    assert (await loop.run_turn("what does area do?")).text == "It computes an area."
    assistant = [m for m in fake.requests[1]["messages"] if m["role"] == "assistant"][-1]
    assert assistant["reasoning_content"] == "area is in a.py; read it."


@pytest.mark.parametrize(
    ("model", "cached"),
    [
        ("anthropic/claude-sonnet-4-5", True),
        ("anthropic/claude-a-model-litellm-does-not-know", True),
        ("claude-3-haiku-20240307", True),
        ("bedrock/us.anthropic.claude-sonnet-4-20250514-v1:0", True),
        ("vertex_ai/claude-sonnet-4@20250514", True),
        ("bedrock/anthropic.claude-3-sonnet-20240229-v1:0", False),  # Bedrock refuses cache points
        ("vertex_ai/claude-3-sonnet@20240229", False),
        ("openai/gpt-4o", False),
        ("openai/claude-behind-a-proxy", False),
        ("ollama/qwen3", False),
    ],
)
def test_which_models_get_cache_breakpoints(model: str, cached: bool) -> None:
    request = _request(ModelSettings(model), [{"role": "user", "content": "hi"}])
    assert ("cache_control_injection_points" in request) == cached
