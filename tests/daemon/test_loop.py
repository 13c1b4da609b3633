"""The agent loop against real litellm talking HTTP to the scripted model server: steps, tool
calls (parallel, malformed, repeated), agents and subagents."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from daemon import scripted_openai
from daemon.config import ConfigError
from daemon.scripted_model import ScriptedModel, Turn
from tools import PermissionRequest, Reply

from .looping import Human, make_loop, script, tool_parts, workspace

__all__ = ["workspace"]  # the fixture, shared with the other test_loop_* files


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


async def test_tool_arguments_nested_too_deep_for_json_reach_the_model(
    workspace: Path, fake: ScriptedModel
) -> None:
    # Python's json gives up on such text with a RecursionError, not a JSONDecodeError.
    deep = '{"filePath": ' + "[" * 100_000
    script(fake, Turn(tool_calls=[("read", deep)]), Turn(text="sorry"), Turn(text="ok"))
    loop, _ = make_loop(workspace, fake, Human())
    assert (await loop.run_turn("read a.py")).stop_reason == "end"
    assert (await loop.run_turn("again")).stop_reason == "end"
    assert [p["input"] for p in tool_parts(loop)] == [deep]
    for request in fake.requests[1:]:
        [assistant] = [m for m in request["messages"] if m.get("tool_calls")]
        assert [c["function"]["arguments"] for c in assistant["tool_calls"]] == ["{}"]
        [read] = [m["content"] for m in request["messages"] if m["role"] == "tool"]
        assert "not valid JSON (nested too deeply)" in read


CHUNKS = scripted_openai.chunks


def ollama_chunks(turn: Turn, body: dict[str, Any], number: int, usage: bool) -> Iterator[dict[str, Any]]:
    """A stream as Ollama sends it: each tool call whole in one delta, every one at index 0."""
    for chunk in CHUNKS(Turn(text=turn.text), body, number, False):
        if chunk["choices"] and chunk["choices"][0]["finish_reason"]:
            break
        yield chunk
    envelope = scripted_openai.envelope("chat.completion.chunk", body, number)
    for i, (name, arguments) in enumerate(turn.tool_calls):
        function = {"name": name, "arguments": json.dumps(arguments)}
        call = {"index": 0, "id": f"call_{number}_{i}", "type": "function", "function": function}
        yield {**envelope, "choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}
    yield {**envelope, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}


async def test_ollama_parallel_calls_all_at_index_0_stay_apart(
    workspace: Path, fake: ScriptedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(scripted_openai, "chunks", ollama_chunks)
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

    monkeypatch.setattr(scripted_openai, "chunks", same_ids)
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


class AskFails(Human):
    """An editor that answers the doom-loop question with a JSON-RPC error, or a user who
    leaves it open until they cancel the turn."""

    def __init__(self, *, hang: bool) -> None:
        super().__init__()
        self.hang = hang
        self.waiting = asyncio.Event()

    async def permission(self, request: PermissionRequest) -> Reply:
        self.waiting.set()
        if self.hang:
            await asyncio.Event().wait()
        raise RuntimeError("the editor answered lspilot/requestPermission with an error")


async def test_a_doom_loop_question_that_fails_or_is_cancelled_finishes_its_call(
    workspace: Path, fake: ScriptedModel
) -> None:
    # The question was asked outside the call's error handling: a failed one ended the turn with
    # "The turn failed: RuntimeError" while the step's other calls ran on, and a cancelled one left
    # the call "running" for good (the editor's spinner with it).
    same = ("read", {"filePath": "a.py"})
    script(fake, Turn(tool_calls=[same]), Turn(tool_calls=[same]), Turn(tool_calls=[same]))
    loop, events = make_loop(workspace, fake, AskFails(hang=False))
    result = await loop.run_turn("loop")
    assert (result.stop_reason, result.error) == ("rejected", None)
    assert [p["state"] for p in tool_parts(loop)] == ["completed", "completed", "error"]
    assert tool_parts(loop)[2]["output"] == (
        "Error: 3 identical calls; asking the user whether to go on failed "
        "(RuntimeError: the editor answered lspilot/requestPermission with an error)."
    )

    script(fake, Turn(tool_calls=[same]), Turn(tool_calls=[same]), Turn(tool_calls=[same]))
    human = AskFails(hang=True)
    loop, events = make_loop(workspace, fake, human)
    turn = asyncio.create_task(loop.run_turn("loop again"))
    await asyncio.wait_for(human.waiting.wait(), 60)
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await turn
    last = tool_parts(loop)[-1]
    assert (last["state"], last["output"]) == ("error", "Error: cancelled by the user.")
    said = [e.data["state"] for e in events if e.type == "tool" and e.data["callId"] == last["call_id"]]
    assert said[-1] == "error"


PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6300010000050001a5f645400000000049454e44ae426082"
)


async def test_an_image_read_reaches_a_model_that_sees_and_is_said_missing_to_one_that_does_not(
    workspace: Path, fake: ScriptedModel
) -> None:
    # read said "Image shot.png (67 bytes) is attached." and the loop sent only that text: the
    # model was told of an image it never got, and guessed.
    (workspace / "shot.png").write_bytes(PNG)
    script(fake, Turn(tool_calls=[("read", {"filePath": "shot.png"})]), Turn(text="a red pixel"))
    loop, _ = make_loop(workspace, fake, Human())
    loop.model = dataclasses.replace(loop.model, model="openai/gpt-4o")  # litellm: it sees images
    assert (await loop.run_turn("what is in shot.png?")).text == "a red pixel"
    sent = fake.requests[-1]["messages"]
    assert sent[-2]["role"] == "tool" and sent[-2]["content"].startswith("Image shot.png (")
    assert sent[-1]["role"] == "user"
    url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert sent[-1]["content"][1:] == [
        {"type": "text", "text": "shot.png:"},
        {"type": "image_url", "image_url": {"url": url}},
    ]
    script(fake, Turn(text="I cannot see it"))
    loop.model = dataclasses.replace(loop.model, model="openai/scripted")  # unknown to litellm
    await loop.run_turn("and now?")
    history = fake.requests[-1]["messages"]
    assert not [m for m in history if isinstance(m.get("content"), list)]
    [result] = [m["content"] for m in history if m["role"] == "tool"]
    assert result.endswith("\n(Not sent: this model (openai/scripted) cannot be given an image.)")


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
    assert [row["id"] for row in loop.store.sessions(workspace)] == [loop.env.session.id]  # not the child


async def test_a_subagent_goes_on_only_in_a_session_its_parent_made(
    workspace: Path, fake: ScriptedModel
) -> None:
    # session_id named any session of the workspace: a subagent wrote into the user's own
    # session and was sent its history; and a subagent's session continued on its own ran its
    # agent without the parent's limits.
    script(fake, Turn(text="the user's own answer"))
    own, _ = make_loop(workspace, fake, Human())
    await own.run_turn("a private question")
    task = {"description": "look", "prompt": "Look around.", "subagent_type": "explore"}
    script(
        fake,
        Turn(tool_calls=[("task", {**task, "session_id": own.env.session.id})]),
        Turn(tool_calls=[("task", task)]),
        Turn(text="looked"),
        Turn(text="done"),
    )
    loop, _ = make_loop(workspace, fake, Human())
    await loop.run_turn("delegate")
    tool_messages = [m["content"] for m in fake.requests[-1]["messages"] if m["role"] == "tool"]
    assert tool_messages[0] == f"Error: no subagent session {own.env.session.id!r} of this session"
    assert len(own.store.messages(own.env.session.id)) == 2  # untouched
    assert "a private question" not in json.dumps(fake.requests[-2:])
    child = tool_messages[1].split("session_id: ")[1].split(";")[0]
    script(
        fake, Turn(tool_calls=[("task", {**task, "session_id": child})]), Turn(text="again"), Turn(text="ok")
    )
    await loop.run_turn("go on with it")
    assert fake.requests[-2]["messages"][-1] == {"role": "user", "content": "Look around."}
    assert len(loop.store.messages(child)) == 4  # its first turn and this one
    with pytest.raises(
        ConfigError, match=f"session {child} is a subagent's, of session {loop.env.session.id}"
    ):
        make_loop(workspace, fake, Human(), session_id=child)
