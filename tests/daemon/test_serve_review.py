"""Reviews under `lspilot serve` when things go sideways: subagents, cancels, refusals, stale
buffers, several files, denied sources, clients without file operations, odd input."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from daemon.scripted_model import ScriptedModel, Turn

from .serving import (
    FULL,
    Editor,
    connect,
    delete_b_and_move_c_to_d,
    read_then_edit,
    tool_results,
    workspace,
)

__all__ = ["connect", "workspace"]  # the fixtures, shared with test_serve

PI = ("3.14", "3.14159")


def subagent_edits(fake: ScriptedModel) -> None:
    """The model hands the edit to the general subagent, which reads a.py and edits it."""
    task = {"description": "tweak pi", "prompt": "make pi precise in a.py", "subagent_type": "general"}
    edit = {"filePath": "a.py", "oldString": PI[0], "newString": PI[1]}
    fake.turns.extend(
        [
            Turn(tool_calls=[("task", task)]),
            Turn(tool_calls=[("read", {"filePath": "a.py"})]),
            Turn(tool_calls=[("edit", edit)]),
            Turn(text="done (subagent)"),
            Turn(text="done"),
        ]
    )


def pending_reviews(editor: Editor) -> tuple[list[Any], list[Any]]:
    """Reviews the user never answers, and the ids of the requests the daemon cancels."""
    reviews: list[Any] = []
    cancelled: list[Any] = []
    protocol = editor.client.protocol
    original = protocol._handle_cancel_notification  # pyright: ignore[reportPrivateUsage]

    def on_cancel(msg_id: Any) -> None:
        cancelled.append(msg_id)
        editor.changed.set()
        original(msg_id)

    async def review(params: Any) -> dict[str, Any]:
        reviews.append(params)
        editor.changed.set()
        await asyncio.sleep(3600)
        return {"decision": "accept"}

    protocol._handle_cancel_notification = on_cancel  # pyright: ignore[reportPrivateUsage]
    protocol.fm.features["lspilot/reviewEdit"] = review
    return reviews, cancelled


async def test_a_subagents_review_belongs_to_the_editors_turn_and_cancelling_it_drops_the_review(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    subagent_edits(fake)
    editor: Editor = await connect("neovim", FULL)
    reviews, cancelled = pending_reviews(editor)
    asking = asyncio.ensure_future(editor.command("lspilot.ask", {"prompt": "delegate"}))
    await editor.until(lambda: bool(reviews))
    session, turn = editor.updates[0]["sessionId"], editor.updates[0]["turnId"]
    [review] = reviews
    assert (review["sessionId"], review["turnId"]) == (session, turn)  # not the subagent's own session
    waiting = [u for u in editor.updates if u.get("status") == "waiting for review"]
    assert [(u["sessionId"], u["turnId"]) for u in waiting] == [(session, turn)]
    assert (await editor.command("lspilot.cancel", {"sessionId": waiting[0]["sessionId"]}))["cancelled"]
    assert (await asking)["stopReason"] == "cancelled"
    await editor.until(lambda: bool(cancelled))  # $/cancelRequest: the editor closes the stale review
    assert (workspace / "a.py").read_text() == "def area(r):\n    return 3.14 * r * r\n"


async def test_a_change_the_editor_does_not_apply_is_not_reported_as_made(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    source = workspace / "a.py"
    read_then_edit(fake, *PI)
    editor: Editor = await connect("visual-studio-code", FULL)
    editor.open(source)
    editor.review_answers.append({"decision": "accept"})

    def refuse(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        del params
        return types.ApplyWorkspaceEditResult(applied=False, failure_reason="the document is read-only")

    editor.client.protocol.fm.features[types.WORKSPACE_APPLY_EDIT] = refuse
    await editor.command("lspilot.ask", {"prompt": "digits"})
    told = tool_results(fake)[-1]
    assert "could not apply the change: the document is read-only" in told and "unchanged" in told, told
    [call] = [u for u in editor.updates if u["kind"] == "toolCall" and u["status"] == "completed"][-1:]
    assert [f["status"] for f in call["metadata"]["files"]] == ["rejected"]


async def test_typing_that_reaches_the_daemon_after_the_review_is_merged_where_the_change_is_applied(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    source, uri = workspace / "a.py", (workspace / "a.py").as_uri()
    read_then_edit(fake, *PI)
    editor: Editor = await connect("neovim", FULL)
    editor.open(source)
    # Neovim sends didChange 150 ms after the keystroke: after the review's answer, before the
    # change is applied, which is made on the buffer as it is then.
    editor.while_reviewing = lambda: editor.change(uri, "# typed\n" + source.read_text(), notify_after=0.15)
    editor.review_answers.append({"decision": "accept"})
    await editor.command("lspilot.ask", {"prompt": "digits"})
    assert editor.buffers[uri][0] == "# typed\ndef area(r):\n    return 3.14159 * r * r\n"
    told = tool_results(fake)[-1]
    assert "The user also edited a.py since the change was proposed (before line 1 of the text" in told, told


PATCH_AB = (
    "*** Begin Patch\n*** Update File: a.py\n@@\n-    return 3.14 * r * r\n+    return 3.14159 * r * r\n"
    "*** Update File: b.py\n@@\n-B = 1\n+B = 2\n*** End Patch"
)


def patch_a_and_b(fake: ScriptedModel, workspace: Path) -> None:
    (workspace / "b.py").write_text("B = 1\n")
    fake.turns.extend(
        [
            Turn(tool_calls=[("read", {"filePath": "a.py"}), ("read", {"filePath": "b.py"})]),
            Turn(tool_calls=[("apply_patch", {"patchText": PATCH_AB})]),
            Turn(text="done"),
        ]
    )


async def test_a_cancel_at_the_second_file_of_a_patch_applies_neither(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    patch_a_and_b(fake, workspace)
    editor: Editor = await connect("neovim", FULL)
    editor.review_answers.extend([{"decision": "accept"}, {"decision": "cancelled"}])
    assert (await editor.command("lspilot.ask", {"prompt": "tweak"}))["stopReason"] == "rejected"
    assert len(editor.reviews) == 2
    assert "3.14159" not in (workspace / "a.py").read_text() and (workspace / "b.py").read_text() == "B = 1\n"


async def test_a_file_that_fails_after_another_was_applied_is_reported_file_by_file(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    patch_a_and_b(fake, workspace)
    editor: Editor = await connect("neovim", FULL)

    def formatter() -> None:  # while b.py is under review, a formatter rewrites it on disk
        if len(editor.reviews) == 2:
            (workspace / "b.py").write_text("B = 10\n")

    editor.while_reviewing = formatter
    editor.review_answers.extend([{"decision": "accept"}, {"decision": "accept"}])
    await editor.command("lspilot.ask", {"prompt": "tweak"})
    assert "3.14159" in (workspace / "a.py").read_text() and (workspace / "b.py").read_text() == "B = 10\n"
    told = tool_results(fake)[-1]
    assert told.startswith("Applied the patch:\n  M a.py"), told  # not "nothing was written"
    assert "b.py changed on disk while the change waited for approval; nothing was written" in told, told


async def test_moving_a_file_whose_edits_are_denied_is_denied(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    (workspace / "lspilot.toml").write_text('[permission]\nedit = {"*" = "allow", "secret.py" = "deny"}\n')
    (workspace / "secret.py").write_text("KEY = 1\n")
    patch = (
        "*** Begin Patch\n*** Update File: secret.py\n*** Move to: public.py\n"
        "@@\n-KEY = 1\n+KEY = 2\n*** End Patch"
    )
    fake.turns.extend(
        [
            Turn(tool_calls=[("read", {"filePath": "secret.py"})]),
            Turn(tool_calls=[("apply_patch", {"patchText": patch})]),
            Turn(text="done"),
        ]
    )
    editor: Editor = await connect("neovim", FULL)
    await editor.command("lspilot.ask", {"prompt": "move it"})
    assert tool_results(fake)[-1] == "Error: Permission denied: edit secret.py (configured by the user)."
    assert (workspace / "secret.py").read_text() == "KEY = 1\n" and not (workspace / "public.py").exists()


async def test_accepting_none_of_the_hunks_of_a_new_file_creates_nothing(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    fake.turns.extend(
        [Turn(tool_calls=[("write", {"filePath": "new.py", "content": "X = 1\n"})]), Turn(text="ok")]
    )
    editor: Editor = await connect("neovim", FULL)
    reviews, _cancelled = pending_reviews(editor)
    asking = asyncio.ensure_future(editor.command("lspilot.ask", {"prompt": "new file"}))
    await editor.until(lambda: bool(reviews))
    resolve = {"proposalId": reviews[0]["proposalId"], "action": "accept", "hunkIds": []}
    await editor.command("lspilot.resolve", resolve)
    await asking
    assert not (workspace / "new.py").exists()
    assert "The user rejected the change to new.py" in tool_results(fake)[-1]


async def test_clients_without_file_operations_confirm_deletions_and_moves_by_message(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    b, c, d = workspace / "b.py", workspace / "c.py", workspace / "d.py"
    delete_b_and_move_c_to_d(fake, workspace)
    fake.turns.append(Turn(tool_calls=[("read", {"filePath": "c.py"})]))  # the second ask, below
    editor: Editor = await connect("neovim", None, file_operations=False)
    editor.open(b)
    editor.message_answers.extend(["Delete", "Move"])
    assert (await editor.command("lspilot.ask", {"prompt": "tidy up"}))["stopReason"] == "end"
    asked = [m.message for m in editor.message_requests]
    assert asked == [
        "lspilot proposes to delete b.py. Close b.py without saving afterwards, or saving it brings it back.",
        "lspilot proposes to move c.py to d.py, with 1 changed line.",
    ]
    assert not b.exists() and not c.exists() and d.read_text() == "C = 2\n"  # no buffer emptied instead
    assert tool_results(fake)[-1] == "Applied the patch:\n  D b.py\n  R c.py -> d.py"


async def test_keeping_the_file_in_that_confirmation_changes_nothing(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    delete_b_and_move_c_to_d(fake, workspace)
    editor: Editor = await connect("neovim", None, file_operations=False)
    editor.message_answers.extend(["Keep", "Keep"])
    await editor.command("lspilot.ask", {"prompt": "tidy up"})
    assert (workspace / "b.py").read_text() == "B = 1\n" and (workspace / "c.py").read_text() == "C = 1\n"
    assert not (workspace / "d.py").exists() and editor.applied == []


async def test_asking_about_a_selection_leaves_no_trace_in_what_the_servers_see(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    source = workspace / "a.py"
    fake.turns.append(Turn(text="it computes an area"))
    editor: Editor = await connect("neovim", FULL)
    editor.open(source)
    editor.change(source.as_uri(), "def discarded_unsaved_name(r):\n    return 1\n")  # typed, never saved
    span = {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 5}}
    await editor.command(
        "lspilot.ask", {"prompt": "explain", "context": {"uri": source.as_uri(), "range": span}}
    )
    assert "def discarded_unsaved_name(r):\n    return 1" in fake.requests[0]["messages"][-1]["content"]
    editor.close(source.as_uri())  # closed without saving: the typed text is gone
    answer = await editor.command("lspilot.navigate", {"operation": "documentSymbol", "uri": source.as_uri()})
    assert "area" in answer["text"] and "discarded_unsaved_name" not in answer["text"], answer["text"]


async def test_a_context_file_that_does_not_exist_is_a_clear_error_and_leaves_no_session(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    editor: Editor = await connect("neovim", FULL)
    span = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}
    gone = {"uri": (workspace / "gone.py").as_uri(), "range": span}
    with pytest.raises(Exception, match=r"cannot read the context file gone.py: No such file or directory"):
        await editor.command("lspilot.ask", {"prompt": "explain", "context": gone})
    assert await editor.command("lspilot.sessions") == []
    assert fake.requests == []


async def test_a_diagnostic_without_a_message_still_gets_its_code_action(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    del fake
    editor: Editor = await connect("neovim", FULL)
    line = types.Range(types.Position(0, 0), types.Position(0, 1))
    params = types.CodeActionParams(
        types.TextDocumentIdentifier((workspace / "a.py").as_uri()),
        types.Range(types.Position(0, 0), types.Position(0, 0)),
        types.CodeActionContext([types.Diagnostic(line, "")]),
    )
    actions = await editor.client.text_document_code_action_async(params)
    assert [a.title for a in actions or []] == ["Fix with lspilot"]
