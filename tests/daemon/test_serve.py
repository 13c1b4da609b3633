"""`lspilot serve` end to end, the protocol: initialize, asks streamed and redrawn, cancels, and
what the editor sends wrong (malformed arguments or params, bytes that are no message)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import client_capabilities

from daemon import serve
from daemon.scripted_model import ScriptedModel, Turn
from daemon.server import build
from daemon.store import Store
from tests.conftest import data_dir

from .serving import FULL, Editor, RawEditor, connect, workspace

__all__ = ["connect", "workspace"]  # the fixtures, shared with the other test_serve_* files


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
    with pytest.raises(Exception, match=r"no session 'nope'"):
        await editor.command("lspilot.history", {"sessionId": "nope"})
    assert await editor.command("lspilot.sessions") == []


async def test_the_history_of_another_workspaces_session_is_refused(
    connect: Callable[..., Any], tmp_path: Path
) -> None:
    # lspilot.history returned any session by its id, whatever project it belongs to.
    other = tmp_path / "other"
    other.mkdir()
    store = Store(data_dir() / "lspilot.db")
    session = store.create_session(other.resolve(), title="another project's session")
    store.close()
    editor: Editor = await connect("neovim", FULL)
    with pytest.raises(Exception, match=f"session {session} belongs to {other.resolve()}"):
        await editor.command("lspilot.history", {"sessionId": session})


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
        editor.send_body(b"[" * 100_000)  # json gives up on it with a RecursionError
        answer = await editor.answer(None)
        assert answer["error"] == {"code": -32700, "message": "not JSON: nested too deeply"}
        for depth in range(950, 1000):  # around the stack's limit, pygls's object hook runs out
            editor.send_body(b'{"a":' * depth + b"1" + b"}" * depth)
            assert (await editor.answer(None))["error"]["code"] in (-32700, -32600)
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
