"""The Neovim plugin's review of changes to whole files in a real headless Neovim against
the real daemon: deletions, moves, and empty files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from daemon.scripted_model import ScriptedModel, Turn
from tests.editors.nvim_editor import (
    EXTMARKS,
    TWO_FUNCTIONS,
    Editor,
    read_then,
    tool_results,
)


def accept_patch_taking_a_away(editor: Editor, fake: ScriptedModel, workspace: Path, patch: str) -> None:
    """The model reads a.py and applies ``patch`` (which deletes or moves it); the user accepts
    it all; a.py is gone from the disk and from Neovim's buffers."""
    read_then(fake, "a.py", ("apply_patch", {"patchText": patch}))
    editor.ask("change a.py")
    editor.pending(1)
    editor.lua("vim.cmd('Lspilot accept-all')")
    assert editor.finished() == "end"
    assert not (workspace / "a.py").exists()
    assert editor.lua("return vim.fn.bufloaded(vim.fn.fnamemodify('a.py', ':p'))") == 0


def test_an_accepted_deletion_deletes_the_file_and_its_buffer(
    editor: Editor, fake: ScriptedModel, workspace: Path
) -> None:
    # Neovim deletes it (workspace/applyEdit with a DeleteFile): no buffer left to save it back.
    patch = "*** Begin Patch\n*** Delete File: a.py\n*** End Patch"
    accept_patch_taking_a_away(editor, fake, workspace, patch)
    told = tool_results(fake)[-1]  # and basedpyright says what the deletion broke
    assert told.startswith("Applied the patch:\n  D a.py\nNew problems in b.py"), told
    assert 'Import "a" could not be resolved' in told


def test_an_accepted_move_renames_the_file_and_its_buffer(
    editor: Editor, fake: ScriptedModel, workspace: Path
) -> None:
    patch = (
        "*** Begin Patch\n*** Update File: a.py\n*** Move to: shapes.py\n@@\n"
        "-    return 'circle'\n+    return 'disc'\n*** End Patch"
    )
    read_then(fake, "a.py", ("apply_patch", {"patchText": patch}))
    editor.ask("change a.py")
    editor.pending(1)  # the review shows the move, not only the line (accepting it all moves the file)
    notes = [m["virt"][0] for m in cast(list[dict[str, Any]], editor.lua(EXTMARKS, "a.py")) if m["virt"]]
    assert notes == ["lspilot moves this file to shapes.py"]
    editor.lua("vim.cmd('Lspilot accept-all')")
    assert editor.finished() == "end"
    assert not (workspace / "a.py").exists()
    assert editor.buffer("shapes.py") == TWO_FUNCTIONS.replace("circle", "disc").splitlines()
    assert tool_results(fake)[-1].startswith("Applied the patch:\n  R a.py -> shapes.py")


def test_a_move_without_line_changes_waits_for_the_user(
    editor: Editor, fake: ScriptedModel, workspace: Path
) -> None:
    move = {"patchText": "*** Begin Patch\n*** Update File: b.py\n*** Move to: c.py\n*** End Patch"}
    read_then(fake, "b.py", ("apply_patch", move), "kept b.py")
    editor.ask("rename b.py")
    editor.pending(1)  # not accepted on the user's behalf because no line differs
    [mark] = cast(list[dict[str, Any]], editor.lua(EXTMARKS, "b.py"))
    assert mark["virt"][0] == "lspilot moves this file to c.py"
    editor.lua("vim.cmd('Lspilot reject-all not now')")
    assert editor.finished() == "end"
    assert (workspace / "b.py").exists() and not (workspace / "c.py").exists()
    assert "not now" in tool_results(fake)[-1]


def test_deleting_an_empty_file_says_so_and_waits_for_the_user(
    editor: Editor, fake: ScriptedModel, workspace: Path
) -> None:
    (workspace / "empty.py").write_text("")
    delete = {"patchText": "*** Begin Patch\n*** Delete File: empty.py\n*** End Patch"}
    read_then(fake, "empty.py", ("apply_patch", delete), "deleted")
    editor.ask("remove empty.py")
    editor.pending(1)
    [mark] = cast(list[dict[str, Any]], editor.lua(EXTMARKS, "empty.py"))
    assert mark["virt"][0] == "lspilot deletes this empty file"
    editor.lua("vim.cmd('Lspilot accept-all')")
    assert editor.finished() == "end"
    assert not (workspace / "empty.py").exists(), tool_results(fake)


