"""`lspilot serve`: a command the agent runs sees the disk, not the editor's unsaved text (the
agent's accepted changes included, which the user saves), and the model is told which files
differ."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from daemon.scripted_model import ScriptedModel, Turn

from .serving import FULL, Editor, connect, tool_results, workspace

__all__ = ["connect", "workspace"]  # the fixtures

NOTE = "Not saved in the editor, so the command saw them as they are on disk"


def run_cat(fake: ScriptedModel) -> None:
    call = {"command": "cat a.py", "description": "Show a.py"}
    fake.turns.extend([Turn(tool_calls=[("bash", call)]), Turn(text="done")])


async def test_a_command_is_told_which_files_are_not_saved(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    source, other = workspace / "a.py", workspace / "b.py"
    source.write_text("x = 1\n")
    other.write_text("y = 2\n")
    run_cat(fake)
    editor: Editor = await connect("neovim", FULL)
    editor.open(source)
    editor.open(other)  # open, and the same as on disk: not named
    editor.change(source.as_uri(), "x = 2\n")  # typed, not saved
    editor.permission_answers.append({"optionId": "allow_once"})
    assert (await editor.command("lspilot.ask", {"prompt": "show a.py"}))["stopReason"] == "end"
    [told] = tool_results(fake)
    assert told.startswith("x = 1\n")  # the disk
    assert f"({NOTE}: a.py. Ask the user to save them" in told and "b.py" not in told


async def test_no_note_when_the_editor_holds_what_the_disk_does(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    source = workspace / "a.py"
    source.write_text("x = 1\n")
    run_cat(fake)
    editor: Editor = await connect("visual-studio-code", FULL)
    editor.open(source)
    editor.permission_answers.append({"optionId": "allow_once"})
    assert (await editor.command("lspilot.ask", {"prompt": "show a.py"}))["stopReason"] == "end"
    [told] = tool_results(fake)
    assert told.startswith("x = 1\n") and NOTE not in told
