"""The agent loop against real litellm talking HTTP to the scripted model server."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from daemon import scripted_model
from daemon.config import ConfigError
from daemon.loop import Event, Loop, Retry
from daemon.run import Renderer
from daemon.runtime import Runtime
from daemon.scripted_model import ScriptedModel, Turn, Usage
from daemon.transcript import as_json
from tools import PermissionRequest, Reply

from .conftest import LSPILOT


class Human:
    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.asked: list[PermissionRequest] = []

    async def permission(self, request: PermissionRequest) -> Reply:
        self.asked.append(request)
        return self.replies.pop(0) if self.replies else Reply("reject")

    async def question(self, question: str, options: list[str]) -> str:
        return options[0] if options else "yes"


@pytest.fixture
def workspace(empty_workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    root = empty_workspace
    (root / "a.py").write_text("def area(r):\n    return 3.14 * r * r\n")
    (root / "b.py").write_text("from a import area\nprint(area(2))\n")
    (root / "AGENTS.md").write_text("Always answer in haiku.\n")
    return root


def script(fake: ScriptedModel, *turns: Turn) -> None:
    fake.turns.extend(turns)


class Recorder(list[Event]):
    """The loop's events, with a way to wait for one."""

    def __init__(self) -> None:
        super().__init__()
        self.changed = asyncio.Event()

    def __call__(self, event: Event) -> None:
        self.append(event)
        self.changed.set()

    async def until(self, predicate: Callable[[Event], bool]) -> None:
        while not any(predicate(e) for e in self):
            self.changed.clear()
            await self.changed.wait()


def make_loop(root: Path, fake: ScriptedModel, human: Human, **kwargs: Any) -> tuple[Loop, Recorder]:
    events = Recorder()
    runtime = Runtime.open(root)
    loop = runtime.loop(human, model="openai/scripted", api_base=fake.api_base, listeners=[events], **kwargs)
    loop.retry = Retry(attempts=4, base_delay=0.01)
    return loop, events


def tool_parts(loop: Loop) -> list[dict[str, Any]]:
    data = as_json(loop.store, loop.env.session.id)
    return [p for m in data["messages"] for p in m["parts"] if p["kind"] == "tool"]


async def test_parallel_tool_calls_run_at_the_same_time(workspace: Path, fake: ScriptedModel) -> None:
    # The first command waits for a file that only the second creates: run one after the
    # other, the first would time out.
    wait = "while [ ! -e flag ]; do sleep 0.01; done; echo first"
    calls = [
        ("bash", {"command": wait, "timeout": 30000, "description": "Wait for the flag"}),
        ("bash", {"command": "touch flag; echo second", "description": "Set the flag"}),
    ]
    script(fake, Turn(text="Both.", tool_calls=calls), Turn(text="Done."))
    loop, _events = make_loop(workspace, fake, Human(Reply("once"), Reply("once")))
    result = await loop.run_turn("run both")
    assert result.text == "Done."
    outputs = [m["content"] for m in fake.requests[1]["messages"] if m["role"] == "tool"]
    assert [o.split("\n")[0] for o in outputs] == ["first", "second"]
    assert all("(exit code 0)" in o for o in outputs), outputs