def test_an_empty_file_not_open_gets_the_accepted_text(
    editor: Editor, fake: ScriptedModel, workspace: Path
) -> None:
    # Neovim sends an empty buffer as "\n" (one empty line, 'eol'): that is the file's "" on disk.
    (workspace / "empty.py").write_text("")
    read_then(fake, "empty.py", ("write", {"filePath": "empty.py", "content": "X = 1\n"}))
    editor.ask("fill empty.py")
    editor.pending(1)
    editor.lua("vim.cmd('Lspilot accept-all')")
    assert editor.finished() == "end"
    assert tool_results(fake)[-1] == "Replaced empty.py (1 line).", tool_results(fake)
    assert editor.buffer("empty.py") == ["X = 1"]


def test_an_accepted_new_file_is_written_so_the_next_command_sees_it(
    editor: Editor, fake: ScriptedModel, workspace: Path
) -> None:
    # It stayed in the buffer the review opened, unsaved: the agent's tests then ran without it.
    # A new file has no text of the user's to keep unsaved (VS Code writes it too).
    fake.turns.extend(
        [
            Turn(tool_calls=[("write", {"filePath": "pkg/new.py", "content": "X = 1\n"})]),
            Turn(tool_calls=[("bash", {"command": "cat pkg/new.py", "description": "show"})]),
            Turn(text="created"),
        ]
    )
    editor.lua("vim.ui.select = function(items, _, on_choice) on_choice(items[1]) end")  # allow once
    editor.ask("make pkg/new.py")
    editor.pending(1)
    editor.lua("vim.cmd('Lspilot accept-all')")
    assert editor.finished() == "end"
    assert (workspace / "pkg" / "new.py").read_text() == "X = 1\n"
    assert tool_results(fake)[-1] == "X = 1\n\n(exit code 0)", tool_results(fake)  # no "not saved" note
    assert editor.buffer("pkg/new.py") == ["X = 1"]
    assert editor.lua("return vim.bo[vim.fn.bufnr('pkg/new.py')].modified") is False
    editor.lua("vim.api.nvim_buf_call(vim.fn.bufnr('pkg/new.py'), function() vim.cmd('checktime') end)")
    assert "W13" not in editor.messages()  # Neovim does not warn that it appeared behind its back


def test_a_rejected_new_file_takes_its_empty_buffer_away_and_an_empty_new_buffer_is_no_file(
    editor: Editor, fake: ScriptedModel, workspace: Path
) -> None:
    # The review opened new.py in a split to show the proposal; rejected, the split stayed on an
    # empty buffer, and Neovim sends an empty buffer as "\n": the agent read a file of one line.
    fake.turns.extend(
        [
            Turn(tool_calls=[("write", {"filePath": "new.py", "content": "X = 1\n"})]),
            Turn(text="not created"),
            Turn(tool_calls=[("read", {"filePath": "new.py"})]),
            Turn(text="still not there"),
        ]
    )
    editor.ask("make new.py")
    editor.pending(1)
    assert editor.lua("return vim.fn.winnr('$')") == 3  # a.py, new.py, the chat
    editor.lua("vim.cmd('Lspilot reject-all')")
    assert editor.finished() == "end"
    assert editor.lua("return vim.fn.bufexists(vim.fn.fnamemodify('new.py', ':p'))") == 0
    assert editor.lua("return vim.fn.winnr('$')") == 2
    # The user opens new.py themselves (empty, not written): it is still no file to the agent.
    editor.lua("vim.cmd('split new.py')")
    editor.until("#vim.lsp.get_clients({name = 'lspilot', bufnr = vim.fn.bufnr('new.py')}) == 1")
    editor.ask("read new.py")
    assert editor.finished() == "end"
    assert tool_results(fake)[-1].startswith("Error: File not found: new.py"), tool_results(fake)
    assert not (workspace / "new.py").exists()
