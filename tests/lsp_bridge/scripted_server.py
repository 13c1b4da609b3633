"""A tiny stdio language server for protocol edge cases no real server produces on demand.

For every ``textDocument/definition`` request with id N it first sends two requests of its own
that reuse id N (``window/workDoneProgress/create``, then ``workspace/configuration``), waits for
the client's answers, and only then answers N with a location at the top of the file. JSON-RPC
ids are per sender, so this is legal; a client that keeps its own pending requests and the
server's requests in one table keyed by id loses its request and waits forever.

It also registers a ``**/*.py`` file watcher (with ``--late-watch``, only when asked
``scripted/watch``, as tsgo registers its watchers once it has built a project) and answers
``scripted/received`` with the
didChange and didChangeWatchedFiles notifications it got, as ``[method, uris]`` pairs (the URI
of a deleted file with a ``-`` before it).

workspace/symbol answers the query as a function declared in ``gone.py`` at the workspace's
root, a file that is not there; documentSymbol answers nothing.

A hover asks the client for the ``scripted`` settings (``workspace/configuration``), then answers
with its process id, those settings and the text it has of the document (what the client sent).

Pull diagnostics answer at once (an error for each line containing ``ERR``), except for a
document whose text contains ``HANG``: that request is answered only when the client cancels it.

With ``--push`` it publishes diagnostics instead, without versions, the way
typescript-language-server does: a change first gets, at once, a publish of the previous text's
diagnostics, then one second later the new text's (an error for each line containing ``ERR``);
an opened document gets its publish after that second too.

With ``--pyright-logs`` it logs "Found N source files" as the pyright family does: once
initialized, and at once on reading a didChangeWatchedFiles that creates or deletes a file (as
pyright's rescan timer does on a loaded machine, before it reads the next message).

Faults: a definition request in a document containing ``GARBAGE`` gets a header without a
Content-Length, in one containing ``NOTJSON`` a body that is no JSON object, in one containing
``ELSEWHERE`` a line past its end and a file that does not exist; ``--banner`` prints a line to
stdout before speaking LSP; ``--long-stderr`` writes lines of 300 kB to stderr (more than a pipe
holds) before it starts; ``--mute`` never answers ``initialize``, ``--refuse``
answers it with an error. Opening a document containing ``BUSY`` begins a ``$/progress`` that
never ends. ``--crash`` exits with code 3 at the first definition or pull diagnostics request;
``--hang`` answers those only when they are cancelled.

Run: python scripted_server.py [--push] [FAULT...]  (speaks LSP on stdin/stdout)
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

BACKLOG: list[dict[str, Any]] = []  # messages that arrived while waiting for an answer
RECEIVED: list[tuple[str, list[str]]] = []
TEXTS: dict[str, str] = {}  # uri -> text (full sync)
ROOT: list[str] = []  # the workspace's URI, once initialized
HANGING: set[int | str] = set()  # pull requests left unanswered until cancelled


def read() -> dict[str, Any] | None:
    if BACKLOG:
        return BACKLOG.pop(0)
    length = 0
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode().partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    return json.loads(sys.stdin.buffer.read(length))


def send(message: dict[str, Any]) -> None:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    sys.stdout.buffer.flush()


def ask_client(msg_id: int | str, method: str, params: dict[str, Any]) -> Any:
    """Send a request with ``msg_id`` and wait for the client's answer to it; its result."""
    send({"id": msg_id, "method": method, "params": params})
    waiting: list[dict[str, Any]] = []
    while (message := read()) is not None:
        if message.get("id") == msg_id and "method" not in message:
            BACKLOG[:0] = waiting
            return message.get("result")
        waiting.append(message)
    sys.exit(0)


WATCH_PY = {
    "registrations": [
        {
            "id": "watch",
            "method": "workspace/didChangeWatchedFiles",
            "registerOptions": {"watchers": [{"globPattern": "**/*.py"}]},
        }
    ]
}


PUSH = "--push" in sys.argv


def errors(text: str) -> list[dict[str, Any]]:
    return [
        {
            "range": {"start": {"line": n, "character": 0}, "end": {"line": n, "character": 1}},
            "message": "ERR",
        }
        for n, line in enumerate(text.split("\n"))
        if "ERR" in line
    ]


def publish(uri: str, text: str) -> None:
    send({"method": "textDocument/publishDiagnostics", "params": {"uri": uri, "diagnostics": errors(text)}})


def faulty(msg_id: int | str | None) -> bool:
    """Act out ``--crash`` or ``--hang`` on a request; True if it is not to be answered now."""
    if "--crash" in sys.argv:
        sys.exit(3)
    if "--hang" in sys.argv:
        assert msg_id is not None
        HANGING.add(msg_id)
        return True
    return False


def opened(item: dict[str, Any]) -> None:
    TEXTS[item["uri"]] = item["text"]
    if "BUSY" in item["text"]:  # a load that never ends
        begin = {"kind": "begin", "title": "load"}
        send({"method": "$/progress", "params": {"token": "load", "value": begin}})
    if PUSH:
        time.sleep(1)
        publish(item["uri"], item["text"])


def initialize(msg_id: int | str, root_uri: str) -> None:
    ROOT.append(root_uri)
    if "--mute" in sys.argv:
        return
    if "--refuse" in sys.argv:
        send({"id": msg_id, "error": {"code": -32603, "message": "cannot start here"}})
        return
    capabilities: dict[str, Any] = {
        "definitionProvider": True,
        "hoverProvider": True,
        "textDocumentSync": 1,
        "workspaceSymbolProvider": True,
        "documentSymbolProvider": True,
    }
    if not PUSH:
        capabilities["diagnosticProvider"] = {"interFileDependencies": False, "workspaceDiagnostics": False}
    send({"id": msg_id, "result": {"capabilities": capabilities}})


