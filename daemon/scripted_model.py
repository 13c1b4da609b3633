"""A fake OpenAI-compatible chat server that replays scripted turns, for tests and the offline demo.

Real litellm talks HTTP to it exactly as it would to a provider: ``POST /v1/chat/completions``,
streamed (server-sent ``chat.completion.chunk`` events, a usage chunk when
``stream_options.include_usage`` asks for one, then ``[DONE]``; ``daemon/scripted_openai.py``
makes them, ``daemon/scripted_http.py`` serves them) or not. Each request consumes the
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
from types import TracebackType
from typing import Any, cast

from .scripted_http import ScriptedServer

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
    retry_after: float | str | None = None  # sent as a Retry-After header (a str as it is)
    delay: float = 0.0
    stall_after_chunks: int | None = None
    cut_after_chunks: int | None = None

    @classmethod
    def rate_limited(cls, retry_after: float | str | None = 1.0) -> Turn:
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
        self._server: ScriptedServer | None = None
        self._thread: threading.Thread | None = None
        self.stopping = threading.Event()

    # lifecycle

    def start(self) -> str:
        if self._server is not None:
            return self.api_base
        self.stopping.clear()
        self._server = ScriptedServer(self)
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
        self.stopping.set()
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

    # serving (called from the request threads of daemon/scripted_http.py)

    def state(self) -> JSON:
        """What ``GET /requests`` answers: the requests so far, script problems, turns left."""
        with self._lock:
            state = {"requests": list(self.requests), "errors": list(self.errors)}
        return state | {"remaining": self.remaining}

    def push_json(self, data: Any) -> int:
        """Append turns in their JSON form (``POST /turns``); how many are left to serve."""
        self.push(*turns_from_json(data))
        return self.remaining

    def next_turn(self, body: JSON) -> tuple[Turn | str, int]:
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

    def stall(self, conn: socket.socket) -> None:
        """Hold the connection until the client closes it or the server stops (which shuts it down)."""
        while not self.stopping.is_set():
            select.select([conn], [], [])
            try:
                if not conn.recv(4096):  # EOF; bytes the client sends meanwhile are dropped
                    return
            except OSError:
                return


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
