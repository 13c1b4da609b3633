"""`lspilot serve`: the editor's answer to a request the daemon no longer waits for (it cancelled
it: the turn was cancelled, or `lspilot.resolve` settled the review first), or to one it never
sent. The editor was already answering, as editors are: the answer changes nothing and is
no error in the log."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types

from daemon.scripted_model import ScriptedModel, Turn
from tests.conftest import data_dir

from .serving import FULL, Editor, connect, read_then_edit, tool_results, workspace

__all__ = ["connect", "workspace"]  # the fixtures, shared with the other test_serve_* files

A_PY = "def area(r):\n    return 3.14 * r * r\n"


class Late:
    """The user's answer to the editor's ``method`` requests comes when the test gives it; a
    ``$/cancelRequest`` from the daemon is only noted (the editor was already answering)."""

    def __init__(self, editor: Editor, method: str) -> None:
        self.editor = editor
        self.asked: list[Any] = []
        self.cancelled: list[Any] = []
        self.answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.answering: list[asyncio.Task[Any]] = []
        protocol = editor.client.protocol

        def on_cancel(msg_id: Any) -> None:
            self.cancelled.append(msg_id)
            editor.changed.set()

        async def handler(params: Any) -> dict[str, Any]:
            self.asked.append(params)
            self.answering.append(asyncio.current_task())  # pyright: ignore[reportArgumentType]
            editor.changed.set()
            return await self.answer

        protocol._handle_cancel_notification = on_cancel  # pyright: ignore[reportPrivateUsage]
        protocol.fm.features[method] = handler

    async def answers(self, answer: dict[str, Any]) -> None:
        """The user answers; returns once the editor has sent the answer. (pygls sends it in a
        done-callback of the handler's task, added before the one waiting here.)"""
        self.answer.set_result(answer)
        await asyncio.wait(self.answering)


class DaemonLog:
    """What the daemons write to their log file (shared with the other tests using the same data
    dir) from now on."""

    def __init__(self) -> None:
        self.path = data_dir() / "logs" / "lspilot.log"
        self.start = self.path.stat().st_size if self.path.exists() else 0

    def since(self) -> str:
        with self.path.open(encoding="utf-8") as file:
            file.seek(self.start)
            return file.read()


def no_errors(editor: Editor, log: DaemonLog) -> str:
    """No warning or error reached the editor's log (the daemon mirrors its own there), and no error
    for a late answer is in the log file; what the log file has now."""
    warned = (types.MessageType.Error, types.MessageType.Warning)
    assert [m.message for m in editor.client.log_messages if m.type in warned] == []
    written = log.since()
    assert "InvalidStateError" not in written and "Unable to handle message" not in written, written
    return written


async def cancel_turn(editor: Editor, late: Late, asking: asyncio.Future[Any]) -> dict[str, Any]:
    """Once the editor is asked: the user cancels the turn; the daemon cancels its request."""
    await editor.until(lambda: bool(late.asked))
    session = editor.updates[0]["sessionId"]
    assert (await editor.command("lspilot.cancel", {"sessionId": session}))["cancelled"]
    result = await asking
    assert result["stopReason"] == "cancelled"
    await editor.until(lambda: bool(late.cancelled))
    return result


async def reviewing(connect: Callable[..., Any], fake: ScriptedModel, name: str) -> tuple[Editor, Late]:
    """The editor ``name``, connected; the model will edit a.py (asking for a review, answered when
    the test says) and then say "still here"."""
    read_then_edit(fake, "3.14", "3.14159")
    fake.turns.append(Turn(text="still here"))
    editor: Editor = await connect(name, FULL)
    return editor, Late(editor, "lspilot/reviewEdit")


async def test_a_review_accepted_after_the_turn_was_cancelled_changes_nothing(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    editor, late = await reviewing(connect, fake, "neovim")
    log = DaemonLog()
    first = await cancel_turn(
        editor, late, asyncio.ensure_future(editor.command("lspilot.ask", {"prompt": "pi"}))
    )
    of_first = len([u for u in editor.updates if u.get("turnId") == first["turnId"]])
    await late.answers({"decision": "accept"})
    second = await editor.command("lspilot.ask", {"sessionId": first["sessionId"], "prompt": "go on"})
    assert second["stopReason"] == "end"
    assert (workspace / "a.py").read_text() == A_PY
    assert len([u for u in editor.updates if u.get("turnId") == first["turnId"]]) == of_first
    no_errors(editor, log)


async def test_a_review_answered_after_resolve_settled_it_changes_nothing(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    editor, late = await reviewing(connect, fake, "visual-studio-code")
    log = DaemonLog()
    asking = asyncio.ensure_future(editor.command("lspilot.ask", {"prompt": "pi"}))
    await editor.until(lambda: bool(late.asked))
    await editor.command("lspilot.resolve", {"proposalId": late.asked[0]["proposalId"], "action": "reject"})
    await editor.until(lambda: bool(late.cancelled))
    await late.answers({"decision": "accept"})
    assert (await asking)["stopReason"] == "end"
    assert "The user rejected the change to a.py" in tool_results(fake)[-1]
    assert (await editor.command("lspilot.ask", {"prompt": "go on"}))["stopReason"] == "end"
    assert (workspace / "a.py").read_text() == A_PY
    no_errors(editor, log)


async def test_a_permission_granted_after_the_turn_was_cancelled_is_not_taken(
    connect: Callable[..., Any], fake: ScriptedModel
) -> None:
    read_env = Turn(tool_calls=[("read", {"filePath": ".env"})])
    fake.turns.extend([read_env, read_env, Turn(text="read it")])
    editor: Editor = await connect("visual-studio-code", FULL)
    log = DaemonLog()
    late = Late(editor, "lspilot/requestPermission")
    first = await cancel_turn(
        editor, late, asyncio.ensure_future(editor.command("lspilot.ask", {"prompt": "env"}))
    )
    await late.answers({"optionId": "allow_always"})
    asked_before = len(fake.requests)
    second = await editor.command("lspilot.ask", {"sessionId": first["sessionId"], "prompt": "again"})
    assert second["stopReason"] == "end"
    assert len(late.asked) == 2  # "always" was not remembered from the late answer: asked again
    assert "not-for-models" not in json.dumps(fake.requests[asked_before])  # the first read never ran
    no_errors(editor, log)


async def test_answers_to_requests_the_daemon_never_sent_are_dropped(
    connect: Callable[..., Any], fake: ScriptedModel
) -> None:
    fake.turns.append(Turn(text="still here"))
    editor: Editor = await connect("neovim", FULL)
    log = DaemonLog()
    protocol = editor.client.protocol
    protocol._send_response("lspilot-000000000000", result={"decision": "accept"})  # pyright: ignore[reportPrivateUsage]
    error = types.ResponseError(types.LSPErrorCodes.RequestCancelled, "cancelled")
    protocol._send_response(7, error=error)  # pyright: ignore[reportPrivateUsage]
    assert (await editor.command("lspilot.ask", {"prompt": "hi"}))["stopReason"] == "end"
    written = no_errors(editor, log)
    for unknown in ("lspilot-000000000000", "7"):  # one line each, no traceback
        assert (
            f'WARNING pygls.protocol.json_rpc: Received response to unknown message id "{unknown}"\n'
            in written
        )
