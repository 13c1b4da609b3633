"""The webfetch tool against a real HTTP server on 127.0.0.1: permission, formats and content
types, URLs and arguments (redirects, sizes, timeouts and stops: test_webfetch_transfer.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .conftest import Harness
from .webfetch_server import PAGE, PNG, Server, fetch, serving


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    with serving(monkeypatch) as state:
        yield state


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


async def test_a_page_nested_too_deeply_for_markdown_is_plain_text(harness: Harness, server: Server) -> None:
    # markdownify recursed once per level: "The webfetch tool failed unexpectedly (RecursionError)".
    outcome = await fetch(harness, url=server.url("/old.html"))
    assert outcome.result is not None, outcome.error
    text = outcome.result.output
    assert text.startswith("(The page nests too deeply to be made markdown; here it is as plain text.)")
    assert "item" in text and "THE END" in text


async def test_a_page_over_a_megabyte_of_html_is_plain_text(harness: Harness, server: Server) -> None:
    # markdownify took 9 s a megabyte here, past the fetch's timeout, in a thread no one could stop.
    outcome = await fetch(harness, url=server.url("/huge.html"))
    assert outcome.result is not None, outcome.error
    note = "(The page is over 1 MB of HTML: shown as plain text.)"
    assert outcome.result.output.startswith(f"{note}\n\npara bold")


@pytest.mark.parametrize("route", ["/idna", "/escape"])
async def test_a_charset_that_is_no_web_charset_is_read_as_utf8(
    harness: Harness, server: Server, route: str
) -> None:
    # charset=idna failed ("The webfetch tool failed unexpectedly (UnicodeError"), and
    # charset=unicode_escape turned the backslashes of C:\new\table into a newline and a tab.
    outcome = await fetch(harness, url=server.url(route))
    assert outcome.result is not None, outcome.error
    assert outcome.result.output == "C:\\new\\table café"


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


async def test_a_byte_order_mark_decides_the_encoding(harness: Harness, server: Server) -> None:
    # The header said UTF-8; the UTF-16 body came back as U+FFFD and letters spaced by NULs.
    outcome = await fetch(harness, url=server.url("/utf16"))
    assert outcome.result is not None and outcome.result.output == "caf\u00e9 \u2713\n"


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
