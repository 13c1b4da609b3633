"""`lspilot serve`: answer the editor's ``initialize`` at once, then hand the stream to pygls.

Editors wait for ``initialize`` before anything else, and importing pygls and lsprotocol alone
takes longer than the 0.3 s an editor should wait. So this module (standard library only) reads
the first message, answers ``initialize`` with the capabilities the pygls server will have, then
imports the server and replays the same message to it, dropping pygls's own (identical) answer.
A test keeps the two capability sets equal.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any, BinaryIO, Protocol

from . import jsontext

log = logging.getLogger(__name__)

NAME = "lspilot"
VERSION = "0.1.0"
COMMANDS = (
    "lspilot.ask",
    "lspilot.cancel",
    "lspilot.sessions",
    "lspilot.history",
    "lspilot.navigate",
    "lspilot.follow",
    "lspilot.resolve",
)
#: Columns between lspilot and its editors count UTF-16 units, whatever else a client offers
#: (Neovim offers UTF-8 first): both plugins and VS Code send and read them so.
POSITION_ENCODING = "utf-16"


def capabilities(params: dict[str, Any]) -> dict[str, Any]:
    """What the server offers a client that sent these ``initialize`` params."""
    client = params.get("capabilities") or {}
    sync: dict[str, Any] = {"openClose": True, "change": 1}
    client_sync = (client.get("textDocument") or {}).get("synchronization") or {}
    for will in ("willSave", "willSaveWaitUntil"):  # pygls says False to clients that offer these
        if client_sync.get(will):
            sync[will] = False
    return {
        "positionEncoding": POSITION_ENCODING,
        "textDocumentSync": sync | {"save": False},
        "codeActionProvider": {"codeActionKinds": ["quickfix", "refactor"]},
        "executeCommandProvider": {"commands": list(COMMANDS)},
        "workspace": {
            "workspaceFolders": {"supported": True, "changeNotifications": True},
            "fileOperations": {},
        },
    }


def initialize_result(params: dict[str, Any]) -> dict[str, Any]:
    return {"capabilities": capabilities(params), "serverInfo": {"name": NAME, "version": VERSION}}


def read_message(stream: BinaryIO) -> bytes:
    """One framed message, headers included, exactly as read (b"" at end of input)."""
    raw = b""
    length: int | None = None
    while line := stream.readline():
        raw += line
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("ascii", "replace").partition(":")
        if name.strip().lower() == "content-length" and value.strip().isdigit():
            length = int(value)
    return raw + stream.read(length) if length else raw


def body(message: bytes) -> dict[str, Any] | None:
    _, _, content = message.partition(b"\r\n\r\n")
    try:
        parsed = jsontext.loads(content)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None  # pyright: ignore[reportUnknownVariableType]


def frame(message: dict[str, Any]) -> bytes:
    content = json.dumps(message, separators=(",", ":")).encode()
    return b"Content-Length: %d\r\n\r\n" % len(content) + content


class Readable(Protocol):
    def readline(self) -> bytes: ...

    def read(self, n: int, /) -> bytes: ...


class Writable(Protocol):
    def write(self, data: bytes, /) -> Any: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


class Replay:
    """stdin for pygls: the bytes already read, then the rest of the real stream."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self.head = head
        self.rest = rest

    def readline(self) -> bytes:
        if self.head:
            line, sep, self.head = self.head.partition(b"\n")
            return line + sep
        return self.rest.readline()

    def read(self, n: int) -> bytes:
        if self.head:
            chunk, self.head = self.head[:n], self.head[n:]
            return chunk + (self.rest.read(n - len(chunk)) if len(chunk) < n else b"")
        return self.rest.read(n)


class DropEarlyAnswer:
    """stdout for pygls: drops its answer to the ``initialize`` already answered here, and logs it
    if its capabilities differ from the early ones (the test suite checks they never do)."""

    def __init__(self, out: BinaryIO, answered: dict[str, Any] | None) -> None:
        self.out = out
        self.answered = answered
        self.dropped: dict[str, Any] | None = None

    def write(self, data: bytes) -> None:
        if self.answered is not None and self.dropped is None:
            message = body(data)
            if message is not None and message.get("id") == self.answered["id"] and "method" not in message:
                self.dropped = message
                if message.get("result") != self.answered["result"]:
                    log.warning("early initialize answer differs from pygls's: %s", message.get("result"))
                return
        self.out.write(data)
        self.out.flush()

    def flush(self) -> None:
        self.out.flush()

    def close(self) -> None:
        self.out.close()


def _own_stdout() -> BinaryIO:
    """The JSON-RPC stream, on a descriptor of its own; file descriptor 1 (``sys.stdout``, and the
    stdout that child processes inherit) goes to stderr from now on, so nothing else that prints
    can land in the middle of a message."""
    sys.stdout.flush()
    transport = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return transport


def main() -> int:
    stdin, stdout = sys.stdin.buffer, _own_stdout()
    first = read_message(stdin)
    request = body(first)
    answered = None
    if request is not None and request.get("method") == "initialize" and "id" in request:
        answered = {"id": request["id"], "result": initialize_result(request.get("params") or {})}
        stdout.write(frame({"jsonrpc": "2.0", **answered}))
        stdout.flush()
    from .server import serve  # noqa: PLC0415 - the heavy part, after the editor has its answer

    return serve(Replay(first, stdin), DropEarlyAnswer(stdout, answered))