async def test_multi_step_turn_with_parallel_tool_calls(workspace: Path, fake: ScriptedModel) -> None:
    script(
        fake,
        Turn(
            text="Reading both.", tool_calls=[("read", {"filePath": "a.py"}), ("grep", {"pattern": "area"})]
        ),
        Turn(text="area is defined in a.py and used in b.py."),
    )
    loop, events = make_loop(workspace, fake, Human())
    result = await loop.run_turn("where is area used?")
    assert (result.stop_reason, result.text) == ("end", "area is defined in a.py and used in b.py.")
    first, second = fake.requests
    assert first["messages"][0]["role"] == "system"
    assert "Always answer in haiku." in first["messages"][0]["content"]
    assert str(workspace) in first["messages"][0]["content"]
    assert {t["function"]["name"] for t in first["tools"]} >= {"read", "grep", "glob", "batch"}
    tool_messages = [m for m in second["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 2
    assert "return 3.14 * r * r" in tool_messages[0]["content"]
    assert "b.py" in tool_messages[1]["content"]
    states = [(e.data["tool"], e.data["state"]) for e in events if e.type == "tool"]
    assert states.count(("read", "completed")) == 1 and states.count(("grep", "completed")) == 1
    parts = tool_parts(loop)
    assert [p["state"] for p in parts] == ["completed", "completed"]
    assert all(p["ended"] >= p["started"] for p in parts)


async def test_rate_limit_is_retried_visibly(workspace: Path, fake: ScriptedModel) -> None:
    script(fake, Turn.rate_limited(retry_after=0.05), Turn(error=500), Turn(text="ok"))
    loop, events = make_loop(workspace, fake, Human())
    result = await loop.run_turn("hi")
    assert (result.stop_reason, result.text) == ("end", "ok")
    retries = [e.data for e in events if e.type == "retry"]
    assert [r["attempt"] for r in retries] == [1, 2]
    assert retries[0]["wait"] == 0.05 and retries[0]["error"].startswith("RateLimitError")
    assert len(fake.requests) == 3


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


async def test_malformed_tool_arguments_reach_the_model(workspace: Path, fake: ScriptedModel) -> None:
    cut_off = '{"filePath": "a.py"'  # as when the model hits its output limit mid-call
    script(fake, Turn(tool_calls=[("read", cut_off), ("glob", "[1]")]), Turn(text="sorry"), Turn(text="ok"))
    loop, _ = make_loop(workspace, fake, Human())
    assert (await loop.run_turn("read a.py")).stop_reason == "end"
    assert (await loop.run_turn("again")).stop_reason == "end"
    # Stored as they came, but sent back as {} in every later request: providers that take the
    # arguments as an object (Anthropic, Gemini) could not be sent the history otherwise.
    assert [p["input"] for p in tool_parts(loop)] == [cut_off, "[1]"]
    for request in fake.requests[1:]:
        [assistant] = [m for m in request["messages"] if m.get("tool_calls")]
        assert [c["function"]["arguments"] for c in assistant["tool_calls"]] == ["{}", "{}"]
        read, glob = [m["content"] for m in request["messages"] if m["role"] == "tool"]
        assert "not valid JSON" in read and f"were not a JSON object: {cut_off}" in read
        assert "as a JSON object, not list" in glob


CHUNKS = scripted_model._chunks  # pyright: ignore[reportPrivateUsage] - tests reshape its stream


def ollama_chunks(turn: Turn, body: dict[str, Any], number: int, usage: bool) -> Iterator[dict[str, Any]]:
    """A stream as Ollama sends it: each tool call whole in one delta, every one at index 0."""
    for chunk in CHUNKS(Turn(text=turn.text), body, number, False):
        if chunk["choices"] and chunk["choices"][0]["finish_reason"]:
            break
        yield chunk
    envelope = scripted_model._envelope("chat.completion.chunk", body, number)  # pyright: ignore[reportPrivateUsage]
    for i, (name, arguments) in enumerate(turn.tool_calls):
        function = {"name": name, "arguments": json.dumps(arguments)}
        call = {"index": 0, "id": f"call_{number}_{i}", "type": "function", "function": function}
        yield {**envelope, "choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}
    yield {**envelope, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}


async def test_ollama_parallel_calls_all_at_index_0_stay_apart(
    workspace: Path, fake: ScriptedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scripted_model, "_chunks", ollama_chunks)
    script(
        fake,
        Turn(tool_calls=[("read", {"filePath": "a.py"}), ("read", {"filePath": "b.py"})]),
        Turn(text="done"),
    )
    loop, _ = make_loop(workspace, fake, Human())
    assert (await loop.run_turn("read both")).text == "done"
    parts = tool_parts(loop)
    assert [(p["call_id"], p["tool"], p["input"], p["state"]) for p in parts] == [
        ("call_1_0", "read", '{"filePath": "a.py"}', "completed"),
        ("call_1_1", "read", '{"filePath": "b.py"}', "completed"),
    ]


async def test_a_repeated_call_id_is_made_unique(
    workspace: Path, fake: ScriptedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    def same_ids(turn: Turn, body: dict[str, Any], number: int, usage: bool) -> Iterator[dict[str, Any]]:
        for chunk in CHUNKS(turn, body, number, usage):
            for choice in chunk["choices"]:
                for call in choice["delta"].get("tool_calls", []):
                    if "id" in call:
                        call["id"] = "call_x"
            yield chunk

    monkeypatch.setattr(scripted_model, "_chunks", same_ids)
    script(
        fake,
        Turn(tool_calls=[("read", {"filePath": "a.py"}), ("glob", {"pattern": "*.py"})]),
        Turn(text="done"),
    )
    loop, events = make_loop(workspace, fake, Human())
    assert (await loop.run_turn("go")).text == "done"
    parts = tool_parts(loop)
    assert [(p["call_id"], p["tool"], p["state"]) for p in parts] == [
        ("call_x", "read", "completed"),
        ("call_x_2", "glob", "completed"),
    ]
    sent = fake.requests[1]["messages"]
    [assistant] = [m for m in sent if m.get("tool_calls")]
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_x", "call_x_2"]
    results = {m["tool_call_id"]: m["content"] for m in sent if m["role"] == "tool"}
    assert "return 3.14" in results["call_x"] and "a.py" in results["call_x_2"]
    done = {
        (e.data["callId"], e.data["tool"])
        for e in events
        if e.type == "tool" and e.data["state"] == "completed"
    }
    assert done == {("call_x", "read"), ("call_x_2", "glob")}


async def test_doom_loop_asks_before_the_third_identical_call(workspace: Path, fake: ScriptedModel) -> None:
    same = ("read", {"filePath": "a.py"})
    script(fake, Turn(tool_calls=[same]), Turn(tool_calls=[same]), Turn(tool_calls=[same]))
    human = Human(Reply("reject"))
    loop, _ = make_loop(workspace, fake, human)
    result = await loop.run_turn("loop")
    assert [a.permission for a in human.asked] == ["doom_loop"]
    assert result.stop_reason == "rejected"
    assert [p["state"] for p in tool_parts(loop)] == ["completed", "completed", "error"]


async def test_plan_agent_cannot_edit(workspace: Path, fake: ScriptedModel) -> None:
    tools_dir = workspace / ".lspilot" / "tools"
    tools_dir.mkdir(parents=True)
    (tools_dir / "touch.py").write_text(
        "from pydantic import BaseModel, ConfigDict, Field\n"
        "from tools import ToolResult, define_tool\n"
        "class P(BaseModel):\n"
        "    model_config = ConfigDict(extra='forbid')\n"
        "    path: str = Field(description='file')\n"
        "@define_tool('Creates a file.', P, permission='edit')\n"
        "async def tool(params, ctx):\n"
        "    (ctx.root / params.path).write_text('x')\n"
        "    return ToolResult('touched', 'ok')\n"
    )
    script(fake, Turn(tool_calls=[("touch", {"path": "new.txt"})]), Turn(text="I may not edit."))
    loop, _ = make_loop(workspace, fake, Human(Reply("once")), agent_name="plan")
    result = await loop.run_turn("create new.txt")
    assert result.stop_reason == "end"
    assert "touch" not in {t["function"]["name"] for t in fake.requests[0]["tools"]}
    [tool_message] = [m for m in fake.requests[1]["messages"] if m["role"] == "tool"]
    assert tool_message["content"] == "Error: the touch tool is not available to the plan agent."
    assert not (workspace / "new.txt").exists()


async def test_cancel_mid_stream_keeps_what_streamed(workspace: Path, fake: ScriptedModel) -> None:
    script(fake, Turn(text="partial answer that never ends", stall_after_chunks=2))
    loop, events = make_loop(workspace, fake, Human())
    task = asyncio.create_task(loop.run_turn("go"))
    await asyncio.wait_for(events.until(lambda e: e.type == "text"), 60)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    ends = [e.data for e in events if e.type == "turn.end"]
    assert ends == [{"turnId": ends[0]["turnId"], "stopReason": "cancelled", "error": None}]
    messages = as_json(loop.store, loop.env.session.id)["messages"]
    kinds = [(p["kind"], p.get("text")) for p in messages[-1]["parts"]]
    assert kinds[0][0] == "text" and kinds[0][1] and "partial answer".startswith(kinds[0][1][:4])
    assert kinds[-1] == ("error", "Cancelled by the user.")


async def test_cancel_mid_tool_stops_the_tool(workspace: Path, fake: ScriptedModel) -> None:
    script(fake, Turn(tool_calls=[("question", {"question": "Which one?"})]))

    class SlowHuman(Human):
        async def question(self, question: str, options: list[str]) -> str:
            await asyncio.sleep(3600)
            return ""

    loop, events = make_loop(workspace, fake, SlowHuman())
    task = asyncio.create_task(loop.run_turn("ask me"))
    await asyncio.wait_for(events.until(lambda e: e.type == "tool" and e.data["state"] == "running"), 60)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    [part] = tool_parts(loop)
    assert (part["state"], part["output"]) == ("error", "Error: cancelled by the user.")
    # The session stays usable: the interrupted call is answered in the next request.
    script(fake, Turn(text="fine"))
    assert (await loop.run_turn("never mind")).text == "fine"
    [tool_message] = [m for m in fake.requests[-1]["messages"] if m["role"] == "tool"]
    assert tool_message["content"] == "Error: cancelled by the user."


def test_kill_9_mid_turn_keeps_everything_before_the_cut(workspace: Path, fake: ScriptedModel) -> None:
    script(
        fake,
        Turn(text="Reading.", tool_calls=[("read", {"filePath": "a.py"})]),
        Turn(text="never finished", stall_after_chunks=1),
    )
    command = [LSPILOT, "run", "what is in a.py?", "--root", str(workspace), "--json"]
    proc = subprocess.Popen(
        [*command, "--model", "openai/scripted", "--api-base", fake.api_base],
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ,
    )
    assert proc.stdout is not None
    session = ""
    for line in proc.stdout:
        event = json.loads(line)
        session = event["session_id"]
        if event["type"] == "tool" and event["data"]["state"] == "completed":
            break
    deadline = time.monotonic() + 60
    while len(fake.requests) < 2 and time.monotonic() < deadline:  # the second step is now streaming
        time.sleep(0.05)
    assert len(fake.requests) == 2
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    shown = subprocess.run(
        [LSPILOT, "sessions", "export", session, "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    data = json.loads(shown.stdout)
    roles = [m["role"] for m in data["messages"]]
    assert roles[:2] == ["user", "assistant"]
    first = data["messages"][1]["parts"]
    assert first[0] == {**first[0], "kind": "text", "text": "Reading."}
    assert first[1]["kind"] == "tool" and first[1]["state"] == "completed"
    assert "return 3.14" in first[1]["output"]
    listed = subprocess.run(
        [LSPILOT, "sessions", "list", "--root", str(workspace)], capture_output=True, text=True, check=True
    )
    assert session in listed.stdout and "what is in a.py?" in listed.stdout


def test_run_prints_only_the_answer_on_stdout(workspace: Path, fake: ScriptedModel) -> None:
    # `lspilot run "..." > answer.txt`: retries and errors go to the terminal, not into the file.
    script(fake, Turn(error=500), Turn(text="the answer"), Turn(error=400, error_message="Bad model"))
    command = [LSPILOT, "run", "hi", "--root", str(workspace), "--model", "openai/scripted"]
    command += ["--api-base", fake.api_base]

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command, *extra], check=False, capture_output=True, text=True, env=os.environ, timeout=120
        )

    ran = run()
    assert (ran.returncode, ran.stdout) == (0, "the answer\n")
    assert "retrying in" in ran.stderr
    failed = run("--session", ran.stderr.strip().splitlines()[-1].removeprefix("session "))
    assert (failed.returncode, failed.stdout) == (1, "")
    assert "error: The model call failed: BadRequestError: Bad model" in failed.stderr


def test_config_errors_name_the_file_and_key(workspace: Path) -> None:
    (workspace / "lspilot.toml").write_text('model = "openai/x"\n[agents.review]\ncolour = "blue"\n')
    with pytest.raises(ConfigError, match=r"lspilot.toml: agents.review: unknown keys \['colour'\]"):
        Runtime.open(workspace).agent("review")
    (workspace / "lspilot.toml").write_text('modle = "openai/x"\n')
    with pytest.raises(ConfigError, match=r"lspilot.toml: unknown settings \['modle'\]"):
        Runtime.open(workspace)
    (workspace / "lspilot.toml").write_text("")
    with pytest.raises(ConfigError, match="no model configured"):
        Runtime.open(workspace).loop(Human())
    with pytest.raises(ConfigError, match="no agent called 'nope'"):
        Runtime.open(workspace).agent("nope")


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        (
            '[agents.build]\nmax_steps = "lots"',
            "agents.build.max_steps must be a positive integer, not 'lots'",
        ),
        ("[agents.build]\nmax_steps = 0", "agents.build.max_steps must be a positive integer, not 0"),
        ('[agents.build]\ntools = "read"', "agents.build.tools must be a list of tool ids"),
        ("[agents.build]\nmodel = 4", "agents.build.model must be a string, not 4"),
        (
            '[agents.build]\npermission = { edit = "maybe" }',
            "permission.edit: '\\*' = 'maybe'; expected one of",
        ),
        ('[agents.build]\npermission = "allow"', "agents.build.permission must be a table"),
        ('provider_options = "temperature=0"', "provider_options must be a table"),
        ("agents = 3", "agents must be a table"),
        ('permission = "allow"', "permission must be a table"),
        ("model = 5", "model must be a string, not 5"),
        ('[lsp]\nrequest_timeout = "30"', "\\[lsp\\] request_timeout must be a positive number, not '30'"),
    ],
)
def test_config_values_of_the_wrong_type_are_named(workspace: Path, toml: str, message: str) -> None:
    model = "" if toml.startswith("model =") else 'model = "openai/x"'
    (workspace / "lspilot.toml").write_text(f"{model}\n{toml}\n")
    with pytest.raises(ConfigError, match=message) as raised:
        runtime = Runtime.open(workspace)
        runtime.cfg.bridge()
        runtime.loop(Human())
    assert "[lsp]" in toml or str(workspace / "lspilot.toml") in str(raised.value)


async def test_task_runs_a_subagent_in_a_child_session(workspace: Path, fake: ScriptedModel) -> None:
    task = {"description": "find area", "prompt": "Where is area defined?", "subagent_type": "explore"}
    script(
        fake,
        Turn(tool_calls=[("task", task)]),
        Turn(tool_calls=[("read", {"filePath": "a.py"})]),  # the subagent's first step
        Turn(text="area is defined in a.py line 1."),  # the subagent's answer
        Turn(text="The subagent says: a.py line 1."),
    )
    loop, events = make_loop(workspace, fake, Human())
    result = await loop.run_turn("where is area?")
    assert result.text == "The subagent says: a.py line 1."
    parent_tools = {t["function"]["name"] for t in fake.requests[0]["tools"]}
    child_tools = {t["function"]["name"] for t in fake.requests[1]["tools"]}
    assert "task" in parent_tools and "todowrite" in parent_tools
    assert child_tools <= {"read", "grep", "glob", "list", "lsp", "batch"} and "read" in child_tools
    assert fake.requests[1]["messages"][-1] == {"role": "user", "content": "Where is area defined?"}
    [tool_message] = [m for m in fake.requests[3]["messages"] if m["role"] == "tool"]
    assert tool_message["content"].startswith("area is defined in a.py line 1.\n\n(subagent session_id: ses_")
    progress = [e.data for e in events if e.type == "tool" and e.data.get("metadata", {}).get("steps")]
    assert progress and progress[-1]["metadata"]["steps"] == ["read: a.py"]
    child = progress[-1]["metadata"]["sessionId"]
    assert child != loop.env.session.id and loop.store.session_root(child) == workspace
    unknown = {**task, "subagent_type": "wizard"}
    script(fake, Turn(tool_calls=[("task", unknown)]), Turn(text="ok"))
    await loop.run_turn("again")
    [bad] = [m for m in fake.requests[-1]["messages"] if m["role"] == "tool"][-1:]
    assert "There is no subagent 'wizard'; use one of: explore, general." in bad["content"]


def test_api_keys_reach_neither_the_logs_nor_the_session_store(
    workspace: Path, fake: ScriptedModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # -v logs each request's options, custom headers included (a proxy's or gateway's key).
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment-0123456789")
    (workspace / "lspilot.toml").write_text(
        '[provider_options]\napi_key = "sk-from-the-config-0123456789"\n'
        'extra_headers = { "x-api-key" = "gateway-key-0123456789", "X-Trace" = "not a secret" }\n'
    )
    script(fake, Turn(error=500), Turn(text="the answer"))
    command = [LSPILOT, "-v", "run", "hi", "--root", str(workspace), "--model", "openai/scripted"]
    command += ["--api-base", fake.api_base]
    ran = subprocess.run(command, check=False, capture_output=True, text=True, env=os.environ, timeout=120)
    assert (ran.returncode, ran.stdout) == (0, "the answer\n")  # -v logs nothing on stdout either
    assert "X-Trace" in ran.stderr and "not a secret" in ran.stderr  # the headers were logged...
    assert "[redacted]" in ran.stderr  # ... their secrets were not
    data = tmp_path / "data"
    written = [ran.stderr, *(f.read_text(errors="replace") for f in data.rglob("*") if f.is_file())]
    for secret in ("sk-from-the-environment", "sk-from-the-config", "gateway-key"):
        assert not [text for text in written if secret in text], secret


async def test_a_session_is_continued_only_in_its_own_workspace(
    workspace: Path, fake: ScriptedModel, tmp_path: Path
) -> None:
    script(fake, Turn(text="first"))
    loop, _ = make_loop(workspace, fake, Human())
    await loop.run_turn("hi")
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(ConfigError, match=f"belongs to {workspace}; continue it there"):
        make_loop(other, fake, Human(), session_id=loop.env.session.id)
    make_loop(workspace, fake, Human(), session_id=loop.env.session.id)  # at home it goes on


async def test_tool_results_carry_no_secret_from_the_environment(
    workspace: Path, fake: ScriptedModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "ghp_fromTheEnvironment0123456789"
    monkeypatch.setenv("GITHUB_TOKEN", token)
    (workspace / "deploy.txt").write_text(f"token: {token}\n")
    echo = {"command": "echo $GITHUB_TOKEN", "description": "Show the token"}
    script(fake, Turn(tool_calls=[("read", {"filePath": "deploy.txt"}), ("bash", echo)]), Turn(text="ok"))
    loop, _ = make_loop(workspace, fake, Human(Reply("once")))
    await loop.run_turn("show me the token")
    results = [m["content"] for m in fake.requests[-1]["messages"] if m["role"] == "tool"]
    assert len(results) == 2 and all("redacted]" in r for r in results), results
    assert token not in json.dumps(fake.requests[-1])
    stored = [f for f in (tmp_path / "data").rglob("*") if f.is_file() and token.encode() in f.read_bytes()]
    assert stored == []
