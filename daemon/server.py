"""The pygls language server behind `lspilot serve`: LSP in, ``Hub`` calls out.

Handlers stay short: they turn LSP params into a ``Hub`` call and its errors into JSON-RPC errors.
The protocol is documented in docs/protocol.md.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Awaitable, Callable, Generator
from pathlib import Path
from typing import Any, BinaryIO, NoReturn, cast

from cattrs.errors import ClassValidationError
from cattrs.v import transform_error
from lsprotocol import types
from pygls.exceptions import (
    FeatureRequestError,
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
    JsonRpcServerNotInitialized,
)
from pygls.io_ import StdinAsyncReader, StdoutWriter, run_async
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import RPCRequest
from pygls.protocol.language_server import lsp_method

from lsp_bridge.documents import uri_to_path

from . import jsontext, model, stopping, trust
from .editor import Editor, EditorLog
from .hub import AskArgs, CommandError, FollowArgs, Hub, NavigateArgs, ResolveArgs, SessionArgs, parse
from .names import EditorNames
from .serve import NAME, POSITION_ENCODING, VERSION, Readable, Writable

log = logging.getLogger(__name__)

#: The workDoneToken of the executeCommand request being handled (set before its handler starts).
_progress_token: contextvars.ContextVar[Any] = contextvars.ContextVar("progress_token", default=None)


class Protocol(LanguageServerProtocol):
    #: A ``shutdown`` request has arrived: later requests are refused (pygls's own flag is set
    #: only once its handler has finished).
    shut_down = False

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Generator[Any, Any, Any]:
        """pygls would take the client's first position encoding (Neovim's is UTF-8); lspilot's
        columns are UTF-16 with every editor (``POSITION_ENCODING``)."""
        general = params.capabilities.general
        if general is not None:
            general.position_encodings = [POSITION_ENCODING]
        return (yield from super().lsp_initialize(params))

    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(self, params: types.ExecuteCommandParams) -> Any:
        _progress_token.set(params.work_done_token)
        return (yield from super().lsp_workspace__execute_command(params))

    def structure_message(self, data: dict[str, Any]) -> Any:
        """A request whose params do not fit its method is answered with an invalid-params error
        naming the problem. (pygls raises while the JSON is parsed, before it knows the message is
        a request: the editor got no answer and waited forever.)"""
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            if "id" not in data or "method" not in data or "error" in data:
                raise
            cause = error.__cause__
            problems = transform_error(cause) if isinstance(cause, ClassValidationError) else [str(error)]
            message = f"invalid params for {data['method']}: {'; '.join(problems)}"
            log.info("%s (request %r)", message, data["id"])
            self._send_response(data["id"], error=types.ResponseError(JsonRpcInvalidParams.CODE, message))
            return ANSWERED

    def handle_message(self, message: Any) -> None:
        """Also answers what pygls drops without a word: JSON that is not a message object, and
        requests after ``shutdown`` (LSP: they fail with InvalidRequest)."""
        if message is ANSWERED:
            return
        if not hasattr(message, "jsonrpc"):  # pygls structures only objects with "jsonrpc"
            found = message.get("id") if isinstance(message, dict) else None
            request_id = found if isinstance(found, str | int) else None  # pyright: ignore[reportUnknownVariableType]
            self.send_error(
                request_id, JsonRpcInvalidRequest.CODE, 'not a JSON-RPC message (no "jsonrpc": "2.0")'
            )
            return
        if isinstance(message, RPCRequest):
            if self.shut_down:
                refused = f"{message.method} after shutdown: lspilot is stopping and only takes exit now"
                self.send_error(message.id, JsonRpcInvalidRequest.CODE, refused)
                return
            if message.method == types.SHUTDOWN:
                self.shut_down = True
        super().handle_message(message)

    def send_error(self, request_id: str | int | None, code: int, message: str) -> None:
        """An error answer; an unknown request id is sent as null, as JSON-RPC wants (pygls's own
        error answers leave a null id out)."""
        log.info("answered with error %d: %s (request %r)", code, message, request_id)
        self._send_data({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})

    def _handle_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        """The editor's answer to a request lspilot cancelled (its turn was cancelled, or
        ``lspilot.resolve`` settled the review) is dropped: the editor was already answering.
        pygls set it on the cancelled future and logged an InvalidStateError traceback."""
        future = self._request_futures.get(msg_id)
        if future is not None and future.done():
            del self._request_futures[msg_id]
            log.debug("dropped the editor's answer to request %r, which lspilot had cancelled", msg_id)
            return
        super()._handle_response(msg_id, result, error)

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        server = self._server
        if isinstance(server, Server) and server.hub is not None:
            server.hub.cancel_request(msg_id)
        super()._handle_cancel_notification(msg_id)


#: What ``Protocol.structure_message`` returns for a request it has already answered with an error.
ANSWERED = object()


class ExpectedErrors(logging.Filter):
    """pygls logs every error answer, and every message it could not read, at ERROR with its
    traceback. An invalid-params answer (a ``CommandError``: bad arguments, an unknown session) or
    a message that is not JSON is the editor's mistake, already told to the editor: it goes to the
    log as one INFO line."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        read = record.name == READER_LOG  # the reader's json.loads, not a handler
        if isinstance(error, JsonRpcInvalidParams) or _not_json(error, read):
            record.msg, record.args = f"{record.getMessage()}: {error}", ()
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.exc_info, record.exc_text = None, None
        return True


