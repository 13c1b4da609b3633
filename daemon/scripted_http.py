"""The scripted model's HTTP side: a threaded localhost server, and the handler answering each
request with the next turn of its :class:`~daemon.scripted_model.ScriptedModel` as OpenAI's chat
completions (``daemon/scripted_openai.py``) or Anthropic's Messages API
(``daemon/scripted_anthropic.py``) would, streamed or not, stalled, cut or failing as scripted.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, cast

from . import scripted_anthropic as anthropic
from . import scripted_openai as openai

if TYPE_CHECKING:
    from .scripted_model import ScriptedModel, Turn

log = logging.getLogger("daemon.scripted_model")

JSON = dict[str, Any]


class ScriptedServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, model: ScriptedModel) -> None:
        self.model = model
        self._handlers: list[tuple[threading.Thread, socket.socket]] = []
        self._handlers_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self.process_request_thread,
            args=(request, client_address),
            name="scripted-model-request",
            daemon=True,
        )
        with self._handlers_lock:
            self._handlers = [(t, s) for t, s in self._handlers if t.is_alive()]
            self._handlers.append((thread, request))
        thread.start()

    def handler_threads(self) -> list[threading.Thread]:
        with self._handlers_lock:
            return [t for t, _ in self._handlers]

    def drop_connections(self) -> None:
        """Shut down every open connection, which ends stalls and blocked reads at once."""
        with self._handlers_lock:
            handlers = list(self._handlers)
        for thread, conn in handlers:
            if thread.is_alive():
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.exception("scripted model: error while serving %s", client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    @property
    def scripted(self) -> ScriptedModel:
        return cast(ScriptedServer, self.server).model

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("scripted model: " + format, *args)

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            listed = {"id": self.scripted.model, "object": "model", "owned_by": "lspilot"}
            self._json(200, {"object": "list", "data": [listed]})
        elif self.path.rstrip("/") == "/requests":  # for tests in other processes (see main())
            self._json(200, self.scripted.state())
        else:
            self._json(404, openai.error_body(404, f"No route GET {self.path}", "not_found"))

    def do_POST(self) -> None:
        if self.path.rstrip("/") == "/turns":  # append turns described in JSON (see main())
            try:
                length = int(self.headers.get("Content-Length", 0))
                remaining = self.scripted.push_json(json.loads(self.rfile.read(length)))
            except (ValueError, TypeError, KeyError) as error:
                self._json(400, openai.error_body(400, f"Bad turns: {error}", None))
                return
            self._json(200, {"remaining": remaining})
            return
        route = self.path.split("?", 1)[0].rstrip("/")
        anthropic = route.endswith("/messages")
        if not anthropic and route not in ("/v1/chat/completions", "/chat/completions"):
            self._json(404, openai.error_body(404, f"No route POST {self.path}", "not_found"))
            return
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        except ValueError as error:
            self._json(400, openai.error_body(400, f"Request body is not JSON: {error}", None))
            return
        self.close_connection = True  # one request per connection, so stop() never waits on keep-alive
        model = self.scripted
        turn, number = model.next_turn(body)
        if anthropic:
            self._anthropic(turn, body, number)
            return
        try:
            if isinstance(turn, str):
                self._json(500, openai.error_body(500, turn, "script_exhausted"))
                return
            if (refused := openai.check(body)) is not None:
                message, param, code = refused
                self._json(400, openai.error_body(400, message, code, param))
                return
            if turn.delay and model.stopping.wait(turn.delay):
                return  # stopped meanwhile: drop the connection unanswered
            if turn.error is not None:
                headers = {} if turn.retry_after is None else {"Retry-After": _header(turn.retry_after)}
                self._json(
                    turn.error, openai.error_body(turn.error, turn.error_message, turn.error_code), headers
                )
            elif body.get("stream"):
                self._stream(turn, body, number)
            else:
                if turn.stall_after_chunks is not None:
                    model.stall(self.connection)
                    return
                self._json(200, openai.completion(turn, body, number))
        except OSError as error:
            log.debug("scripted model: connection lost: %r", error)

    def _anthropic(self, turn: Turn | str, body: JSON, number: int) -> None:
        """Answer as Anthropic's Messages API does (daemon/scripted_anthropic.py)."""
        try:
            if isinstance(turn, str):
                self._json(500, anthropic.error_body(500, turn))
            elif (problem := anthropic.check(body)) is not None:
                self._json(400, anthropic.error_body(400, problem))
            elif turn.error is not None:
                headers = {} if turn.retry_after is None else {"Retry-After": _header(turn.retry_after)}
                self._json(turn.error, anthropic.error_body(turn.error, turn.error_message), headers)
            elif body.get("stream"):
                self._open_stream()
                for name, event in anthropic.events(turn, body, number):
                    self._send_chunked(f"event: {name}\ndata: {json.dumps(event)}\n\n".encode())
                self.wfile.write(b"0\r\n\r\n")
            else:
                self._json(200, anthropic.message(turn, body, number))
        except OSError as error:
            log.debug("scripted model: connection lost: %r", error)

    def _json(self, status: int, payload: JSON, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.close_connection = True
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _open_stream(self) -> None:
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()

    def _stream(self, turn: Turn, body: JSON, number: int) -> None:
        self._open_stream()
        usage_wanted = bool((body.get("stream_options") or {}).get("include_usage"))
        events = openai.chunks(turn, body, number, usage_wanted)
        for sent, event in enumerate(events):
            if sent == turn.stall_after_chunks:
                self.scripted.stall(self.connection)
                return
            if sent == turn.cut_after_chunks:
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self._send_chunked(f"data: {json.dumps(event)}\n\n".encode())
        if turn.stall_after_chunks is not None:  # asked to stall after everything: before [DONE]
            self.scripted.stall(self.connection)
            return
        self._send_chunked(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")

    def _send_chunked(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")


def _header(retry_after: float | str) -> str:
    return retry_after if isinstance(retry_after, str) else f"{retry_after:g}"