def definition(msg_id: int, uri: str) -> None:
    if "GARBAGE" in TEXTS.get(uri, ""):
        sys.stdout.buffer.write(b"garbage\r\n\r\n")
        sys.stdout.buffer.flush()
        return
    if "NOTJSON" in TEXTS.get(uri, ""):
        body = b"{not json" if "ARRAY" not in TEXTS[uri] else b"[1, 2]"
        sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        sys.stdout.buffer.flush()
        return
    if "ELSEWHERE" in TEXTS.get(uri, ""):  # a file that is not there, a line past the end
        far = {"start": {"line": 50, "character": 7}, "end": {"line": 50, "character": 9}}
        gone = {"start": {"line": 3, "character": 3}, "end": {"line": 3, "character": 5}}
        send({"id": msg_id, "result": [{"uri": uri, "range": far}, {"uri": uri + ".gone", "range": gone}]})
        return
    ask_client(msg_id, "window/workDoneProgress/create", {"token": f"t{msg_id}"})
    ask_client(msg_id, "workspace/configuration", {"items": [{"section": "scripted"}]})
    span = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}
    send({"id": msg_id, "result": [{"uri": uri, "range": span}]})


def hover(msg_id: int | str, uri: str) -> None:
    [settings] = ask_client(msg_id, "workspace/configuration", {"items": [{"section": "scripted"}]})
    value = f"pid {os.getpid()}, settings {json.dumps(settings)}, text {TEXTS.get(uri)!r}"
    send({"id": msg_id, "result": {"contents": {"kind": "plaintext", "value": value}}})


def watch(message: dict[str, Any]) -> None:
    """Register the watcher when initialized, or when asked ``scripted/watch`` with ``--late-watch``."""
    if (message["method"] == "scripted/watch") == ("--late-watch" in sys.argv):
        ask_client("register", "client/registerCapability", WATCH_PY)
    if message["method"] == "initialized":
        log_found()
    else:
        send({"id": message["id"], "result": None})


def symbols(message: dict[str, Any]) -> None:
    if message["method"] == "textDocument/documentSymbol":
        send({"id": message["id"], "result": []})
        return
    span = {"start": {"line": 0, "character": 4}, "end": {"line": 0, "character": 9}}
    where = {"uri": f"{ROOT[0]}/gone.py", "range": span}
    found = {"name": message["params"]["query"], "kind": 12, "location": where}
    send({"id": message["id"], "result": [found]})


def log_found() -> None:
    if "--pyright-logs" in sys.argv:
        found = {"type": 4, "message": "Found 1 source file"}
        send({"method": "window/logMessage", "params": found})


def misbehave_at_start() -> None:
    if "--banner" in sys.argv:
        sys.stdout.write("scripted server starting\n")
    if "--long-stderr" in sys.argv:
        for _ in range(2):
            sys.stderr.write("x" * 300_000 + "\n")
        sys.stderr.flush()


def main() -> None:
    misbehave_at_start()
    while (message := read()) is not None:
        method, msg_id = message.get("method"), message.get("id")
        if method == "initialize":
            assert msg_id is not None
            initialize(msg_id, message["params"]["rootUri"])
        elif method in ("initialized", "scripted/watch"):
            watch(message)
        elif method == "textDocument/didOpen":
            opened(message["params"]["textDocument"])
        elif method == "textDocument/didChange":
            uri = message["params"]["textDocument"]["uri"]
            if PUSH:
                publish(uri, TEXTS[uri])  # what it had found in the previous text
            TEXTS[uri] = message["params"]["contentChanges"][-1]["text"]
            RECEIVED.append((method, [uri]))
            if PUSH:
                time.sleep(1)
                publish(uri, TEXTS[uri])
        elif method == "textDocument/diagnostic":
            text = TEXTS.get(message["params"]["textDocument"]["uri"], "")
            if "HANG" in text:
                assert msg_id is not None
                HANGING.add(msg_id)
            elif not faulty(msg_id):
                send({"id": msg_id, "result": {"kind": "full", "items": errors(text)}})
        elif method == "$/cancelRequest" and message["params"]["id"] in HANGING:
            HANGING.discard(message["params"]["id"])
            send({"id": message["params"]["id"], "error": {"code": -32800, "message": "cancelled"}})
        elif method == "workspace/didChangeWatchedFiles":
            changes = message["params"]["changes"]
            RECEIVED.append((method, [("-" if c["type"] == 3 else "") + c["uri"] for c in changes]))
            if any(c["type"] != 2 for c in changes):
                log_found()
        elif method == "scripted/received":
            send({"id": msg_id, "result": RECEIVED})
        elif method == "textDocument/definition":
            assert isinstance(msg_id, int)
            if not faulty(msg_id):
                definition(msg_id, message["params"]["textDocument"]["uri"])
        elif method == "textDocument/hover":
            hover(message["id"], message["params"]["textDocument"]["uri"])
        elif method in ("workspace/symbol", "textDocument/documentSymbol"):
            symbols(message)
        elif method == "shutdown":
            send({"id": msg_id, "result": None})
        elif method == "exit":
            return
        elif msg_id is not None and method is not None:
            send({"id": msg_id, "error": {"code": -32601, "message": f"no {method}"}})


if __name__ == "__main__":
    main()