def _not_json(error: BaseException | None, read: bool) -> bool:
    """Whether ``error`` is json's for a body that is not JSON, or nested deeper than Python reads
    (``read``: raised while the reader parsed a body, where pygls's object hook may be the one
    that runs out of stack)."""
    return isinstance(error, json.JSONDecodeError | UnicodeDecodeError) or (
        isinstance(error, RecursionError) and (read or "JSON" in str(error))
    )


_EXPECTED_ERRORS = ExpectedErrors()
READER_LOG = f"{__name__}.reader"  # pygls's loop reading the editor's messages logs there


class Server(LanguageServer):
    hub: Hub | None = None

    def report_server_error(self, error: Exception, source: Any) -> None:
        """pygls pops these up in the editor ("Error in server: ..."): a message from the editor that
        is not JSON, or a notification whose handler failed. The user can do nothing about either:
        they go to the log, which the editor's log mirrors as ``window/logMessage``. (A failed
        request is answered with its error, as pygls does; a message that is not JSON with a
        parse error whose id is null, as JSON-RPC wants.)"""
        if source is FeatureRequestError:
            return
        if _not_json(error, source is JsonRpcException):  # pygls's json.loads of a body
            why = "nested too deeply" if isinstance(error, RecursionError) else error
            cast(Protocol, self.protocol).send_error(None, JsonRpcParseError.CODE, f"not JSON: {why}")
        log.warning("could not handle a message from the editor (%s): %s", source.__name__, error)

    def the_hub(self) -> Hub:
        if self.hub is None:
            raise JsonRpcServerNotInitialized("lspilot has no workspace yet: initialize first")
        return self.hub


def _command(server: Server, name: str) -> Callable[[Callable[[Hub, tuple[Any, ...]], Awaitable[Any]]], None]:
    """Register ``name``; ``CommandError`` becomes an invalid-params JSON-RPC error naming the problem."""

    def register(handler: Callable[[Hub, tuple[Any, ...]], Awaitable[Any]]) -> None:
        async def run(*args: Any) -> Any:
            try:
                return await handler(server.the_hub(), args)
            except CommandError as error:
                raise JsonRpcInvalidParams(str(error)) from None

        server.command(name)(run)

    return register


def build() -> Server:
    for name in ("pygls.protocol.json_rpc", READER_LOG):
        logging.getLogger(name).addFilter(_EXPECTED_ERRORS)  # added once
    server = Server(
        NAME, VERSION, protocol_cls=Protocol, text_document_sync_kind=types.TextDocumentSyncKind.Full
    )

    @server.feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams) -> None:
        options = (params.initialization_options or {}).get("lspilot") or {}
        folders = params.workspace_folders or []
        uri = folders[0].uri if folders else params.root_uri
        root = uri_to_path(uri) if uri else Path(params.root_path or Path.cwd())
        flags = (bool(options.get(name)) for name in ("review", "permissions", "questions"))
        editor = Editor(server, *flags, names=EditorNames(root))
        server.hub = Hub(root.resolve(), editor)
        if options.get("follow"):
            if editor.shows_documents():
                server.hub.follower.enabled = True
            else:
                log.warning("follow is on, but this editor cannot show documents (window/showDocument)")
        log.info(
            "serving %s (review=%s, permissions=%s, questions=%s, follow=%s)",
            root,
            editor.review,
            editor.permissions,
            editor.questions,
            server.hub.follower.enabled,
        )

    @server.feature(types.INITIALIZED)
    async def initialized(_params: types.InitializedParams) -> None:
        model.warm()  # litellm takes seconds to import: start now, not at the first ask
        hub = server.hub
        if hub is not None and await trust.offer_in_editor(hub.root, hub.editor):
            try:  # the configuration and tools now: what is wrong with them is told at once
                hub.runtime  # noqa: B018 - reading it loads them
            except CommandError as error:
                log.warning("%s", error)

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        document = params.text_document
        server.the_hub().buffer_changed(document.uri, document.text, document.version)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        text = server.workspace.get_text_document(uri).source
        server.the_hub().buffer_changed(uri, text, params.text_document.version)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        server.the_hub().buffer_closed(params.text_document.uri)

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(
            code_action_kinds=[types.CodeActionKind.QuickFix, types.CodeActionKind.Refactor]
        ),
    )
    def code_action(params: types.CodeActionParams) -> list[types.CodeAction]:
        return code_actions(params)

    @server.feature(types.SHUTDOWN)
    async def shutdown(_params: None) -> None:
        if server.hub is not None:
            await server.hub.close()

    @_command(server, "lspilot.ask")
    async def ask(hub: Hub, args: tuple[Any, ...]) -> Any:
        request_id = server.protocol.msg_id
        return await hub.ask(parse(AskArgs, "lspilot.ask", args), request_id, _progress_token.get())

    @_command(server, "lspilot.cancel")
    async def cancel(hub: Hub, args: tuple[Any, ...]) -> Any:
        return hub.cancel(parse(SessionArgs, "lspilot.cancel", args).sessionId)

    @_command(server, "lspilot.sessions")
    async def sessions(hub: Hub, args: tuple[Any, ...]) -> Any:
        return hub.sessions()

    @_command(server, "lspilot.history")
    async def history(hub: Hub, args: tuple[Any, ...]) -> Any:
        return hub.history(parse(SessionArgs, "lspilot.history", args))

    @_command(server, "lspilot.navigate")
    async def navigate(hub: Hub, args: tuple[Any, ...]) -> Any:
        return await hub.navigate(parse(NavigateArgs, "lspilot.navigate", args))

    @_command(server, "lspilot.follow")
    async def follow(hub: Hub, args: tuple[Any, ...]) -> Any:
        return hub.follow(parse(FollowArgs, "lspilot.follow", args))

    @_command(server, "lspilot.resolve")
    async def resolve(hub: Hub, args: tuple[Any, ...]) -> Any:
        return hub.resolve(parse(ResolveArgs, "lspilot.resolve", args))

    return server


