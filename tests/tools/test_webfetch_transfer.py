"""The webfetch tool against a real HTTP server on 127.0.0.1: redirects, HTTP errors, the size cap,
timeouts and stopping a download."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest

from tools import Reply, ToolContext, execute
from tools.webfetch import _same_site  # pyright: ignore[reportPrivateUsage]

from .conftest import Harness
from .webfetch_server import Server, fetch, serving


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    with serving(monkeypatch) as state:
        yield state


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
