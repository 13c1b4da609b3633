"""`lspilot serve` in a workspace its user does not trust yet: it asks the editor
(window/showMessageRequest, Trust / Not now), and only Trust makes the project's tools count."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types

from daemon import trust
from daemon.scripted_model import ScriptedModel, Turn

from .serving import FULL, Editor, connect, tool_results, workspace

__all__ = ["connect", "workspace"]

HELLO = """\
from pydantic import BaseModel, ConfigDict
from tools import ToolResult, define_tool

class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")

@define_tool("Says hello.", Params)
async def tool(params, ctx):
    return ToolResult("hello", "hello from the project")
"""


def untrusted_with_a_tool(workspace: Path, fake: ScriptedModel) -> None:
    trust.revoke(workspace)  # the fixture's: this one was cloned just now
    (workspace / ".lspilot" / "tools").mkdir(parents=True)
    (workspace / ".lspilot" / "tools" / "hello.py").write_text(HELLO)
    fake.turns.extend([Turn(tool_calls=[("hello", {})]), Turn(text="done")])


async def logged(editor: Editor, text: str) -> None:
    """Wait until the daemon has logged ``text`` to the editor (window/logMessage)."""
    async with asyncio.timeout(60):
        while not any(text in m.message for m in editor.client.log_messages):
            await editor.client.wait_for_notification(types.WINDOW_LOG_MESSAGE)


async def test_trust_in_the_editor_records_it_and_loads_the_project_tools(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    untrusted_with_a_tool(workspace, fake)
    editor: Editor = await connect("neovim", FULL, message_answers=("Trust",))
    await logged(editor, f"lspilot: trusted {workspace}: its .lspilot/tools apply")
    [asked] = editor.message_requests
    assert asked.type == types.MessageType.Warning
    assert asked.message.startswith(
        f"lspilot: {workspace} has its own .lspilot/tools, which can run programs"
    )
    assert [action.title for action in asked.actions or []] == ["Trust", "Not now"]
    assert trust.is_trusted(workspace)
    await editor.command("lspilot.ask", {"prompt": "say hello"})
    assert tool_results(fake) == ["hello from the project"]


async def test_not_now_leaves_the_workspace_untrusted_and_its_tools_unloaded(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    untrusted_with_a_tool(workspace, fake)
    editor: Editor = await connect("neovim", FULL, message_answers=("Not now",))
    await editor.until(lambda: bool(editor.message_requests))
    await editor.command("lspilot.ask", {"prompt": "say hello"})
    [result] = tool_results(fake)
    assert "hello" in result and "hello from the project" not in result
    await logged(editor, f"{workspace} is not a trusted workspace: ignored .lspilot/tools.")
    assert not trust.is_trusted(workspace)
    # `lspilot trust` while the editor stays open: the next ask has the project's tools.
    trust.grant(workspace)
    fake.turns.extend([Turn(tool_calls=[("hello", {})]), Turn(text="done")])
    await editor.command("lspilot.ask", {"prompt": "say hello again"})
    assert tool_results(fake) == ["hello from the project"]


async def test_a_trusted_workspace_is_not_asked_about(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    untrusted_with_a_tool(workspace, fake)
    trust.grant(workspace)
    editor: Editor = await connect("neovim", FULL)
    await editor.command("lspilot.ask", {"prompt": "say hello"})
    assert tool_results(fake) == ["hello from the project"] and editor.message_requests == []
