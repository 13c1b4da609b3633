"""A fake OpenAI-compatible chat server that replays scripted turns, for tests and the offline demo.

Real litellm talks HTTP to it exactly as it would to a provider: ``POST /v1/chat/completions``,
streamed (server-sent ``chat.completion.chunk`` events, a usage chunk when
``stream_options.include_usage`` asks for one, then ``[DONE]``; ``daemon/scripted_openai.py``
makes them) or not. Each request consumes the
next :class:`Turn` of the script; a turn can also be a function of the request body. Every request
body is kept in :attr:`ScriptedModel.requests` so a test can assert what the model was sent.
``POST /v1/messages`` answers the same turns in Anthropic's Messages API, checking the request as
Anthropic does (``daemon/scripted_anthropic.py``; give litellm the api_base without ``/v1``).

For tests in other languages (the VS Code extension's node tests) it also runs as a process::

    python -m daemon.scripted_model SCRIPT.json

SCRIPT.json is a list of turns (or ``{"turns": [...]}``), each an object with :class:`Turn`'s fields;
``tool_calls`` are ``[name, arguments]`` pairs. The first line on stdout is the api_base; the
process serves until stdin closes or it gets SIGTERM/SIGINT. ``GET /requests`` answers
``{requests, errors, remaining}``; ``POST /turns`` appends more turns (same JSON).

It is stdlib only and serves from its own threads, so it works while the caller's event loop is
busy awaiting ``litellm.acompletion`` in the same process::

    with ScriptedModel([Turn(tool_calls=[("read", {"path": "a.py"})]), Turn(text="Done.")]) as model:
        await litellm.acompletion(model="openai/scripted", api_base=model.api_base, api_key="sk-fake", ...)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import select
import signal
import socket
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, cast

from . import scripted_anthropic as anthropic
from . import scripted_openai as openai

log = logging.getLogger(__name__)

JSON = dict[str, Any]
ToolCallScript = tuple[str, dict[str, Any] | str]  # (tool name, arguments)

OVERFLOW_MESSAGE = (
    "This model's maximum context length is 128000 tokens. However, your messages resulted in "
    "131072 tokens. Please reduce the length of the messages."
)


@dataclass
class Usage:
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0  # reported as usage.prompt_tokens_details.cached_tokens


@dataclass
class Turn:
    """One scripted answer. With ``error`` set, the request fails with that HTTP status instead.

    ``tool_calls`` are ``(name, arguments)``; a dict is sent as JSON, a string verbatim (so a test
    can script malformed arguments). ``stall_after_chunks=N`` sends N stream events (N=0: only the
    response head) and then holds the connection open until the client goes away or the server
    stops; for a non-streamed request any value stalls before the answer. ``cut_after_chunks=N``
    sends N stream events and then closes the connection in the middle of the stream (a broken
    stream, which the client retries). ``delay`` waits that many seconds before answering (cut
    short by ``stop()``).
    """

    text: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCallScript] = field(default_factory=list[ToolCallScript])
    usage: Usage | None = None
    finish_reason: str | None = None  # default: "tool_calls" when there are any, else "stop"
    error: int | None = None
    error_message: str | None = None
    error_code: str | None = None
    retry_after: float | None = None  # sent as a Retry-After header
    delay: float = 0.0
    stall_after_chunks: int | None = None
    cut_after_chunks: int | None = None

    @classmethod
    def rate_limited(cls, retry_after: float | None = 1.0) -> Turn:
        return cls(error=429, retry_after=retry_after)

    @classmethod
    def server_error(cls, status: int = 500) -> Turn:
        return cls(error=status)

    @classmethod
    def context_overflow(cls) -> Turn:
        return cls(error=400, error_code="context_length_exceeded", error_message=OVERFLOW_MESSAGE)


Script = Turn | Callable[[JSON], Turn]


class ScriptedModel:
    """Serves ``turns`` one per chat request, in order, on an ephemeral localhost port."""

    def __init__(self, turns: Sequence[Script] = (), model: str = "scripted") -> None:
        self.turns: list[Script] = list(turns)
        self.model = model
        self.requests: list[JSON] = []  # every chat request body received, in order
        self.errors: list[str] = []  # script problems (ran out, a turn function raised)
        self._lock = threading.Lock()
        self._served = 0
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    # lifecycle

    def start(self) -> str:
        if self._server is not None:
            return self.api_base
        self._stopping.clear()
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="scripted-model",
            daemon=True,
        )
        self._thread.start()
        log.debug("scripted model serving at %s", self.api_base)
        return self.api_base

    def stop(self) -> None:
        """Stop serving; stalled and delayed answers end at once (their connections are dropped)."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        self._stopping.set()
        server.shutdown()  # no new connections after this
        server.drop_connections()
        server.server_close()
        thread.join()
        for handler in server.handler_threads():
            handler.join(timeout=5)
            if handler.is_alive():
                log.warning("scripted model: a request handler did not end")
        self._server = self._thread = None

    def __enter__(self) -> ScriptedModel:
        self.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def api_base(self) -> str:
        if self._server is None:
            raise RuntimeError("ScriptedModel is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def push(self, *turns: Script) -> None:
        """Append turns to the script (also while serving)."""
        with self._lock:
            self.turns.extend(turns)

    @property
    def remaining(self) -> int:
        with self._lock:
            return max(0, len(self.turns) - self._served)

    def assert_done(self) -> None:
        """Fail if the script had problems or some turns were never asked for."""
        assert not self.errors, f"scripted model: {self.errors}"
        assert self.remaining == 0, f"scripted model: {self.remaining} scripted turns were never requested"

    # serving (called from handler threads)

    def _next(self, body: JSON) -> tuple[Turn | str, int]:
        """The turn answering ``body`` (or why there is none) and the request's 1-based number."""
        with self._lock:
            self.requests.append(body)
            index = self._served
            self._served += 1
            script = self.turns[index] if index < len(self.turns) else None
        if script is None:
            problem = (
                f"ScriptedModel: script exhausted: request #{index + 1} arrived but only "
                f"{len(self.turns)} turns were scripted"
            )
        elif isinstance(script, Turn):
            return script, index + 1
        else:
            try:
                return script(body), index + 1
            except Exception as error:  # a bug in the test's turn function: report, keep serving
                problem = f"ScriptedModel: turn function #{index + 1} raised {error!r}"
        with self._lock:
            self.errors.append(problem)
        log.error("%s", problem)
        return problem, index + 1

    def _stall(self, conn: socket.socket) -> None:
        """Hold the connection until the client closes it or the server stops (which shuts it down)."""
        while not self._stopping.is_set():
            select.select([conn], [], [])
            try:
                if not conn.recv(4096):  # EOF; bytes the client sends meanwhile are dropped
                    return
            except OSError:
                return


class _Server(ThreadingHTTPServer):
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
        return cast(_Server, self.server).model

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("scripted model: " + format, *args)

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            listed = {"id": self.scripted.model, "object": "model", "owned_by": "lspilot"}
            self._json(200, {"object": "list", "data": [listed]})
        elif self.path.rstrip("/") == "/requests":  # for tests in other processes (see main())
            model = self.scripted
            with model._lock:
                state = {"requests": list(model.requests), "errors": list(model.errors)}
            self._json(200, state | {"remaining": model.remaining})
        else:
            self._json(404, openai.error_body(404, f"No route GET {self.path}", "not_found"))

    def do_POST(self) -> None:
        if self.path.rstrip("/") == "/turns":  # append turns described in JSON (see main())
            try:
                length = int(self.headers.get("Content-Length", 0))
                turns = turns_from_json(json.loads(self.rfile.read(length)))
            except (ValueError, TypeError, KeyError) as error:
                self._json(400, openai.error_body(400, f"Bad turns: {error}", None))
                return
            self.scripted.push(*turns)
            self._json(200, {"remaining": self.scripted.remaining})
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
        turn, number = model._next(body)
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
            if turn.delay and model._stopping.wait(turn.delay):
                return  # stopped meanwhile: drop the connection unanswered
            if turn.error is not None:
                headers = {} if turn.retry_after is None else {"Retry-After": f"{turn.retry_after:g}"}
                self._json(
                    turn.error, openai.error_body(turn.error, turn.error_message, turn.error_code), headers
                )
            elif body.get("stream"):
                self._stream(turn, body, number)
            else:
                if turn.stall_after_chunks is not None:
                    model._stall(self.connection)
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
                headers = {} if turn.retry_after is None else {"Retry-After": f"{turn.retry_after:g}"}
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
                self.scripted._stall(self.connection)
                return
            if sent == turn.cut_after_chunks:
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            self._send_chunked(f"data: {json.dumps(event)}\n\n".encode())
        if turn.stall_after_chunks is not None:  # asked to stall after everything: before [DONE]
            self.scripted._stall(self.connection)
            return
        self._send_chunked(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")

    def _send_chunked(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")


def turn_from_json(data: JSON) -> Turn:
    """A :class:`Turn` from its JSON form (``tool_calls`` as ``[name, arguments]`` pairs)."""
    values = dict(data)
    calls: list[ToolCallScript] = []
    for call in values.pop("tool_calls", []):
        name, arguments = (call["name"], call["arguments"]) if isinstance(call, dict) else call
        calls.append((str(name), arguments))
    usage = values.pop("usage", None)
    return Turn(**values, tool_calls=calls, usage=Usage(**usage) if usage else None)


def turns_from_json(data: Any) -> list[Turn]:
    items = data.get("turns", []) if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise TypeError('a script is a list of turns or {"turns": [...]}')
    return [turn_from_json(cast(JSON, item)) for item in cast(list[Any], items)]


def main(argv: Sequence[str] | None = None) -> None:
    """Serve a JSON script until stdin closes or a signal; print the api_base first."""
    parser = argparse.ArgumentParser(prog="python -m daemon.scripted_model", description=main.__doc__)
    parser.add_argument("script", nargs="?", help="JSON file: a list of turns or {turns: [...]}")
    parser.add_argument("--model", default="scripted")
    args = parser.parse_args(argv)
    turns: list[Turn] = []
    if args.script:
        with open(args.script, encoding="utf-8") as file:
            turns = turns_from_json(json.load(file))
    done = threading.Event()

    def wait_for_stdin_eof() -> None:
        with contextlib.suppress(OSError, ValueError):
            while os.read(sys.stdin.fileno(), 4096):
                pass
        done.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: done.set())
    with ScriptedModel(turns, model=args.model) as model:
        print(model.api_base, flush=True)
        threading.Thread(target=wait_for_stdin_eof, name="stdin-watch", daemon=True).start()
        done.wait()


if __name__ == "__main__":
    main()
