"""A real HTTP server on 127.0.0.1 (stdlib, in a thread; no internet) for the webfetch tests: its
routes serve pages, images, redirects, huge and stalling bodies."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tools import Outcome, Reply

from .conftest import Harness

PAGE = b"""<!doctype html>
<html><head><title>Fixture page</title><style>body { color: red }</style>
<script>var secret = "SCRIPT-CONTENT";</script></head>
<body>
<h1>Main   Title</h1>
<p>Read the <a href="https://example.org/docs">the docs</a> first &amp; then
the rest.</p>
<noscript>NOSCRIPT-CONTENT</noscript>
<h2>Details</h2>
<ul><li>one</li><li>two</li></ul>
<pre>def f():
    return 1</pre>
<script>alert("SCRIPT-CONTENT")</script>
</body></html>
"""
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63f8cfc0f01f0005000201a0b1a0e30000000049454e44ae426082"
)
SIX_MB = 6 * 1024 * 1024


@dataclass
class Server:
    base: str
    paths: list[str] = field(default_factory=list[str])
    headers: list[dict[str, str]] = field(default_factory=list[dict[str, str]])
    #: Set by /slow-body once the first bytes are out, and once the client has gone away.
    body_started: threading.Event = field(default_factory=threading.Event)
    client_gone: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)

    def url(self, path: str) -> str:
        return self.base + path


def _handler(server: Server) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            del format, args

        def send(self, status: int, body: bytes, content_type: str, **headers: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in headers.items():
                self.send_header(name.replace("_", "-"), value)
            self.end_headers()
            self.wfile.write(body)

        def wait_for_client_to_leave(self) -> None:
            self.wfile.flush()
            if self.connection.recv(1) == b"":
                server.client_gone.set()

        def do_GET(self) -> None:
            server.paths.append(self.path)
            server.headers.append(dict(self.headers.items()))
            route = ROUTES.get(self.path.partition("?")[0])
            if route is None:
                self.send(404, b"not here", "text/plain")
            else:
                route(self, server)

    return Handler


def _page(h: Any, s: Server) -> None:
    h.send(200, PAGE, "text/html; charset=utf-8")


def _plain(h: Any, s: Server) -> None:
    h.send(200, b"plain <b>text</b>\n  indented line\n", "text/plain; charset=utf-8")


def _latin1(h: Any, s: Server) -> None:
    h.send(
        200, '<html><head><meta charset="iso-8859-1"></head><p>café</p></html>'.encode("latin-1"), "text/html"
    )


def _utf16(h: Any, s: Server) -> None:
    """A UTF-16 file served as UTF-8, as raw file hosts do."""
    h.send(200, "caf\u00e9 \u2713\n".encode("utf-16"), "text/plain; charset=utf-8")


def _old_page(h: Any, s: Server) -> None:
    """An old page's 600 unclosed list items, each nested in the one before by the parser."""
    h.send(200, ("<ul>" + "<li>item" * 600 + "</ul><p>THE END</p>").encode(), "text/html")


def _huge_page(h: Any, s: Server) -> None:
    """1.2 MB of HTML: seconds of markdownify on a slow machine."""
    body = "<html><body>" + "<p>para <b>bold</b></p>" * 50_000 + "</body></html>"
    h.send(200, body.encode(), "text/html")


def _charset(name: str) -> Callable[[Any, Server], None]:
    def send(h: Any, s: Server) -> None:
        h.send(200, b"C:\\new\\table caf\xc3\xa9", f"text/plain; charset={name}")

    return send


def _png(h: Any, s: Server) -> None:
    h.send(200, PNG, "image/png")


def _pdf(h: Any, s: Server) -> None:
    h.send(200, b"%PDF-1.4\x00\x01\x02binary", "application/pdf")


def _redirect(h: Any, s: Server) -> None:
    h.send(302, b"", "text/plain", Location="/hop")


def _hop(h: Any, s: Server) -> None:
    h.send(301, b"", "text/plain", Location="/page.html")


def _elsewhere(h: Any, s: Server) -> None:
    """To the same server under another name: another site as far as the user's approval goes."""
    h.send(302, b"", "text/plain", Location=s.url("/page.html").replace("127.0.0.1", "localhost"))


def _loop(h: Any, s: Server) -> None:
    h.send(302, b"", "text/plain", Location="/loop")


def _big_declared(h: Any, s: Server) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "text/plain")
    h.send_header("Content-Length", str(SIX_MB))
    h.end_headers()
    h.wait_for_client_to_leave()  # the body is never sent: the header alone must stop the fetch


def _big_chunked(h: Any, s: Server) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "text/plain")
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    chunk = b"x" * 65536
    try:
        for _ in range(1024):  # 64 MB: far more than local socket buffers can absorb
            h.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        h.wfile.write(b"0\r\n\r\n")
    except OSError:
        s.client_gone.set()


def _stall(h: Any, s: Server) -> None:
    s.release.wait()


def _slow_body(h: Any, s: Server) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "text/plain")
    h.send_header("Content-Length", "1000000")
    h.end_headers()
    h.wfile.write(b"first bytes\n")
    h.wfile.flush()
    s.body_started.set()
    h.wait_for_client_to_leave()


ROUTES: dict[str, Callable[[Any, Server], None]] = {
    "/page.html": _page,
    "/plain.txt": _plain,
    "/latin1": _latin1,
    "/utf16": _utf16,
    "/old.html": _old_page,
    "/idna": _charset("idna"),
    "/escape": _charset("unicode_escape"),
    "/huge.html": _huge_page,
    "/pixel.png": _png,
    "/doc.pdf": _pdf,
    "/redirect": _redirect,
    "/hop": _hop,
    "/elsewhere": _elsewhere,
    "/loop": _loop,
    "/big-declared": _big_declared,
    "/big-chunked": _big_chunked,
    "/stall": _stall,
    "/slow-body": _slow_body,
}


class _Quiet(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Clients that hang up mid-response are what several tests are about."""


@contextlib.contextmanager
def serving(monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    state = Server(base="")
    httpd = _Quiet(("127.0.0.1", 0), _handler(state))
    state.base = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        httpd.shutdown()
        httpd.server_close()


async def fetch(harness: Harness, **args: Any) -> Outcome:
    """One call with the user approving it once."""
    harness.human.replies.append(Reply("once"))
    return await harness.call("webfetch", args)
