"""`lspilot serve` takes a changed `[lsp]` configuration (trust granted or revoked, an edited
lspilot.toml) without a restart: the servers whose definition changed start again with it at
their next use, with the editor's unsaved buffers; the others keep running. A turn running
meanwhile keeps the servers it started with."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from daemon import trust
from daemon.scripted_model import ScriptedModel, Turn
from tests.lsp_bridge.test_protocol import SCRIPTED

from .serving import FULL, Editor, connect, tool_results, workspace

__all__ = ["connect", "workspace"]


def declare_servers(workspace: Path, greeting: str) -> None:
    """Two scripted servers in the project's lspilot.toml: ``scripted`` for .scr files, with
    ``greeting`` in its settings, and ``steady`` for .std files."""
    command = json.dumps([sys.executable, str(SCRIPTED)])
    (workspace / "lspilot.toml").write_text(
        f'[lsp.servers.scripted]\ncommand = {command}\nextensions = [".scr"]\n'
        f'settings = {{ scripted = {{ greeting = "{greeting}" }} }}\n\n'
        f'[lsp.servers.steady]\ncommand = {command}\nextensions = [".std"]\n'
        'settings = { scripted = { greeting = "steady" } }\n'
    )
    (workspace / "a.scr").write_text("on disk\n")
    (workspace / "b.std").write_text("on disk\n")


async def hover(editor: Editor, path: Path) -> str:
    """The scripted server's hover at the top of ``path``, through the editor's lspilot.navigate."""
    position = {"line": 0, "character": 0}
    answer = await editor.command(
        "lspilot.navigate", {"operation": "hover", "uri": path.as_uri(), "position": position}
    )
    return answer["text"]


def pid(hovered: str) -> int:
    found = re.search(r"pid (\d+)", hovered)
    assert found, hovered
    return int(found[1])


def running(process_id: int) -> bool:
    try:
        os.kill(process_id, 0)
    except ProcessLookupError:
        return False
    return True


async def test_lsp_settings_apply_as_trust_and_lspilot_toml_change_while_serving(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    trust.revoke(workspace)
    declare_servers(workspace, "first")
    editor: Editor = await connect("neovim", FULL, message_answers=("Not now",))
    await editor.until(lambda: bool(editor.message_requests))
    editor.open(workspace / "a.scr", "unsaved\n")
    with pytest.raises(JsonRpcInvalidParams, match=r"no language server is configured for a\.scr"):
        await hover(editor, workspace / "a.scr")

    trust.grant(workspace)  # `lspilot trust` while the editor stays open
    first = await hover(editor, workspace / "a.scr")
    assert 'settings {"greeting": "first"}' in first and "text 'unsaved\\n'" in first, first
    steady = await hover(editor, workspace / "b.std")
    assert 'settings {"greeting": "steady"}' in steady, steady

    declare_servers(workspace, "second")  # only the scripted server's settings change
    second = await hover(editor, workspace / "a.scr")
    assert 'settings {"greeting": "second"}' in second and "text 'unsaved\\n'" in second, second
    assert pid(second) != pid(first) and not running(pid(first))
    assert await hover(editor, workspace / "b.std") == steady  # the same process, still running

    trust.revoke(workspace)
    with pytest.raises(JsonRpcInvalidParams, match=r"no language server is configured for b\.std"):
        await hover(editor, workspace / "b.std")
    assert not running(pid(steady)) and not running(pid(second))


async def test_a_turn_keeps_its_servers_while_the_lsp_settings_change(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    declare_servers(workspace, "first")
    editor: Editor = await connect("neovim", FULL)
    ask_hover = Turn(
        tool_calls=[("lsp", {"operation": "hover", "filePath": "a.scr", "line": 1, "character": 1})]
    )

    def edit_the_settings_then_hover(_request: Any) -> Turn:
        declare_servers(workspace, "second")  # the user edits lspilot.toml during the turn
        return ask_hover

    fake.turns.extend([ask_hover, edit_the_settings_then_hover, Turn(text="done")])
    await editor.command("lspilot.ask", {"prompt": "hover twice"})
    before, during = tool_results(fake)
    assert 'settings {"greeting": "first"}' in during and pid(during) == pid(before), during
    after = await hover(editor, workspace / "a.scr")  # the turn has ended: the new settings apply
    assert 'settings {"greeting": "second"}' in after and not running(pid(before)), after
