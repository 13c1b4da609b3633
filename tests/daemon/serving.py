"""What the `lspilot serve` tests share: a pytest-lsp editor (Neovim's or VS Code's capabilities)
connected to the real daemon process, which runs real litellm against the scripted model server,
and a raw JSON-RPC editor that reads every byte the daemon writes."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from lsprotocol import types
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from daemon import serve, trust
from daemon.scripted_model import ScriptedModel, Turn
from lsp_bridge.documents import from_utf16, uri_to_path
from tests.conftest import data_dir

from .conftest import LSPILOT


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Trusted by its user (the record `lspilot trust` writes, in the data dir the daemon uses)
    while the test runs: the tests that write a project config or tools into it mean them to count."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("def area(r):\n    return 3.14 * r * r\n")
    (root / ".env").write_text("TOKEN=not-for-models\n")
    monkeypatch.setenv("LSPILOT_DATA_DIR", str(data_dir()))
    trust.grant(root)
    yield root
    trust.revoke(root)


class Editor:
    """The client side: a pytest-lsp client plus what the daemon sent it."""

    def __init__(self, client: LanguageClient) -> None:
        self.client = client
        self.updates: list[dict[str, Any]] = []
        self.permission_asks: list[dict[str, Any]] = []
        self.permission_answers: list[dict[str, Any]] = []
        self.message_requests: list[types.ShowMessageRequestParams] = []
        self.message_answers: list[str | None] = []
        self.questions: list[dict[str, Any]] = []
        self.question_answers: list[dict[str, Any]] = []
        self.reviews: list[dict[str, Any]] = []
        self.review_answers: list[dict[str, Any]] = []
        self.applied: list[dict[str, Any]] = []
        self.shown: list[types.ShowDocumentParams] = []
        self.buffers: dict[str, tuple[str, int]] = {}
        self.while_reviewing: Callable[[], None] = lambda: None  # what the user does meanwhile
        self.debounce = 0.0  # Neovim sends didChange 150 ms after a change, not at once
        self.changed = asyncio.Event()
        _keep_json(client)

        @client.feature("lspilot/update")
        def update(params: Any) -> None:
            self.updates.append(params)
            self.changed.set()

        @client.feature("lspilot/requestPermission")
        def permission(params: Any) -> dict[str, Any]:
            self.permission_asks.append(params)
            self.changed.set()
            return self.permission_answers.pop(0) if self.permission_answers else {"cancelled": True}

        @client.feature("lspilot/question")
        def question(params: Any) -> dict[str, Any]:
            self.questions.append(params)
            self.changed.set()
            return self.question_answers.pop(0) if self.question_answers else {"cancelled": True}

        @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
        def message_request(params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
            self.message_requests.append(params)
            self.changed.set()
            answer = self.message_answers.pop(0) if self.message_answers else None
            return types.MessageActionItem(answer) if answer else None

        @client.feature("lspilot/reviewEdit")
        def review(params: Any) -> dict[str, Any]:
            self.reviews.append(params)
            self.while_reviewing()
            return self.review_answers.pop(0) if self.review_answers else {"decision": "cancelled"}

        features = client.protocol.fm.features  # methods, which client.feature cannot mark
        features[types.WINDOW_SHOW_DOCUMENT] = self.show  # replaces pytest-lsp's
        features[types.WORKSPACE_APPLY_EDIT] = self.apply_edit

    def apply_edit(self, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
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
        """Open ``path`` in the editor, as a buffer holding ``text`` (by default the file's, its
        line endings as they are, as VS Code and Neovim send a CRLF file; empty for a file not on
        disk)."""
        if text is None:
            text = path.read_bytes().decode() if path.exists() else ""
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


def _keep_json(client: LanguageClient) -> None:
    """pygls hands the params of messages it has no type for (lspilot's own) over as named
    tuples, whose fields rename keys that are not names (a file path becomes "_0"): keep them as
    the JSON the daemon sent, as Neovim and VS Code see it."""
    converter = client.protocol._converter  # pyright: ignore[reportPrivateUsage]
    for message in (JsonRPCRequestMessage, JsonRPCNotification):
        converter.register_structure_hook(message, lambda obj, cls: cls(**obj))  # pyright: ignore[reportUnknownLambdaType]


def _apply(text: str, edits: Any) -> str:
    """Edits of whole lines (as lspilot sends them, the last maybe up to its ending) applied to
    ``text``, last first."""
    lines = text.splitlines(keepends=True)
    for edit in sorted(edits, key=lambda e: e.range.start.line, reverse=True):
        start, end = edit.range.start, edit.range.end
        assert start.character == 0
        tail = lines[end.line][from_utf16(lines[end.line], end.character) :] if end.character else ""
        lines[start.line : end.line + (1 if end.character else 0)] = [edit.new_text + tail]
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
        message_answers: tuple[str, ...] = (),
        *,
        root: Path | None = None,
    ) -> Editor:
        """``message_answers``: what the user picks in the daemon's first showMessageRequests
        (some come as soon as the editor is initialized); ``root``: the folder the editor opens
        (by default the workspace; a symlink to it names its files otherwise)."""
        config = ClientServerConfig(server_command=[LSPILOT, "serve"], server_env=env)
        client = cast(LanguageClient, await config.start())
        clients.append(client)
        editor = Editor(client)
        editor.message_answers.extend(message_answers)
        options = {"lspilot": lspilot} if lspilot is not None else None
        capabilities = client_capabilities(spec)
        if not shows_documents and capabilities.window is not None:
            capabilities.window.show_document = None
        if not file_operations and capabilities.workspace and capabilities.workspace.workspace_edit:
            capabilities.workspace.workspace_edit.resource_operations = None
        await client.initialize_session(
            types.InitializeParams(
                capabilities=capabilities,
                root_uri=(root or workspace).as_uri(),
                workspace_folders=[types.WorkspaceFolder((root or workspace).as_uri(), "ws")],
                initialization_options=options,
            )
        )
        return editor

    yield start
    for client in clients:
        await client.shutdown_session()


FULL = {"review": True, "permissions": True}


class RawEditor:
    """An editor speaking raw JSON-RPC to a `lspilot serve` process, byte for byte."""

    def __init__(self, proc: asyncio.subprocess.Process, env: dict[str, str]) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self.proc, self.stdin, self.stdout, self.env = proc, proc.stdin, proc.stdout, env
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
            ),
            env,
        )

    def send(self, message: dict[str, Any]) -> None:
        self.stdin.write(serve.frame({"jsonrpc": "2.0", **message}))

    def send_body(self, body: bytes) -> None:
        self.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def initialize(self, workspace: Path) -> None:
        """Open ``workspace``, which its user trusts (`lspilot trust`, in this daemon's data dir)."""
        trusting = await asyncio.create_subprocess_exec(
            LSPILOT, "trust", "--root", str(workspace), stdout=asyncio.subprocess.DEVNULL, env=self.env
        )
        assert await trusting.wait() == 0
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
