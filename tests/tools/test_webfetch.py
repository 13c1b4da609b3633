"""The webfetch tool against a real HTTP server on 127.0.0.1 (stdlib, in a thread; no internet)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from tools import Outcome, Reply, ToolContext, execute
from tools.webfetch import _same_site  # pyright: ignore[reportPrivateUsage]

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


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    state = Server(base="")
    httpd = _Quiet(("127.0.0.1", 0), _handler(state))
    state.base = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield state
    state.release.set()
    httpd.shutdown()
    httpd.server_close()


async def fetch(harness: Harness, **args: Any) -> Outcome:
    """One call with the user approving it once."""
    harness.human.replies.append(Reply("once"))
    return await harness.call("webfetch", args)


async def test_html_becomes_markdown_without_scripts(harness: Harness, server: Server) -> None:
    url = server.url("/page.html")
    outcome = await fetch(harness, url=url)
    assert outcome.error is None, outcome.error
    assert outcome.result is not None
    text = outcome.result.output
    assert "# Main Title" in text
    assert "## Details" in text
    assert "[the docs](https://example.org/docs)" in text
    assert "- one\n- two" in text
    assert "SCRIPT-CONTENT" not in text
    assert "NOSCRIPT-CONTENT" not in text
    assert "color: red" not in text
    assert outcome.result.title == f"{url} (text/html)"
    meta = outcome.result.metadata
    assert meta["url"] == url
    assert meta["finalUrl"] == url
    assert meta["status"] == 200
    assert meta["contentType"] == "text/html; charset=utf-8"
    assert meta["bytes"] == len(PAGE)


async def test_permission_is_asked_for_the_url(harness: Harness, server: Server) -> None:
    url = server.url("/page.html?q=1")
    await fetch(harness, url=url)
    [request] = harness.human.asked
    assert request.permission == "webfetch"
    assert request.patterns == [url]
    assert request.always == [f"{server.base}/*"]


async def test_rejected_permission_fetches_nothing(harness: Harness, server: Server) -> None:
    url = server.url("/page.html")
    outcome = await harness.call("webfetch", {"url": url})  # the scripted human rejects by default
    assert outcome.result is None
    assert outcome.error is not None
    assert "rejected webfetch" in outcome.error
    assert url in outcome.error
    assert outcome.stops_turn
    assert server.paths == []


async def test_text_format_strips_tags_and_scripts(harness: Harness, server: Server) -> None:
    outcome = await fetch(harness, url=server.url("/page.html"), format="text")
    assert outcome.result is not None, outcome.error
    text = outcome.result.output
    assert "Main Title" in text
    assert "Read the the docs first & then the rest." in text
    assert "one\ntwo" in text
    assert "def f():\n    return 1" in text
    assert "<" not in text
    assert "SCRIPT-CONTENT" not in text
    assert "color: red" not in text


async def test_html_format_returns_the_page_as_served(harness: Harness, server: Server) -> None:
    outcome = await fetch(harness, url=server.url("/page.html"), format="html")
    assert outcome.result is not None, outcome.error
    assert outcome.result.output == PAGE.decode()


@pytest.mark.parametrize(
    ("fmt", "preferred"), [("markdown", "text/markdown"), ("text", "text/plain"), ("html", "text/html")]
)
async def test_request_headers_prefer_the_format(
    harness: Harness, server: Server, fmt: str, preferred: str
) -> None:
    await fetch(harness, url=server.url("/page.html"), format=fmt)
    [headers] = server.headers
    assert headers["Accept"].startswith(f"{preferred};q=1.0")
    assert "lspilot" in headers["User-Agent"]


async def test_plain_text_passes_through(harness: Harness, server: Server) -> None:
    outcome = await fetch(harness, url=server.url("/plain.txt"))
    assert outcome.result is not None, outcome.error
    assert outcome.result.output == "plain <b>text</b>\n  indented line\n"
    assert outcome.result.title.endswith("(text/plain)")


async def test_charset_from_meta_tag(harness: Harness, server: Server) -> None:
    outcome = await fetch(harness, url=server.url("/latin1"), format="text")
    assert outcome.result is not None, outcome.error
    assert outcome.result.output == "café"


async def test_image_comes_back_as_attachment(harness: Harness, server: Server) -> None:
    outcome = await fetch(harness, url=server.url("/pixel.png"))
    assert outcome.result is not None, outcome.error
    [attachment] = outcome.result.attachments
    assert attachment.mime == "image/png"
    assert attachment.data == PNG
    assert attachment.filename == "pixel.png"


async def test_binary_content_is_an_error(harness: Harness, server: Server) -> None:
    outcome = await fetch(harness, url=server.url("/doc.pdf"))
    assert outcome.error is not None
    assert "binary content (application/pdf" in outcome.error


async def test_redirects_are_followed(harness: Harness, server: Server) -> None:
    url = server.url("/redirect")
    outcome = await fetch(harness, url=url)
    assert outcome.result is not None, outcome.error
    assert server.paths == ["/redirect", "/hop", "/page.html"]
    assert outcome.result.metadata["finalUrl"] == server.url("/page.html")
    assert outcome.result.output.startswith(f"(Redirected to {server.url('/page.html')})")
    assert "# Main Title" in outcome.result.output


async def test_a_redirect_to_another_site_is_reported_not_followed(harness: Harness, server: Server) -> None:
    url = server.url("/elsewhere")
    outcome = await fetch(harness, url=url)
    assert outcome.result is not None, outcome.error
    assert server.paths == ["/elsewhere"]  # the other site was never asked
    target = server.url("/page.html").replace("127.0.0.1", "localhost")
    assert outcome.result.metadata["redirectTo"] == target
    assert outcome.result.output.startswith(f"{url} redirects (HTTP 302) to another site: {target}\n")
    assert "call webfetch again with that URL" in outcome.result.output
    [request] = harness.human.asked
    assert request.patterns == [url]


@pytest.mark.parametrize(
    ("before", "after", "same"),
    [
        ("http://a.example/x", "http://a.example/y?z", True),
        ("http://a.example/x", "https://a.example/x", True),  # the usual upgrade to https
        ("https://a.example/x", "http://a.example/x", False),  # a downgrade is another site
        ("http://a.example:8080/x", "https://a.example/x", False),
        ("https://a.example/x", "https://a.example:8443/x", False),
        ("https://a.example/x", "https://b.a.example/x", False),
        ("https://a.example/x", "https://A.EXAMPLE:443/y", True),
    ],
)
def test_the_site_a_redirect_may_stay_on(before: str, after: str, same: bool) -> None:
    assert _same_site(httpx.URL(before), httpx.URL(after)) is same


async def test_endless_redirects_stop(harness: Harness, server: Server) -> None:
    url = server.url("/loop")
    outcome = await fetch(harness, url=url)
    assert outcome.error == f"{url} redirected more than 10 times; giving up."
    assert server.paths == ["/loop"] * 11


async def test_http_error_names_the_status(harness: Harness, server: Server) -> None:
    url = server.url("/nothing-here")
    outcome = await fetch(harness, url=url)
    assert outcome.result is None
    assert outcome.error == (
        f"Fetching {url} failed with HTTP 404 Not Found. "
        "The page does not exist; check the URL or search for the page's current address."
    )


async def test_declared_size_over_the_cap_is_refused_before_the_body(
    harness: Harness, server: Server
) -> None:
    outcome = await fetch(harness, url=server.url("/big-declared"))
    assert outcome.error is not None
    assert "too large to fetch (6.0 MB; the limit is 5 MB)" in outcome.error
    assert await asyncio.to_thread(server.client_gone.wait, 30)


async def test_streamed_size_over_the_cap_stops_the_download(harness: Harness, server: Server) -> None:
    outcome = await fetch(harness, url=server.url("/big-chunked"))
    assert outcome.error is not None
    assert "too large to fetch (more than 5 MB; the limit is 5 MB)" in outcome.error
    assert await asyncio.to_thread(server.client_gone.wait, 30)


async def test_timeout_is_honoured(harness: Harness, server: Server) -> None:
    url = server.url("/stall")
    outcome = await fetch(harness, url=url, timeout=0.5)
    assert outcome.error is not None
    assert outcome.error.startswith(f"Fetching {url} timed out after 0.5 s.")


async def test_abort_stops_the_download(harness: Harness, server: Server) -> None:
    harness.human.replies.append(Reply("once"))
    ctx = ToolContext(harness.env, "call-abort")
    call = asyncio.create_task(execute(harness.registry, "webfetch", {"url": server.url("/slow-body")}, ctx))
    assert await asyncio.to_thread(server.body_started.wait, 30)
    ctx.abort.set()
    outcome = await call
    assert outcome.error == "Cancelled by the user."
    assert await asyncio.to_thread(server.client_gone.wait, 30)


async def test_cancelling_the_task_stops_the_download(harness: Harness, server: Server) -> None:
    harness.human.replies.append(Reply("once"))
    tool = harness.registry.get("webfetch")
    assert tool is not None
    params = tool.Params.model_validate({"url": server.url("/slow-body")})
    call = asyncio.create_task(tool.run(params, ToolContext(harness.env, "call-cancel")))
    assert await asyncio.to_thread(server.body_started.wait, 30)
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert await asyncio.to_thread(server.client_gone.wait, 30)


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://127.0.0.1/file", "127.0.0.1/page", "http://"])
async def test_only_http_urls_are_fetched(harness: Harness, url: str) -> None:
    outcome = await harness.call("webfetch", {"url": url})
    assert outcome.error is not None
    assert "http://" in outcome.error
    assert harness.human.asked == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            {"url": "https://example.org", "timeout": 121},
            "timeout: Input should be less than or equal to 120",
        ),
        ({"url": "https://example.org", "timeout": 0}, "timeout: Input should be greater than 0"),
        (
            {"url": "https://example.org", "format": "pdf"},
            "format: Input should be 'markdown', 'text' or 'html'",
        ),
        ({"url": "https://example.org", "headers": {}}, "headers: Extra inputs are not permitted"),
        ({}, "url: Field required"),
    ],
)
async def test_invalid_arguments_are_explained(harness: Harness, args: dict[str, Any], message: str) -> None:
    outcome = await harness.call("webfetch", args)
    assert outcome.error is not None
    assert outcome.error.startswith("The webfetch tool was called with invalid arguments:")
    assert message in outcome.error
    assert harness.human.asked == []
