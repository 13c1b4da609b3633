"""`lspilot serve` end to end: a pytest-lsp client (Neovim's and VS Code's capabilities) talks to
the real daemon process, which runs real litellm against the scripted model server."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, cast

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from daemon import serve
from daemon.scripted_model import ScriptedModel, Turn
from daemon.server import build
from daemon.store import Store
from lsp_bridge.documents import uri_to_path
from tests.conftest import data_dir

from .conftest import LSPILOT


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("def area(r):\n    return 3.14 * r * r\n")
    (root / ".env").write_text("TOKEN=not-for-models\n")
    return root


class Editor:
    """The client side: a pytest-lsp client plus what the daemon sent it."""

    def __init__(self, client: LanguageClient) -> None:
        self.client = client
        self.updates: list[dict[str, Any]] = []
        self.permission_asks: list[dict[str, Any]] = []
        self.permission_answers: list[dict[str, Any]] = []
        self.message_requests: list[types.ShowMessageRequestParams] = []
        self.message_answers: list[str | None] = []
        self.reviews: list[dict[str, Any]] = []
        self.review_answers: list[dict[str, Any]] = []
        self.applied: list[dict[str, Any]] = []
        self.shown: list[types.ShowDocumentParams] = []
        self.buffers: dict[str, tuple[str, int]] = {}
        self.while_reviewing: Callable[[], None] = lambda: None  # what the user does meanwhile
        self.debounce = 0.0  # Neovim sends didChange 150 ms after a change, not at once
        self.changed = asyncio.Event()

        @client.feature("lspilot/update")
        def update(params: Any) -> None:
            self.updates.append(_plain(params))
            self.changed.set()

        @client.feature("lspilot/requestPermission")
        def permission(params: Any) -> dict[str, Any]:
            self.permission_asks.append(_plain(params))
            self.changed.set()
            return self.permission_answers.pop(0) if self.permission_answers else {"cancelled": True}

        @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
        def message_request(params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
            self.message_requests.append(params)
            answer = self.message_answers.pop(0) if self.message_answers else None
            return types.MessageActionItem(answer) if answer else None

        @client.feature("lspilot/reviewEdit")
        def review(params: Any) -> dict[str, Any]:
            self.reviews.append(_plain(params))
            self.while_reviewing()
            return self.review_answers.pop(0) if self.review_answers else {"decision": "cancelled"}

        client.protocol.fm.features[types.WINDOW_SHOW_DOCUMENT] = self.show  # replaces pytest-lsp's

        @client.feature(types.WORKSPACE_APPLY_EDIT)
        def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
            for change in params.edit.document_changes or []:
                if isinstance(change, types.DeleteFile):  # as Neovim and VS Code do: file and buffer go
                    uri_to_path(change.uri).unlink()
                    if change.uri in self.buffers:
                        self.close(change.uri)
                    self.applied.append({"uri": change.uri, "deleted": True})
                    continue
                if isinstance(change, types.RenameFile):  # the file and its buffer move
                    uri_to_path(change.old_uri).rename(uri_to_path(change.new_uri))
                    if change.old_uri in self.buffers:
                        self.open(uri_to_path(change.new_uri), self.close(change.old_uri))
                    self.applied.append({"uri": change.old_uri, "renamed": change.new_uri})
                    continue
                assert isinstance(change, types.TextDocumentEdit)
                uri = change.text_document.uri
                if uri not in self.buffers:  # as VS Code does: opened to be edited
                    self.open(uri_to_path(uri))
                text, version = self.buffers[uri]
                assert change.text_document.version in (version, None)
                self.applied.append({"uri": uri, "edits": change.edits})
                self.change(uri, _apply(text, change.edits), self.debounce)
            return types.ApplyWorkspaceEditResult(applied=True)

    def show(self, params: types.ShowDocumentParams) -> types.ShowDocumentResult:
        self.shown.append(params)
        self.changed.set()
        return types.ShowDocumentResult(success=True)

    def open(self, path: Path, text: str | None = None) -> None:
        """Open ``path`` in the editor, as a buffer holding ``text`` (by default the file's, empty
        for a file not on disk)."""
        if text is None:
            text = path.read_text() if path.exists() else ""
        self.buffers[path.as_uri()] = (text, 1)
        item = types.TextDocumentItem(path.as_uri(), "python", 1, text)
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(item))

    def close(self, uri: str) -> str:
        """Close a buffer; its text."""
        text, _version = self.buffers.pop(uri)
        closed = types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri))
        self.client.text_document_did_close(closed)
        return text

    def change(self, uri: str, text: str, notify_after: float = 0.0) -> None:
        version = self.buffers[uri][1] + 1
        self.buffers[uri] = (text, version)
        document = types.VersionedTextDocumentIdentifier(version=version, uri=uri)
        change = types.TextDocumentContentChangeWholeDocument(text=text)
        params = types.DidChangeTextDocumentParams(document, [change])
        if notify_after:
            asyncio.get_running_loop().call_later(notify_after, self.client.text_document_did_change, params)
        else:
            self.client.text_document_did_change(params)

    async def command(self, name: str, *arguments: Any, token: str | None = None) -> Any:
        params = types.ExecuteCommandParams(name, arguments=list(arguments), work_done_token=token)
        return await self.client.workspace_execute_command_async(params)

    async def until(self, predicate: Callable[[], bool]) -> None:
        async with asyncio.timeout(60):
            while not predicate():
                self.changed.clear()
                await self.changed.wait()

    def kinds(self) -> list[str]:
        return [u["kind"] for u in self.updates]


def _plain(value: Any) -> Any:
    """pygls hands custom messages over as named tuples; tests compare plain data."""
    if hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, list):
        return [_plain(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def _apply(text: str, edits: Any) -> str:
    """Whole-line edits (as lspilot sends them) applied to ``text``, last first."""
    lines = text.splitlines(keepends=True)
    for edit in sorted(edits, key=lambda e: e.range.start.line, reverse=True):
        assert edit.range.start.character == 0 and edit.range.end.character == 0
        lines[edit.range.start.line : edit.range.end.line] = [edit.new_text]
    return "".join(lines)


def tool_results(fake: ScriptedModel) -> list[str]:
    """The tool results the model was sent in its last request."""
    return [m["content"] for m in fake.requests[-1]["messages"] if m["role"] == "tool"]


def delete_b_and_move_c_to_d(fake: ScriptedModel, workspace: Path) -> None:
    """b.py and c.py exist; the model reads them, then one patch deletes b.py and moves c.py to
    d.py with a change (C = 1 -> C = 2), and says done."""
    (workspace / "b.py").write_text("B = 1\n")
    (workspace / "c.py").write_text("C = 1\n")
    patch = (
        "*** Begin Patch\n*** Delete File: b.py\n"
        "*** Update File: c.py\n*** Move to: d.py\n@@\n-C = 1\n+C = 2\n*** End Patch"
    )
    fake.turns.extend(
        [
            Turn(tool_calls=[("read", {"filePath": "b.py"}), ("read", {"filePath": "c.py"})]),
            Turn(tool_calls=[("apply_patch", {"patchText": patch})]),
            Turn(text="done"),
        ]
    )


def read_then_edit(fake: ScriptedModel, old: str, new: str) -> None:
    """The model reads a.py, edits it, and says ok."""
    read = Turn(tool_calls=[("read", {"filePath": "a.py"})])
    edit = Turn(tool_calls=[("edit", {"filePath": "a.py", "oldString": old, "newString": new})])
    fake.turns.extend([read, edit, Turn(text="ok")])


@pytest.fixture
async def connect(tmp_path: Path, workspace: Path, fake: ScriptedModel) -> AsyncIterator[Callable[..., Any]]:
    clients: list[LanguageClient] = []
    env = {
        "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin",
        "HOME": str(tmp_path),
        "LSPILOT_DATA_DIR": str(data_dir()),  # the installed language servers; sessions are per root
        "LSPILOT_CONFIG_DIR": str(tmp_path / "user-config"),
        "LSPILOT_MODEL": "openai/scripted",
        "LSPILOT_API_BASE": fake.api_base,
        "OPENAI_API_KEY": "sk-fake",
    }

    async def start(
        spec: str = "neovim",
        lspilot: dict[str, bool] | None = None,
        shows_documents: bool = True,
        file_operations: bool = True,
    ) -> Editor:
        config = ClientServerConfig(server_command=[LSPILOT, "serve"], server_env=env)
        client = cast(LanguageClient, await config.start())
        clients.append(client)
        editor = Editor(client)
        options = {"lspilot": lspilot} if lspilot is not None else None
        capabilities = client_capabilities(spec)
        if not shows_documents and capabilities.window is not None:
            capabilities.window.show_document = None
        if not file_operations and capabilities.workspace and capabilities.workspace.workspace_edit:
            capabilities.workspace.workspace_edit.resource_operations = None
        await client.initialize_session(
            types.InitializeParams(
                capabilities=capabilities,
                root_uri=workspace.as_uri(),
                workspace_folders=[types.WorkspaceFolder(workspace.as_uri(), "ws")],
                initialization_options=options,
            )
        )
        return editor

    yield start
    for client in clients:
        await client.shutdown_session()


FULL = {"review": True, "permissions": True}


@pytest.mark.parametrize("spec", ["neovim", "visual-studio-code"])
def test_the_early_initialize_answer_is_what_pygls_would_send(spec: str) -> None:
    server = build()
    capabilities = client_capabilities(spec)
    params = types.InitializeParams(capabilities=capabilities, root_uri="file:///tmp/x")
    handlers = server.protocol.lsp_initialize(params)
    handler, args, _ = next(handlers)
    with pytest.raises(StopIteration) as done:
        handlers.send(handler(*args))
    from_pygls = server.protocol._converter.unstructure(done.value.value)  # pyright: ignore[reportPrivateUsage]
    raw = server.protocol._converter.unstructure(params)  # pyright: ignore[reportPrivateUsage]
    assert serve.initialize_result(raw) == from_pygls
    # Neovim offers UTF-8 first; lspilot's columns are UTF-16 with every editor.
    assert from_pygls["capabilities"]["positionEncoding"] == "utf-16"


async def test_ask_streams_the_turn_and_the_session_can_be_redrawn(
    connect: Callable[..., Any], fake: ScriptedModel
) -> None:
    fake.turns.extend([Turn(tool_calls=[("read", {"filePath": "a.py"})]), Turn(text="It computes an area.")])
    editor: Editor = await connect("neovim", FULL)
    editor.client.progress_reports["tok-1"] = []  # a token the client made: it knows it
    result = await editor.command("lspilot.ask", {"prompt": "what does a.py do?"}, token="tok-1")
    assert result["stopReason"] == "end"
    kinds = editor.kinds()
    assert kinds[0] == "status" and kinds[-1] == "turnEnd"
    calls = [u for u in editor.updates if u["kind"] == "toolCall"]
    assert [c["status"] for c in calls] == ["pending", "running", "completed"]
    assert "3.14 * r * r" in calls[-1]["output"]
    assert "".join(u["delta"] for u in editor.updates if u["kind"] == "text") == "It computes an area."
    assert {u["sessionId"] for u in editor.updates} == {result["sessionId"]}
    assert {u["turnId"] for u in editor.updates} == {result["turnId"]}
    progress: list[Any] = editor.client.progress_reports["tok-1"]  # the values, despite the annotation
    assert progress[0].kind == "begin" and progress[-1].kind == "end"
    assert any("read" in (p.message or "") for p in progress if p.kind == "report")

    sessions = await editor.command("lspilot.sessions")
    assert [s["sessionId"] for s in sessions] == [result["sessionId"]]
    history = await editor.command("lspilot.history", {"sessionId": result["sessionId"]})
    roles = [m["role"] for m in history["messages"]]
    assert roles == ["user", "assistant", "assistant"]


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


async def test_cancel_stops_a_running_turn(connect: Callable[..., Any], fake: ScriptedModel) -> None:
    fake.turns.append(Turn(text="thinking it over", stall_after_chunks=2))
    editor: Editor = await connect("neovim", FULL)
    asking = asyncio.ensure_future(editor.command("lspilot.ask", {"prompt": "take your time"}))
    await editor.until(lambda: "text" in editor.kinds())
    session_id = editor.updates[0]["sessionId"]
    assert (await editor.command("lspilot.cancel", {"sessionId": session_id}))["cancelled"] is True
    result = await asking
    assert result["stopReason"] == "cancelled" and result["sessionId"] == session_id
    assert editor.updates[-1]["kind"] == "turnEnd" and editor.updates[-1]["stopReason"] == "cancelled"
    # The server is still serving: the session is listed and no longer running.
    [listed] = await editor.command("lspilot.sessions")
    assert listed["sessionId"] == session_id and listed["running"] is False


async def test_cancel_request_on_the_ask_stops_its_turn(
    connect: Callable[..., Any], fake: ScriptedModel
) -> None:
    fake.turns.append(Turn(text="thinking it over", stall_after_chunks=2))
    editor: Editor = await connect("neovim", FULL)
    params = types.ExecuteCommandParams("lspilot.ask", arguments=[{"prompt": "take your time"}])
    protocol = editor.client.protocol
    asking = asyncio.ensure_future(
        protocol.send_request_async(types.WORKSPACE_EXECUTE_COMMAND, params, msg_id="ask-1")
    )
    await editor.until(lambda: "text" in editor.kinds())
    protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="ask-1"))
    with pytest.raises(Exception, match="cancel"):
        await asking
    await editor.until(lambda: editor.kinds()[-1] == "turnEnd")
    assert editor.updates[-1]["stopReason"] == "cancelled"


async def test_malformed_arguments_are_a_json_rpc_error_naming_the_problem(
    connect: Callable[..., Any],
) -> None:
    editor: Editor = await connect("neovim", FULL)
    with pytest.raises(Exception, match=r"prompt: Field required") as error:
        await editor.command("lspilot.ask", {"promt": "typo"})
    assert "promt: Extra inputs are not permitted" in str(error.value)
    with pytest.raises(Exception, match=r"lspilot.history takes one object argument, got 0 arguments"):
        await editor.command("lspilot.history")
    with pytest.raises(Exception, match=r"lspilot.ask takes one object argument, got one list"):
        await editor.command("lspilot.ask", ["explain this"])
    with pytest.raises(Exception, match=r"no session nope"):
        await editor.command("lspilot.history", {"sessionId": "nope"})
    assert await editor.command("lspilot.sessions") == []


async def test_a_request_with_malformed_params_is_answered_and_nothing_pops_up(
    connect: Callable[..., Any],
) -> None:
    editor: Editor = await connect("neovim", FULL)
    protocol = editor.client.protocol
    assert protocol.writer is not None

    writer = protocol.writer

    def send(raw: bytes) -> None:
        writer.write(b"Content-Length: %d\r\n\r\n" % len(raw) + raw)

    for number, (method, params) in enumerate(
        [(types.TEXT_DOCUMENT_CODE_ACTION, {}), (types.WORKSPACE_EXECUTE_COMMAND, {"arguments": []})]
    ):
        answer: concurrent.futures.Future[Any] = concurrent.futures.Future()
        protocol._request_futures[f"bad-{number}"] = answer  # pyright: ignore[reportPrivateUsage]
        request = {"jsonrpc": "2.0", "id": f"bad-{number}", "method": method, "params": params}
        send(json.dumps(request).encode())
        with pytest.raises(JsonRpcInvalidParams, match=f"invalid params for {method}: "):
            async with asyncio.timeout(30):  # before the fix: never answered
                await asyncio.wrap_future(answer)
    send(b"{not json")
    assert await editor.command("lspilot.sessions") == []  # still serving
    assert editor.client.messages == []  # no "Error in server: ..." popups
    assert any("could not handle a message" in m.message for m in editor.client.log_messages)


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


async def test_a_stale_base_version_applies_nothing(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    source = workspace / "a.py"
    read_then_edit(fake, "3.14", "3.14159")
    editor: Editor = await connect("neovim", FULL)
    editor.open(source)

    editor.while_reviewing = lambda: editor.change(source.as_uri(), "# typed\n" + source.read_text())
    editor.review_answers.append({"decision": "accept"})
    result = await editor.command("lspilot.ask", {"prompt": "more digits"})
    assert result["stopReason"] == "end"
    assert editor.applied == [] and "3.14159" not in source.read_text()
    assert "changed in the editor during the review" in tool_results(fake)[-1]


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


async def test_navigate_returns_locations_for_the_editor(
    connect: Callable[..., Any], workspace: Path
) -> None:
    (workspace / "b.py").write_text("from a import area\n\nprint(area(2))\n")
    editor: Editor = await connect("neovim", FULL)
    answer = await editor.command(
        "lspilot.navigate",
        {"operation": "findReferences", "uri": (workspace / "a.py").as_uri(), "symbol": "area"},
    )
    places = {(loc["path"], loc["line"]) for loc in answer["locations"]}
    assert {("a.py", 1), ("b.py", 1), ("b.py", 3)} <= places
    with pytest.raises(Exception, match="operation"):
        await editor.command(
            "lspilot.navigate", {"operation": "teleport", "uri": (workspace / "a.py").as_uri()}
        )


async def test_navigate_takes_the_editors_utf16_column(connect: Callable[..., Any], workspace: Path) -> None:
    # Each emoji is two UTF-16 units and one character: read as characters, the column pointed
    # six characters past `area`, at `(2))`, and nothing was found.
    line = "label = '🙂🙂🙂🙂🙂🙂'; print(area(2))"
    (workspace / "b.py").write_text(f"from a import area\n\n{line}\n")
    editor: Editor = await connect("neovim", FULL)
    column = len(line[: line.index("area(")].encode("utf-16-le")) // 2
    answer = await editor.command(
        "lspilot.navigate",
        {
            "operation": "goToDefinition",
            "uri": (workspace / "b.py").as_uri(),
            "position": {"line": 2, "character": column},
        },
    )
    assert [(loc["path"], loc["line"], loc["character"]) for loc in answer["locations"]] == [("a.py", 1, 5)]


def selection(shown: types.ShowDocumentParams) -> tuple[str, int, int, int, int]:
    """Where a showDocument request points: the file's name and its 0-based range."""
    assert shown.selection is not None and shown.take_focus is False and shown.external is False
    start, end = shown.selection.start, shown.selection.end
    return uri_to_path(shown.uri).name, start.line, start.character, end.line, end.character