def code_actions(params: types.CodeActionParams) -> list[types.CodeAction]:
    """ "Fix with lspilot" on each diagnostic in range; "Ask lspilot about this" on a selection."""
    uri = params.text_document.uri
    actions: list[types.CodeAction] = []
    for diagnostic in params.context.diagnostics:
        where = {"uri": uri, "range": _range(diagnostic.range)}
        source = f" ({diagnostic.source})" if diagnostic.source else ""
        prompt = f"Fix this problem reported at the selected code: {diagnostic.message}{source}"
        actions.append(
            types.CodeAction(
                f"Fix with lspilot: {next(iter(diagnostic.message.splitlines()), '')[:60]}".rstrip(": "),
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                command=types.Command(
                    "Fix with lspilot", "lspilot.ask", arguments=[{"prompt": prompt, "context": where}]
                ),
            )
        )
    if params.range.start != params.range.end:
        where = {"uri": uri, "range": _range(params.range)}
        prompt = "Explain the selected code: what it does, how it is used, and any problems in it."
        actions.append(
            types.CodeAction(
                "Ask lspilot about this",
                kind=types.CodeActionKind.Refactor,
                command=types.Command(
                    "Ask lspilot", "lspilot.ask", arguments=[{"prompt": prompt, "context": where}]
                ),
            )
        )
    return actions


def _range(r: types.Range) -> dict[str, Any]:
    return {
        "start": {"line": r.start.line, "character": r.start.character},
        "end": {"line": r.end.line, "character": r.end.character},
    }


class UnicodeWriter(StdoutWriter):
    """pygls's writer, with every message valid Unicode JSON (``jsontext``): a file name that is
    not UTF-8 in a tool's metadata made Neovim drop the whole message."""

    def write(self, data: bytes) -> None:
        super().write(jsontext.valid_frame(data))


def serve(stdin: Readable, stdout: Writable) -> int:
    """Serve until the editor says exit or goes away; either way, turns and language servers stop."""
    server = build()
    # The model thread prepares requests in pure Python; hand the interpreter back to the editor's
    # requests within 0.2 ms instead of the default 5.
    sys.setswitchinterval(0.0002)

    async def main() -> None:
        server.protocol.set_writer(UnicodeWriter(cast(BinaryIO, stdout)))
        mirror = EditorLog(server, asyncio.get_running_loop())
        logging.getLogger().addHandler(mirror)
        try:
            await run_async(
                stop_event=threading.Event(),
                reader=StdinAsyncReader(cast(BinaryIO, stdin), server.thread_pool),
                protocol=server.protocol,
                logger=logging.getLogger(READER_LOG),
                error_handler=server.report_server_error,
            )
        finally:
            logging.getLogger().removeHandler(mirror)
            if server.hub is not None:
                await server.hub.close()

    try:
        stopping.run(main())
    except BrokenPipeError:
        log.warning("the editor closed the connection")
    except SystemExit as stop:  # the `exit` notification
        return int(stop.code or 0)
    except stopping.Stopped as stopped:  # SIGTERM or SIGHUP: turns and language servers stopped first
        _leave(str(stopped), stopped.status)
    except KeyboardInterrupt:  # Ctrl-C on a daemon started by hand: the same, once it has unwound
        _leave("stopped by SIGINT", 128 + signal.SIGINT)
    return 0


def _leave(why: str, status: int) -> NoReturn:
    """Exit now. The thread reading stdin is blocked in a read that nothing can wake while the
    editor keeps the pipe open, and the interpreter would wait for it at exit: leave without it."""
    log.info("%s", why)
    logging.shutdown()
    os._exit(status)
