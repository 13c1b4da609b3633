"""`lspilot serve`: the agent's edits reviewed in the editor and applied to its buffers (unsaved
text, typing meanwhile, stale versions, files opened during a review), and deletions and moves."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types

from daemon.scripted_model import ScriptedModel, Turn

from .serving import FULL, Editor, connect, delete_b_and_move_c_to_d, read_then_edit, tool_results, workspace

__all__ = ["connect", "workspace"]  # the fixtures, shared with the other test_serve_* files


TWO_FUNCTIONS = (
    "def area(r: float) -> float:\n    return 3.14 * r * r\n\n\ndef name() -> str:\n    return 'circle'\n"
)


async def test_accepting_one_hunk_of_two_applies_only_it_to_the_open_buffer(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    source = workspace / "a.py"
    source.write_text(TWO_FUNCTIONS)
    proposal = TWO_FUNCTIONS.replace("3.14 * r * r", "undefined_pi * r * r").replace("'circle'", "'disc'")
    fake.turns.extend(
        [
            Turn(tool_calls=[("read", {"filePath": "a.py"})]),
            Turn(tool_calls=[("write", {"filePath": "a.py", "content": proposal})]),
            Turn(text="done"),
        ]
    )
    editor: Editor = await connect("visual-studio-code", FULL)
    editor.open(source)
    editor.review_answers.append({"decision": "partial", "acceptedHunkIds": ["h1"]})
    result = await editor.command("lspilot.ask", {"prompt": "rename things"})
    assert result["stopReason"] == "end"

    [review] = editor.reviews
    assert review["uri"] == source.as_uri() and review["baseVersion"] == 1 and not review["isNewFile"]
    assert review["oldText"] == TWO_FUNCTIONS and review["newText"] == proposal
    assert [h["id"] for h in review["hunks"]] == ["h1", "h2"]
    assert "undefined_pi" in review["hunks"][0]["newText"] and "disc" in review["hunks"][1]["newText"]
    # Only the accepted hunk reached the buffer, through applyEdit; the disk is untouched (unsaved).
    [applied] = editor.applied
    assert [e.new_text for e in applied["edits"]] == [review["hunks"][0]["newText"]]
    buffer = editor.buffers[source.as_uri()][0]
    assert "undefined_pi" in buffer and "'circle'" in buffer
    assert source.read_text() == TWO_FUNCTIONS
    # The model was told what happened, and what the change broke.
    told = tool_results(fake)[-1]
    assert "h1" in told and "rejected h2" in told
    assert "undefined_pi" in told and "ERROR" in told


async def test_a_review_answer_that_does_not_follow_the_protocol_changes_nothing(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    # acceptedHunkIds as one string was read one id per character: none accepted, and the model
    # told of hunks "h" and "1".
    source = workspace / "a.py"
    source.write_text(TWO_FUNCTIONS)
    proposal = TWO_FUNCTIONS.replace("'circle'", "'disc'")
    fake.turns.extend(
        [
            Turn(tool_calls=[("read", {"filePath": "a.py"})]),
            Turn(tool_calls=[("write", {"filePath": "a.py", "content": proposal})]),
            Turn(text="done"),
        ]
    )
    editor: Editor = await connect("visual-studio-code", FULL)
    editor.open(source)
    editor.review_answers.append({"decision": "partial", "acceptedHunkIds": "h1"})
    result = await editor.command("lspilot.ask", {"prompt": "rename"})
    assert result["stopReason"] == "end"
    assert not editor.applied and source.read_text() == TWO_FUNCTIONS
    assert tool_results(fake)[-1] == "Nothing was changed.\n" + (
        "a.py is unchanged: The editor's answer to the review of a.py could not be read (acceptedHunkIds "
        "'h1' is no list of hunk ids), so nothing of the change was made."
    )


async def test_the_agent_reads_and_edits_the_unsaved_buffer_not_the_disk(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    source = workspace / "a.py"
    source.write_text(TWO_FUNCTIONS)
    read_then_edit(fake, "'circle'", "'disc'")
    editor: Editor = await connect("neovim", FULL)
    editor.open(source)
    editor.change(source.as_uri(), "# unsaved note\n" + TWO_FUNCTIONS)  # typed, not saved
    editor.review_answers.append({"decision": "accept"})
    assert (await editor.command("lspilot.ask", {"prompt": "rename"}))["stopReason"] == "end"

    read, edited = tool_results(fake)
    assert "     1\t# unsaved note" in read and "the disk differs" in read
    [review] = editor.reviews
    assert review["oldText"] == "# unsaved note\n" + TWO_FUNCTIONS and review["baseVersion"] == 2
    # The user's unsaved line survives; only the proposed line changed; the disk is untouched.
    assert editor.buffers[source.as_uri()][0] == "# unsaved note\n" + TWO_FUNCTIONS.replace("circle", "disc")
    assert source.read_text() == TWO_FUNCTIONS
    assert "line 7" in edited


async def test_typing_after_the_agent_read_the_buffer_makes_it_read_again(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    source = workspace / "a.py"
    editor: Editor = await connect("neovim", FULL)
    editor.open(source)

    test_loop = asyncio.get_running_loop()

    async def type_in_the_editor() -> None:
        editor.change(source.as_uri(), "# typed\n" + source.read_text())
        await editor.command("lspilot.sessions")  # answered in order: the change has arrived

    def typed(_body: Any) -> Turn:  # the user types while the model thinks (on the server's thread)
        asyncio.run_coroutine_threadsafe(type_in_the_editor(), test_loop).result(timeout=60)
        return Turn(tool_calls=[("edit", {"filePath": "a.py", "oldString": "3.14", "newString": "3.1416"})])

    fake.turns.extend([Turn(tool_calls=[("read", {"filePath": "a.py"})]), typed, Turn(text="ok")])
    assert (await editor.command("lspilot.ask", {"prompt": "more digits"}))["stopReason"] == "end"
    assert editor.reviews == [] and editor.applied == []
    assert "a.py has changed in the editor since you last read it" in tool_results(fake)[-1]


async def test_typing_on_the_changed_line_during_the_review_applies_nothing_and_names_it(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    source = workspace / "a.py"
    read_then_edit(fake, "3.14", "3.14159")
    editor: Editor = await connect("neovim", FULL)
    editor.open(source)

    mine = source.read_text().replace("r * r", "r ** 2")
    editor.while_reviewing = lambda: editor.change(source.as_uri(), mine)
    editor.review_answers.append({"decision": "accept"})
    result = await editor.command("lspilot.ask", {"prompt": "more digits"})
    assert result["stopReason"] == "end"
    assert editor.applied == [] and editor.buffers[source.as_uri()][0] == mine
    assert "the user edited line 2, on the change of line 2" in tool_results(fake)[-1]


async def test_a_file_opened_during_its_review_gets_the_change_in_its_buffer(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    source = workspace / "a.py"
    read_then_edit(fake, "3.14", "3.14159")
    editor: Editor = await connect("neovim", FULL)
    editor.while_reviewing = lambda: editor.open(source)  # e.g. shown in a split to review it
    editor.review_answers.append({"decision": "accept"})
    assert (await editor.command("lspilot.ask", {"prompt": "more digits"}))["stopReason"] == "end"
    assert editor.reviews[0]["baseVersion"] is None
    assert len(editor.applied) == 1  # through applyEdit, so the user can undo it
    assert "3.14159" in editor.buffers[source.as_uri()][0] and "3.14159" not in source.read_text()


async def test_two_edits_in_a_row_to_an_open_buffer_whose_editor_debounces_didchange(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    source = workspace / "a.py"
    source.write_text(TWO_FUNCTIONS)
    fake.turns.extend(
        [
            Turn(tool_calls=[("read", {"filePath": "a.py"})]),
            Turn(tool_calls=[("edit", {"filePath": "a.py", "oldString": "3.14", "newString": "3.1416"})]),
            Turn(tool_calls=[("edit", {"filePath": "a.py", "oldString": "'circle'", "newString": "'disc'"})]),
            Turn(text="done"),
        ]
    )
    editor: Editor = await connect("neovim", FULL)
    editor.debounce = 0.15
    editor.open(source)
    editor.review_answers.extend([{"decision": "accept"}, {"decision": "accept"}])
    assert (await editor.command("lspilot.ask", {"prompt": "two changes"}))["stopReason"] == "end"
    first, second = tool_results(fake)[1:]
    assert first.startswith("Edited a.py") and second.startswith("Edited a.py"), second
    assert [r["baseVersion"] for r in editor.reviews] == [1, 2]  # the second review saw the first
    final = TWO_FUNCTIONS.replace("3.14", "3.1416").replace("circle", "disc")
    assert editor.buffers[source.as_uri()] == (final, 3)


async def test_a_new_file_opened_during_its_review_gets_its_text_in_the_buffer(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    new = workspace / "c.py"
    fake.turns.extend(
        [
            Turn(tool_calls=[("write", {"filePath": "c.py", "content": "RADIUS = 2.0\n"})]),
            Turn(tool_calls=[("edit", {"filePath": "c.py", "oldString": "2.0", "newString": "3.0"})]),
            Turn(text="done"),
        ]
    )
    editor: Editor = await connect("neovim", FULL)
    editor.while_reviewing = lambda: None if new.as_uri() in editor.buffers else editor.open(new)
    editor.review_answers.extend([{"decision": "accept"}, {"decision": "accept"}])
    assert (await editor.command("lspilot.ask", {"prompt": "a constant"}))["stopReason"] == "end"
    assert editor.reviews[0]["isNewFile"] and editor.reviews[0]["baseVersion"] is None
    assert editor.buffers[new.as_uri()][0] == "RADIUS = 3.0\n"
    assert not new.exists()  # unsaved, like every change to an open buffer
    assert editor.client.log_messages == []  # no error on the way


async def test_a_rejected_review_writes_nothing_and_the_model_reads_the_feedback(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    source = workspace / "a.py"
    before = source.read_text()
    read_then_edit(fake, "3.14", "22 / 7")
    editor: Editor = await connect("neovim", FULL)
    editor.review_answers.append({"decision": "reject", "feedback": "use math.pi instead"})
    result = await editor.command("lspilot.ask", {"prompt": "approximate pi"})
    assert result["stopReason"] == "end"
    assert len(editor.reviews) == 1 and editor.applied == [] and source.read_text() == before
    assert "use math.pi instead" in tool_results(fake)[-1]


async def test_without_lspilot_options_reviews_are_applyedits_needing_confirmation(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    source = workspace / "a.py"
    read_then_edit(fake, "3.14", "3.14159")
    editor: Editor = await connect("neovim")
    editor.open(source)
    confirmations: list[types.ApplyWorkspaceEditParams] = []
    original = editor.client.protocol.fm.features[types.WORKSPACE_APPLY_EDIT]

    def confirm(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        confirmations.append(params)
        return original(params)

    editor.client.protocol.fm.features[types.WORKSPACE_APPLY_EDIT] = confirm
    result = await editor.command("lspilot.ask", {"prompt": "more digits"})
    assert result["stopReason"] == "end" and editor.reviews == []
    [params] = confirmations
    annotations = params.edit.change_annotations or {}
    assert [a.needs_confirmation for a in annotations.values()] == [True]
    assert "3.14159" in editor.buffers[source.as_uri()][0]
    told = tool_results(fake)[-1]
    assert told.startswith("Edited a.py") and "rejected" not in told, told  # applied once, by the editor


async def test_an_accepted_deletion_deletes_the_file_and_a_move_moves_it(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    delete_b_and_move_c_to_d(fake, workspace)
    editor: Editor = await connect("neovim", FULL)
    editor.review_answers.extend([{"decision": "accept"}, {"decision": "accept"}])
    assert (await editor.command("lspilot.ask", {"prompt": "tidy up"}))["stopReason"] == "end"
    assert tool_results(fake)[-1] == "Applied the patch:\n  D b.py\n  R c.py -> d.py"
    flags = [(r["isNewFile"], r["isDeletion"], r["newUri"] is not None) for r in editor.reviews]
    assert flags == [(False, True, False), (False, False, True)]
    assert not (workspace / "b.py").exists()  # deleted, not emptied
    assert not (workspace / "c.py").exists() and (workspace / "d.py").read_text() == "C = 2\n"


async def test_a_file_open_in_the_editor_is_deleted_by_the_editor(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    # Deleted on disk only, its buffer would stay open and a save would bring the file back.
    b = workspace / "b.py"
    b.write_text("B = 1\n")
    patch = "*** Begin Patch\n*** Delete File: b.py\n*** End Patch"
    fake.turns.extend(
        [
            Turn(tool_calls=[("read", {"filePath": "b.py"})]),
            Turn(tool_calls=[("apply_patch", {"patchText": patch})]),
            Turn(text="done"),
        ]
    )
    editor: Editor = await connect("neovim", FULL)
    editor.open(b)
    editor.review_answers.append({"decision": "accept"})
    assert (await editor.command("lspilot.ask", {"prompt": "remove it"}))["stopReason"] == "end"
    assert editor.applied == [{"uri": b.as_uri(), "deleted": True}]
    assert not b.exists() and b.as_uri() not in editor.buffers
    assert tool_results(fake)[-1] == "Applied the patch:\n  D b.py"


async def test_a_file_open_in_the_editor_is_moved_by_the_editor_with_the_change_in_its_buffer(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    c, d = workspace / "c.py", workspace / "d.py"
    c.write_text("C = 1\n")
    patch = "*** Begin Patch\n*** Update File: c.py\n*** Move to: d.py\n@@\n-C = 1\n+C = 2\n*** End Patch"
    fake.turns.extend(
        [
            Turn(tool_calls=[("read", {"filePath": "c.py"})]),
            Turn(tool_calls=[("apply_patch", {"patchText": patch})]),
            Turn(tool_calls=[("edit", {"filePath": "d.py", "oldString": "C = 2", "newString": "C = 3"})]),
            Turn(text="done"),
        ]
    )
    editor: Editor = await connect("neovim", FULL)
    editor.open(c)
    editor.review_answers.extend([{"decision": "accept"}, {"decision": "accept"}])
    assert (await editor.command("lspilot.ask", {"prompt": "rename it"}))["stopReason"] == "end"
    assert editor.applied[0] == {"uri": c.as_uri(), "renamed": d.as_uri()}
    assert not c.exists() and c.as_uri() not in editor.buffers
    assert editor.buffers[d.as_uri()][0] == "C = 3\n"  # the move's change, then the next edit, unsaved
    assert d.read_text() == "C = 1\n"
    moved, edited = tool_results(fake)[-2:]
    assert moved == "Applied the patch:\n  R c.py -> d.py" and edited.startswith("Edited d.py"), edited


async def test_without_lspilot_options_deletions_and_moves_are_file_operations_needing_confirmation(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    b, c, d = workspace / "b.py", workspace / "c.py", workspace / "d.py"
    delete_b_and_move_c_to_d(fake, workspace)
    editor: Editor = await connect("neovim")
    assert (await editor.command("lspilot.ask", {"prompt": "tidy up"}))["stopReason"] == "end"
    assert editor.reviews == []
    assert editor.applied[:2] == [
        {"uri": b.as_uri(), "deleted": True},
        {"uri": c.as_uri(), "renamed": d.as_uri()},
    ]
    assert not b.exists() and not c.exists() and d.read_text() == "C = 1\n"
    assert editor.buffers[d.as_uri()][0] == "C = 2\n"  # the change, in the (unsaved) buffer
    assert tool_results(fake)[-1] == "Applied the patch:\n  D b.py\n  R c.py -> d.py"


async def test_a_project_opened_through_a_symlink_is_edited_in_the_documents_the_editor_has_open(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    """The tools know files by their real paths; the editor by the names it opened them by."""
    link = tmp_path / "link"
    link.symlink_to(workspace)
    source = link / "a.py"
    source.write_text(TWO_FUNCTIONS)
    read_then_edit(fake, "'circle'", "'disc'")
    editor: Editor = await connect("visual-studio-code", FULL, root=link)
    editor.open(source)
    editor.change(source.as_uri(), "# unsaved note\n" + TWO_FUNCTIONS)  # typed, not saved
    editor.review_answers.append({"decision": "accept"})
    assert (await editor.command("lspilot.ask", {"prompt": "rename"}))["stopReason"] == "end"

    read, _edited = tool_results(fake)
    assert "     1\t# unsaved note" in read, read
    [review] = editor.reviews
    assert review["uri"] == source.as_uri() and review["baseVersion"] == 2
    assert [a["uri"] for a in editor.applied] == [source.as_uri()]  # no second document behind it
    assert editor.buffers[source.as_uri()][0] == "# unsaved note\n" + TWO_FUNCTIONS.replace("circle", "disc")
    assert source.read_text() == TWO_FUNCTIONS


async def test_a_file_of_a_project_opened_through_a_symlink_is_moved_under_the_editors_names(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path, tmp_path: Path
) -> None:
    link = tmp_path / "link"
    link.symlink_to(workspace)
    c, d = link / "c.py", link / "d.py"
    c.write_text("C = 1\n")
    patch = "*** Begin Patch\n*** Update File: c.py\n*** Move to: d.py\n@@\n-C = 1\n+C = 2\n*** End Patch"
    fake.turns.extend(
        [
            Turn(tool_calls=[("read", {"filePath": "c.py"})]),
            Turn(tool_calls=[("apply_patch", {"patchText": patch})]),
            Turn(text="done"),
        ]
    )
    editor: Editor = await connect("neovim", FULL, root=link)
    editor.open(c)
    editor.review_answers.append({"decision": "accept"})
    assert (await editor.command("lspilot.ask", {"prompt": "rename it"}))["stopReason"] == "end"
    [review] = editor.reviews
    assert (review["uri"], review["newUri"]) == (c.as_uri(), d.as_uri())
    assert editor.applied[0] == {"uri": c.as_uri(), "renamed": d.as_uri()}
    assert editor.buffers[d.as_uri()][0] == "C = 2\n" and d.read_text() == "C = 1\n"


async def test_a_symlink_open_in_the_editor_is_deleted_by_the_editor(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    """The deletion names the link; the buffer is known by the file's real path. Deleted on
    disk behind it, the buffer would bring the file back when saved."""
    (workspace / "real.py").write_text("X = 1\n")
    alias = workspace / "alias.py"
    alias.symlink_to("real.py")
    patch = "*** Begin Patch\n*** Delete File: alias.py\n*** End Patch"
    fake.turns.extend(
        [
            Turn(tool_calls=[("read", {"filePath": "alias.py"})]),
            Turn(tool_calls=[("apply_patch", {"patchText": patch})]),
            Turn(text="done"),
        ]
    )
    editor: Editor = await connect("neovim", FULL)
    editor.open(alias)
    editor.review_answers.append({"decision": "accept"})
    assert (await editor.command("lspilot.ask", {"prompt": "rm"}))["stopReason"] == "end"
    assert editor.applied == [{"uri": alias.as_uri(), "deleted": True}]
    assert not alias.is_symlink() and alias.as_uri() not in editor.buffers
    assert (workspace / "real.py").read_text() == "X = 1\n"


async def test_a_file_open_under_two_names_keeps_its_buffer_until_both_are_closed(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    source = workspace / "a.py"
    source.write_text(TWO_FUNCTIONS)
    alias = workspace / "alias.py"
    alias.symlink_to("a.py")
    read_then_edit(fake, "'circle'", "'disc'")
    editor: Editor = await connect("visual-studio-code", FULL)
    editor.open(alias)
    editor.open(source)
    editor.change(source.as_uri(), "# unsaved note\n" + TWO_FUNCTIONS)  # typed, not saved
    editor.close(alias.as_uri())
    editor.review_answers.append({"decision": "accept"})
    assert (await editor.command("lspilot.ask", {"prompt": "rename"}))["stopReason"] == "end"
    assert [a["uri"] for a in editor.applied] == [source.as_uri()]
    assert editor.buffers[source.as_uri()][0] == "# unsaved note\n" + TWO_FUNCTIONS.replace("circle", "disc")
    assert source.read_text() == TWO_FUNCTIONS
