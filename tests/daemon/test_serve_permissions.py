"""`lspilot serve`: permission asks go to the editor (lspilot/requestPermission, or
window/showMessageRequest without lspilot's options), and sessions that two asks or two
processes want at once."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from daemon.scripted_model import ScriptedModel, Turn
from daemon.store import Store
from tests.conftest import data_dir

from .serving import FULL, Editor, connect, tool_results, workspace

__all__ = ["connect", "workspace"]  # the fixtures, shared with the other test_serve_* files


async def test_permission_prompts_go_to_the_editor(connect: Callable[..., Any], fake: ScriptedModel) -> None:
    read_env = Turn(tool_calls=[("read", {"filePath": ".env"})])
    fake.turns.extend([read_env, Turn(text="done"), read_env, Turn(text="again")])
    editor: Editor = await connect("visual-studio-code", FULL)
    editor.permission_answers.append({"optionId": "allow_always"})
    first = await editor.command("lspilot.ask", {"prompt": "read .env"})
    assert first["stopReason"] == "end"
    [ask] = editor.permission_asks
    assert ask["permission"] == "read" and ask["patterns"] == [".env"]
    assert ask["sessionId"] == first["sessionId"] and ask["toolCallId"]
    assert {o["kind"] for o in ask["options"]} >= {"allow_once", "allow_always", "reject_once"}
    # "always" was remembered: the second read does not ask.
    second = await editor.command("lspilot.ask", {"sessionId": first["sessionId"], "prompt": "again"})
    assert second["stopReason"] == "end" and len(editor.permission_asks) == 1


def _read_outside(*paths: Path) -> list[Turn]:
    return [Turn(tool_calls=[("read", {"filePath": str(path)})]) for path in paths]


async def test_the_editor_is_told_what_always_remembers_and_what_counts_as_once(
    connect: Callable[..., Any], fake: ScriptedModel, tmp_path: Path
) -> None:
    # The request named only the patterns asked for: an editor user never saw what "always"
    # covered, nor that "always" for the home folder (here tmp_path) would count as once.
    (tmp_path / "elsewhere").mkdir()
    for path in (tmp_path / "notes.txt", tmp_path / "elsewhere" / "notes.txt"):
        path.write_text("notes\n")
    fake.turns.extend(_read_outside(tmp_path / "notes.txt", tmp_path / "elsewhere" / "notes.txt"))
    fake.turns.append(Turn(text="done"))
    editor: Editor = await connect("visual-studio-code", FULL)
    editor.permission_answers += [{"optionId": "allow_always"}, {"optionId": "allow_always"}]
    assert (await editor.command("lspilot.ask", {"prompt": "read my notes"}))["stopReason"] == "end"
    home, elsewhere = editor.permission_asks
    assert (home["patterns"], home["always"]) == ([f"{tmp_path}/*"], [])
    assert home["alwaysRefused"] == [
        {"pattern": f"{tmp_path}/*", "reason": f"it would allow everything in the home folder ({tmp_path})"}
    ]
    always = {o["kind"]: o["name"] for o in home["options"]}["allow_always"]
    assert always == "Always allow (counts as once here)"
    assert (elsewhere["patterns"], elsewhere["always"]) == ([f"{tmp_path}/elsewhere/*"],) * 2
    assert elsewhere["alwaysRefused"] == []
    assert {o["kind"]: o["name"] for o in elsewhere["options"]}["allow_always"] == "Always allow"


async def test_the_fallback_message_says_what_always_remembers_and_what_counts_as_once(
    connect: Callable[..., Any], fake: ScriptedModel, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("notes\n")
    fake.turns.extend([*_read_outside(tmp_path / "notes.txt"), Turn(text="ok")])
    editor: Editor = await connect("neovim")
    editor.message_answers.append("Always allow")
    assert (await editor.command("lspilot.ask", {"prompt": "read my notes"}))["stopReason"] == "end"
    [request] = editor.message_requests
    refused = f"'always' counts as 'once' for {tmp_path}/*: it would allow everything in the home folder"
    assert request.message.splitlines()[1:] == [
        f"external_directory: {tmp_path}/*",
        f"{refused} ({tmp_path})",
    ]


async def test_an_answer_that_is_no_option_rejects_and_is_logged_in_the_editor(
    connect: Callable[..., Any], fake: ScriptedModel
) -> None:
    fake.turns.extend([Turn(tool_calls=[("read", {"filePath": ".env"})]), Turn(text="done")])
    editor: Editor = await connect("neovim", FULL)
    editor.permission_answers.append({"optionId": "sure, why not"})
    result = await editor.command("lspilot.ask", {"prompt": "read .env"})
    assert result["stopReason"] == "rejected"
    # Sent before the turn's answer, on the same stream; pytest-lsp's client keeps log messages.
    [message] = editor.client.log_messages
    assert message.type == types.MessageType.Warning
    assert (
        message.message
        == "lspilot: the editor answered 'sure, why not', not one of the options; taken as a reject"
    )


async def test_a_reject_with_feedback_reaches_the_model(
    connect: Callable[..., Any], fake: ScriptedModel
) -> None:
    fake.turns.extend([Turn(tool_calls=[("read", {"filePath": ".env"})]), Turn(text="understood")])
    editor: Editor = await connect("neovim", FULL)
    editor.permission_answers.append({"optionId": "reject_once", "feedback": "secrets stay private"})
    result = await editor.command("lspilot.ask", {"prompt": "read .env"})
    assert result["stopReason"] == "end"
    assert "secrets stay private" in tool_results(fake)[-1]


async def test_reject_for_this_session_lasts_for_the_session_s_later_turns(
    connect: Callable[..., Any], fake: ScriptedModel
) -> None:
    """Each turn has an engine of its own: the deny rule was dropped when the turn ended."""
    read_env = Turn(tool_calls=[("read", {"filePath": ".env"})])
    fake.turns.extend([read_env, Turn(text="understood"), read_env, Turn(text="again"), read_env])
    fake.turns.append(Turn(text="other"))
    editor: Editor = await connect("neovim", FULL)
    editor.permission_answers.append({"optionId": "reject_always", "feedback": "never"})
    first = await editor.command("lspilot.ask", {"prompt": "read .env"})
    assert first["stopReason"] == "end" and len(editor.permission_asks) == 1
    second = await editor.command("lspilot.ask", {"sessionId": first["sessionId"], "prompt": "again"})
    assert second["stopReason"] == "end" and len(editor.permission_asks) == 1  # not asked again
    assert "rule read '.env' = deny in the editor, this session" in tool_results(fake)[-1]
    editor.permission_answers.append({"optionId": "reject_once"})
    other = await editor.command("lspilot.ask", {"prompt": "read .env in a new session"})
    assert other["sessionId"] != first["sessionId"] and len(editor.permission_asks) == 2


async def test_questions_take_a_free_answer_where_the_editor_asks_them_itself(
    connect: Callable[..., Any], fake: ScriptedModel
) -> None:
    """Without options, a window/showMessageRequest has nothing to pick and nowhere to type:
    the question was "dismissed" at once (Neovim) or a toast without buttons (VS Code)."""
    which = Turn(tool_calls=[("question", {"question": "Which database?"})])
    pick = Turn(tool_calls=[("question", {"question": "Port?", "options": ["5432", "3306"]})])
    fake.turns.extend([which, pick, Turn(text="done")])
    editor: Editor = await connect("neovim", {**FULL, "questions": True})
    editor.question_answers += [{"answer": "SQLite, in a file"}, {"answer": "6543"}]
    result = await editor.command("lspilot.ask", {"prompt": "set up the database"})
    assert result["stopReason"] == "end"
    assert [(q["question"], q["options"]) for q in editor.questions] == [
        ("Which database?", []),
        ("Port?", ["5432", "3306"]),
    ]
    assert editor.questions[0]["sessionId"] == result["sessionId"] and not editor.message_requests
    assert ["SQLite, in a file" in text for text in tool_results(fake)[-2:]] == [True, False]
    assert "6543" in tool_results(fake)[-1]
    fake.turns.extend([which, Turn(text="ok")])
    await editor.command("lspilot.ask", {"sessionId": result["sessionId"], "prompt": "again"})  # cancelled
    assert tool_results(fake)[-1] == "Error: The user dismissed the question without answering."


async def test_without_lspilot_options_permissions_fall_back_to_message_requests(
    connect: Callable[..., Any], fake: ScriptedModel
) -> None:
    fake.turns.extend([Turn(tool_calls=[("read", {"filePath": ".env"})]), Turn(text="ok")])
    editor: Editor = await connect("neovim")
    editor.message_answers.append("Allow once")
    result = await editor.command("lspilot.ask", {"prompt": "read .env"})
    assert result["stopReason"] == "end"
    [request] = editor.message_requests
    assert ".env" in request.message and next(a.title for a in request.actions or []) == "Allow once"
    assert "TOKEN=not-for-models" in tool_results(fake)[-1]


async def test_bash_permission_once_always_and_reject(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    def run(command: str) -> Turn:
        return Turn(tool_calls=[("bash", {"command": command, "description": "list the files"})])

    fake.turns.extend([run("ls -a"), Turn(text="1"), run("ls -l"), Turn(text="2"), run("ls -la")])
    fake.turns.extend([Turn(text="3"), run("touch made-by-agent")])
    editor: Editor = await connect("visual-studio-code", FULL)
    editor.permission_answers += [{"optionId": "allow_once"}, {"optionId": "allow_always"}]
    editor.permission_answers.append({"optionId": "reject_once"})
    first = await editor.command("lspilot.ask", {"prompt": "once"})
    session = {"sessionId": first["sessionId"]}
    assert (await editor.command("lspilot.ask", session | {"prompt": "always"}))["stopReason"] == "end"
    assert (await editor.command("lspilot.ask", session | {"prompt": "remembered"}))["stopReason"] == "end"
    rejected = await editor.command("lspilot.ask", session | {"prompt": "reject"})
    asks = [(a["permission"], a["patterns"]) for a in editor.permission_asks]
    assert asks == [("bash", ["ls -a"]), ("bash", ["ls -l"]), ("bash", ["touch made-by-agent"])]
    assert rejected["stopReason"] == "rejected" and not (workspace / "made-by-agent").exists()


async def test_two_asks_in_one_session_at_once_run_one_turn(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    # A project tool whose init takes a while: the second ask arrives while the first prepares.
    tools = workspace / ".lspilot" / "tools"
    tools.mkdir(parents=True)
    (tools / "slow.py").write_text(
        "import asyncio\n"
        "from pydantic import BaseModel, ConfigDict\n"
        "from tools import Tool, ToolResult\n"
        "class P(BaseModel):\n"
        "    model_config = ConfigDict(extra='forbid')\n"
        "class Slow(Tool[P]):\n"
        "    id = 'slow'\n"
        "    description = 'Starts slowly.'\n"
        "    Params = P\n"
        "    async def init(self, ctx):\n"
        "        await asyncio.sleep(0.5)\n"
        "    async def run(self, params, ctx):\n"
        "        return ToolResult('slow', 'done')\n"
    )
    fake.turns.extend([Turn(text="first"), Turn(text="second"), Turn(text="third")])
    editor: Editor = await connect("neovim", FULL)
    first = await editor.command("lspilot.ask", {"prompt": "one"})
    again = {"sessionId": first["sessionId"], "prompt": "two"}
    answers = await asyncio.gather(
        editor.command("lspilot.ask", again), editor.command("lspilot.ask", again), return_exceptions=True
    )
    refused = [a for a in answers if isinstance(a, BaseException)]
    assert len(refused) == 1 and "a turn is already running in session" in str(refused[0])
    assert [a["stopReason"] for a in answers if isinstance(a, dict)] == ["end"]
    history = await editor.command("lspilot.history", {"sessionId": first["sessionId"]})
    assert [m["role"] for m in history["messages"]] == ["user", "assistant", "user", "assistant"]


async def test_an_ask_in_a_session_that_another_process_runs_is_refused(
    connect: Callable[..., Any], fake: ScriptedModel
) -> None:
    fake.turns.extend([Turn(text="first"), Turn(text="second")])
    editor: Editor = await connect("neovim", FULL)
    session = (await editor.command("lspilot.ask", {"prompt": "one"}))["sessionId"]
    store = Store(data_dir() / "lspilot.db")  # another daemon on the same database: this test
    try:
        async with store.claim(session):
            busy = f"session {session} is in use by pid {os.getpid()}, "
            with pytest.raises(JsonRpcInvalidParams, match=busy):
                await editor.command("lspilot.ask", {"sessionId": session, "prompt": "two"})
        assert (await editor.command("lspilot.ask", {"sessionId": session, "prompt": "three"}))[
            "stopReason"
        ] == "end"
    finally:
        store.close()
    history = await editor.command("lspilot.history", {"sessionId": session})
    prompts = [m["parts"][0]["text"] for m in history["messages"] if m["role"] == "user"]
    assert prompts == ["one", "three"]


async def test_sessions_that_another_process_runs_are_listed_as_running(
    connect: Callable[..., Any], fake: ScriptedModel
) -> None:
    fake.turns.append(Turn(text="first"))
    editor: Editor = await connect("neovim", FULL)
    session = (await editor.command("lspilot.ask", {"prompt": "one"}))["sessionId"]
    store = Store(data_dir() / "lspilot.db")  # another daemon on the same database: this test
    try:
        async with store.claim(session):
            listed = await editor.command("lspilot.sessions")
            assert [(s["sessionId"], s["running"]) for s in listed] == [(session, True)]
        listed = await editor.command("lspilot.sessions")
        assert [(s["sessionId"], s["running"]) for s in listed] == [(session, False)]
    finally:
        store.close()


async def test_a_config_changed_while_serving_applies_from_the_next_ask(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    # The daemon read lspilot.toml once: a rule tightened while the editor stayed open (or another
    # model) took effect only after a restart, and a broken file went unnoticed.
    echo = Turn(tool_calls=[("bash", {"command": "echo hi", "description": "Say hi"})])
    fake.turns.extend([Turn(text="first"), echo, Turn(text="denied")])
    editor: Editor = await connect("neovim", FULL)
    await editor.command("lspilot.ask", {"prompt": "one"})
    (workspace / "lspilot.toml").write_text('[permission]\nbash = "deny"\n')
    assert (await editor.command("lspilot.ask", {"prompt": "say hi"}))["stopReason"] == "end"
    assert editor.permission_asks == []  # denied by the new rule, without asking
    assert "bash" not in {tool["function"]["name"] for tool in fake.requests[1]["tools"]}
    assert tool_results(fake) == ["Error: the bash tool is not available to the build agent."]
    (workspace / "lspilot.toml").write_text("modle = 1\n")
    with pytest.raises(JsonRpcInvalidParams, match=r"lspilot.toml: unknown settings \['modle'\]"):
        await editor.command("lspilot.ask", {"prompt": "three"})