async def test_following_shows_what_the_agent_reads_finds_and_changes(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    (workspace / "b.py").write_text("from a import area\n\n# é😀\nprint(area(2))  # 😀 area\n")
    references = {"operation": "findReferences", "filePath": "b.py", "line": 4, "symbol": "area"}
    edit = {"filePath": "a.py", "oldString": "3.14 * r", "newString": "3.14159 * r"}
    fake.turns.extend(
        [
            Turn(tool_calls=[("read", {"filePath": "b.py", "offset": 3})]),
            Turn(tool_calls=[("lsp", references)]),
            Turn(tool_calls=[("grep", {"pattern": "area"})]),  # nothing to show
            Turn(tool_calls=[("read", {"filePath": "a.py"})]),
            Turn(tool_calls=[("edit", edit)]),
            Turn(text="done"),
        ]
    )
    editor: Editor = await connect("neovim", {**FULL, "follow": True})
    editor.review_answers.append({"decision": "accept"})
    result = await editor.command("lspilot.ask", {"prompt": "more digits"})
    assert result["stopReason"] == "end"
    await editor.until(lambda: len(editor.shown) == 4)
    assert [selection(shown) for shown in editor.shown] == [
        ("b.py", 2, 0, 2, 0),  # read from line 3
        ("a.py", 0, 4, 0, 8),  # the first reference: the declaration's name
        ("a.py", 0, 0, 0, 0),
        ("a.py", 1, 0, 2, 0),  # the changed line
    ]


async def test_following_shows_nothing_while_a_review_is_pending(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    (workspace / "b.py").write_text("B = 1\n")
    edit = {"filePath": "a.py", "oldString": "3.14 * r", "newString": "3.14159 * r"}
    fake.turns.extend(
        [
            Turn(tool_calls=[("read", {"filePath": "a.py"})]),
            Turn(tool_calls=[("edit", edit), ("read", {"filePath": "b.py"})]),  # b.py: during the review
            Turn(text="done"),
        ]
    )
    editor: Editor = await connect("neovim", {**FULL, "follow": True})
    review = {"count": 0, "pending": False}
    arrived: list[tuple[str, bool]] = []  # (file shown, while a review was pending)

    async def slow_review(params: Any) -> dict[str, Any]:
        review["count"] += 1
        review["pending"] = True
        await asyncio.sleep(1)  # the user reads the diff
        review["pending"] = False
        return {"decision": "accept"}

    def show(params: types.ShowDocumentParams) -> types.ShowDocumentResult:
        arrived.append((uri_to_path(params.uri).name, bool(review["pending"])))
        return editor.show(params)

    features = editor.client.protocol.fm.features
    features["lspilot/reviewEdit"], features[types.WINDOW_SHOW_DOCUMENT] = slow_review, show
    result = await editor.command("lspilot.ask", {"prompt": "more digits"})
    assert result["stopReason"] == "end" and review["count"] == 1
    await editor.until(lambda: len(arrived) == 3)
    assert arrived[0] == ("a.py", False)  # the read before the review
    assert sorted(arrived[1:]) == [("a.py", False), ("b.py", False)]  # none while it was pending


async def test_following_is_switched_by_command_and_needs_a_client_that_shows_documents(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    (workspace / "b.py").write_text("x = '😀'; y = 1\n")
    references = {"operation": "findReferences", "filePath": "b.py", "symbol": "y"}
    fake.turns.extend(
        [
            Turn(tool_calls=[("lsp", references)]),
            Turn(text="not following"),
            Turn(tool_calls=[("lsp", references)]),
            Turn(text="following"),
        ]
    )
    editor: Editor = await connect("visual-studio-code", FULL)
    first = await editor.command("lspilot.ask", {"prompt": "where is y used?"})
    assert await editor.command("lspilot.follow", {"enabled": True}) == {"enabled": True}
    await editor.command("lspilot.ask", {"sessionId": first["sessionId"], "prompt": "again"})
    await editor.until(lambda: len(editor.shown) == 1)
    # y is at code point 9; 😀 before it is 2 UTF-16 units
    assert [selection(shown) for shown in editor.shown] == [("b.py", 0, 10, 0, 11)]
    assert await editor.command("lspilot.follow", {"enabled": False}) == {"enabled": False}

    blind: Editor = await connect("neovim", FULL, shows_documents=False)
    with pytest.raises(JsonRpcInvalidParams, match="cannot show documents"):
        await blind.command("lspilot.follow", {"enabled": True})
    assert await blind.command("lspilot.follow", {"enabled": False}) == {"enabled": False}


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


def test_invalid_params_answers_are_one_info_line_in_the_log(caplog: pytest.LogCaptureFixture) -> None:
    # pygls logs every error answer with its traceback at ERROR; the editor's mistakes are not ours.
    build()
    pygls_log = logging.getLogger("pygls.protocol.json_rpc")
    try:
        raise JsonRpcInvalidParams("no session nope")
    except JsonRpcInvalidParams:
        pygls_log.exception('Exception occurred for message "%s"', 7)
    try:
        raise ValueError("a fault of ours")
    except ValueError:
        pygls_log.exception('Exception occurred for message "%s"', 8)
    expected, fault = [r for r in caplog.records if r.name == "pygls.protocol.json_rpc"]
    assert (expected.levelname, expected.getMessage(), expected.exc_info) == (
        "INFO",
        'Exception occurred for message "7": no session nope',
        None,
    )
    assert fault.levelname == "ERROR" and fault.exc_info is not None


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


async def test_stdout_carries_only_json_rpc_also_with_verbose_logging(
    tmp_path: Path, workspace: Path, fake: ScriptedModel
) -> None:
    # litellm's own handler writes its records below WARNING to stdout; with -v its import logs
    # at DEBUG, in the middle of the editor's stream. A project's own tool may print, and so may
    # the commands it runs.
    tools = workspace / ".lspilot" / "tools"
    tools.mkdir(parents=True)
    (tools / "noisy.py").write_text(
        "import subprocess\n"
        "from pydantic import BaseModel, ConfigDict\n"
        "from tools import ToolResult, define_tool\n"
        "class P(BaseModel):\n"
        "    model_config = ConfigDict(extra='forbid')\n"
        "@define_tool('Prints.', P)\n"
        "async def tool(params, ctx):\n"
        "    print('debugging my tool')\n"
        "    subprocess.run(['echo', 'and its command'])\n"
        "    return ToolResult('noisy', 'done')\n"
    )
    fake.turns.extend([Turn(tool_calls=[("noisy", {})]), Turn(text="hello")])
    editor = await RawEditor.start(tmp_path, fake, "-v", "serve")
    async with asyncio.timeout(120):
        await editor.initialize(workspace)
        assert (await editor.ask("hi"))["result"]["stopReason"] == "end"
        assert await editor.stop() == 0


async def test_what_pygls_would_leave_unanswered_is_answered_with_an_error(
    tmp_path: Path, workspace: Path, fake: ScriptedModel
) -> None:
    # JSON-RPC: a body that is not JSON gets a parse error, JSON that is not a message object an
    # invalid request, both with a null id; LSP: a request after shutdown fails as invalid.
    editor = await RawEditor.start(tmp_path, fake, "serve")
    async with asyncio.timeout(120):
        await editor.initialize(workspace)
        editor.send_body(b"{not json")
        answer = await editor.answer(None)
        assert (answer["id"], answer["error"]["code"]) == (None, -32700)
        assert answer["error"]["message"].startswith("not JSON: Expecting property name")
        editor.send_body(b"[1, 2]")
        assert (await editor.answer(None))["error"]["code"] == -32600
        sessions = {"command": "lspilot.sessions", "arguments": []}
        editor.send({"id": 2, "method": "workspace/executeCommand", "params": sessions})
        assert (await editor.answer(2))["result"] == []  # still serving
        editor.send({"id": 3, "method": "shutdown"})
        editor.send({"id": 4, "method": "workspace/executeCommand", "params": sessions})
        assert (await editor.answer(3))["result"] is None
        refused = await editor.answer(4)
        assert refused["error"] == {
            "code": -32600,
            "message": "workspace/executeCommand after shutdown: lspilot is stopping and only takes exit now",
        }
        editor.send({"method": "exit"})
        assert await editor.proc.wait() == 0


class RawEditor:
    """An editor speaking raw JSON-RPC to a `lspilot serve` process, byte for byte."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc, self.stdin, self.stdout = proc, proc.stdin, proc.stdout
        self.answers: dict[int | None, dict[str, Any]] = {}
        self.bodies: list[bytes] = []  # every message read, as it came

    @classmethod
    async def start(cls, tmp_path: Path, fake: ScriptedModel, *argv: str) -> RawEditor:
        env = {
            "PATH": str(Path(sys.executable).parent) + ":/usr/bin:/bin",
            "HOME": str(tmp_path),
            "LSPILOT_DATA_DIR": str(tmp_path / "data"),
            "LSPILOT_CONFIG_DIR": str(tmp_path / "user-config"),
            "LSPILOT_MODEL": "openai/scripted",
            "LSPILOT_API_BASE": fake.api_base,
            "OPENAI_API_KEY": "sk-fake",
        }
        return cls(
            await asyncio.create_subprocess_exec(
                *(LSPILOT, *argv),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
                env=env,
            )
        )

    def send(self, message: dict[str, Any]) -> None:
        self.stdin.write(serve.frame({"jsonrpc": "2.0", **message}))

    def send_body(self, body: bytes) -> None:
        self.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def initialize(self, workspace: Path) -> None:
        initialize = {"processId": None, "rootUri": workspace.as_uri(), "capabilities": {}}
        self.send({"id": 1, "method": "initialize", "params": initialize})
        await self.answer(1)
        self.send({"method": "initialized", "params": {}})

    async def ask(self, prompt: str) -> dict[str, Any]:
        """One ``lspilot.ask`` (request 2) and its answer."""
        ask = {"command": "lspilot.ask", "arguments": [{"prompt": prompt}]}
        self.send({"id": 2, "method": "workspace/executeCommand", "params": ask})
        return await self.answer(2)

    async def stop(self) -> int:
        """shutdown (request 3), exit, and the process's exit status."""
        self.send({"id": 3, "method": "shutdown"})
        await self.answer(3)
        self.send({"method": "exit"})
        return await self.proc.wait()

    async def answer(self, request_id: int | None) -> dict[str, Any]:
        """The answer to ``request_id`` (read on until it comes; every byte must be a framed
        message), or one to a request with a null id."""
        while request_id not in self.answers:
            length = None
            while (line := await self.stdout.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode(errors="replace").partition(":")
                assert name in ("Content-Length", "Content-Type"), f"not JSON-RPC on stdout: {line!r}"
                length = int(value) if name == "Content-Length" else length
            assert length is not None, "stdout ended"
            self.bodies.append(await self.stdout.readexactly(length))
            message = json.loads(self.bodies[-1])
            if "id" in message and "method" not in message:
                self.answers[message["id"]] = message
        return self.answers.pop(request_id)


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
        with store.claim(session):
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
        with store.claim(session):
            listed = await editor.command("lspilot.sessions")
            assert [(s["sessionId"], s["running"]) for s in listed] == [(session, True)]
        listed = await editor.command("lspilot.sessions")
        assert [(s["sessionId"], s["running"]) for s in listed] == [(session, False)]
    finally:
        store.close()
