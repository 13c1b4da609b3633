"""The ``webfetch`` tool: fetch one http(s) URL and return it as markdown, plain text or html.

Asks the ``webfetch`` permission for the URL first. Redirects are followed within the site the
user allowed (same host and port; http may become https); a redirect to another site is not
followed but reported, so fetching it is a new call with its own ask. The download is bounded
(5 MB, at most 120 s, 10 redirects); cancelling the task (``execute`` does on ``ctx.abort``)
closes the connection.
HTML is converted with markdownify or a small text extractor (``_html.py``); other text passes through; common
image types come back as an attachment.
"""

from __future__ import annotations

import asyncio
import codecs
import re
from contextlib import aclosing
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Literal
from urllib.parse import SplitResult, unquote, urlsplit

import httpx
from pydantic import BaseModel, ConfigDict, Field

from ._html import html_to_markdown, html_to_text
from .base import Attachment, Tool, ToolError, ToolResult
from .context import ToolContext
from .permission import PermissionRequest

Format = Literal["markdown", "text", "html"]

MAX_BYTES = 5 * 1024 * 1024
DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 120.0
MAX_REDIRECTS = 10
#: Longest HTML made markdown (markdownify takes seconds a megabyte, and cannot be stopped);
#: a longer page is made plain text, which takes a fraction of that.
MAX_MARKDOWN_HTML = 1_000_000

USER_AGENT = "Mozilla/5.0 (compatible; lspilot-webfetch/0.1)"
ACCEPT: dict[Format, str] = {
    "markdown": "text/markdown;q=1.0, text/x-markdown;q=0.9, text/plain;q=0.8, text/html;q=0.7, */*;q=0.1",
    "text": "text/plain;q=1.0, text/markdown;q=0.9, text/html;q=0.8, */*;q=0.1",
    "html": "text/html;q=1.0, application/xhtml+xml;q=0.9, text/plain;q=0.8, text/markdown;q=0.7, */*;q=0.1",
}

HTML_TYPES = {"text/html", "application/xhtml+xml"}
IMAGE_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp"}
TEXT_TYPES = {
    "application/json",
    "application/xml",
    "application/javascript",
    "application/x-javascript",
    "application/ecmascript",
    "application/x-ndjson",
    "application/yaml",
    "application/x-yaml",
    "application/toml",
    "application/x-sh",
    "application/sql",
    "application/graphql",
    "image/svg+xml",
}


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(description="The full http:// or https:// URL to fetch.")
    format: Format = Field(
        default="markdown",
        description="How to return an HTML page: markdown (default), text (no markup) or html (as served).",
    )
    timeout: float | None = Field(
        default=None,
        gt=0,
        le=MAX_TIMEOUT,
        description=f"Seconds for the whole fetch (default {DEFAULT_TIMEOUT:g}, at most {MAX_TIMEOUT:g}).",
    )


@dataclass
class Page:
    url: str
    final_url: str
    status: int
    content_type: str
    media_type: str
    charset: str | None
    body: bytes
    #: Where the server sent us on another site, not followed (the body is then empty).
    elsewhere: str | None = None


class WebFetch(Tool[Params]):
    id = "webfetch"
    Params = Params
    permission = "webfetch"

    async def run(self, params: Params, ctx: ToolContext) -> ToolResult:
        url = params.url.strip()
        parts = _check_url(url)
        await ctx.ask(
            PermissionRequest(
                "webfetch",
                patterns=[url],
                always=[f"{parts.scheme.lower()}://{_host(parts)}/*"],
                title=f"Fetch {url}",
                metadata={"url": url, "format": params.format},
            )
        )
        ctx.metadata(url, {"url": url})
        timeout = params.timeout or DEFAULT_TIMEOUT
        try:
            async with asyncio.timeout(timeout):  # the conversion too: "the whole fetch"
                page = await _download(url, params.format, timeout)
                return await _result(page, params.format)
        except TimeoutError:
            raise ToolError(_timed_out(url, timeout)) from None


def _check_url(url: str) -> SplitResult:
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("http", "https"):
        hint = " To read a local file use the read tool." if parts.scheme.lower() == "file" else ""
        raise ToolError(f"webfetch fetches http:// and https:// URLs only, not {url!r}.{hint}")
    try:
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as error:
        raise ToolError(f"{url!r} is not a valid URL ({error}).") from None
    if not host:
        raise ToolError(f"{url!r} has no host name; give a full URL such as https://example.com/page.")
    return parts


def _host(parts: SplitResult) -> str:
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    return f"{host}:{parts.port}" if parts.port else host


def _timed_out(url: str, timeout: float) -> str:
    return (
        f"Fetching {url} timed out after {timeout:g} s. The server may be slow or unreachable; "
        f"retry with a larger timeout (at most {MAX_TIMEOUT:g}) or try another source."
    )


def _too_large(url: str, size: int, exact: bool) -> str:
    amount = f"{size / 1024 / 1024:.1f} MB" if exact else "more than 5 MB"
    return (
        f"{url} is too large to fetch ({amount}; the limit is {MAX_BYTES // 1024 // 1024} MB). "
        "Look for a smaller page, an API endpoint, or a raw file that covers what you need."
    )


def _site(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80)


def _same_site(before: httpx.URL, after: httpx.URL) -> bool:
    """``after`` is on the site the user allowed for ``before``: the same host and port, or the
    same host moved from http to https on the default ports."""
    if _site(before) == _site(after):
        return True
    upgrade = ("http", before.host, 80), ("https", before.host, 443)
    return (_site(before), _site(after)) == upgrade


async def _open(client: httpx.AsyncClient, url: str) -> httpx.Response:
    """The response at the end of ``url``'s redirects within its site, streaming; a redirect to
    another site comes back unfollowed (``response.next_request`` says where)."""
    request = client.build_request("GET", url)
    for _hop in range(MAX_REDIRECTS + 1):
        response = await client.send(request, stream=True)
        following = response.next_request
        if following is None or not _same_site(request.url, following.url):
            return response
        await response.aclose()
        request = following
    raise httpx.TooManyRedirects("too many redirects", request=request)


async def _download(url: str, fmt: Format, timeout: float) -> Page:
    headers = {"User-Agent": USER_AGENT, "Accept": ACCEPT[fmt], "Accept-Language": "en;q=0.9, *;q=0.5"}
    client = httpx.AsyncClient(headers=headers, timeout=timeout)
    try:
        async with client, aclosing(await _open(client, url)) as response:
            if response.next_request is not None:
                return _redirected_elsewhere(url, response)
            _check_status(url, response)
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > MAX_BYTES:
                raise ToolError(_too_large(url, int(declared), exact=True))
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > MAX_BYTES:
                    raise ToolError(_too_large(url, size, exact=False))
                chunks.append(chunk)
            content_type = response.headers.get("content-type", "")
            return Page(
                url=url,
                final_url=str(response.url),
                status=response.status_code,
                content_type=content_type,
                media_type=content_type.partition(";")[0].strip().lower(),
                charset=response.charset_encoding,
                body=b"".join(chunks),
            )
    except httpx.TimeoutException:
        raise ToolError(_timed_out(url, timeout)) from None
    except httpx.TooManyRedirects:
        raise ToolError(f"{url} redirected more than {MAX_REDIRECTS} times; giving up.") from None
    except httpx.ConnectError as error:
        raise ToolError(
            f"Could not connect to {urlsplit(url).hostname} ({error or type(error).__name__}). "
            "Check the host name, or try again later."
        ) from None
    except httpx.HTTPError as error:
        raise ToolError(f"Fetching {url} failed: {error or type(error).__name__}.") from None
    except httpx.InvalidURL as error:
        raise ToolError(f"{url!r} is not a valid URL ({error}).") from None


def _redirected_elsewhere(url: str, response: httpx.Response) -> Page:
    assert response.next_request is not None
    return Page(
        url=url,
        final_url=str(response.url),
        status=response.status_code,
        content_type="",
        media_type="",
        charset=None,
        body=b"",
        elsewhere=str(response.next_request.url),
    )


def _check_status(url: str, response: httpx.Response) -> None:
    status = response.status_code
    if status < 400:
        return
    if status in (404, 410):
        hint = "The page does not exist; check the URL or search for the page's current address."
    elif status in (401, 403):
        hint = "The site requires authentication or refuses automated clients; try another source."
    elif status == 429:
        hint = "The site is rate limiting requests; wait before retrying or try another source."
    elif status >= 500:
        hint = "The server failed; try again later or use another source."
    else:
        hint = "Check the URL."
    raise ToolError(f"Fetching {url} failed with HTTP {status} {response.reason_phrase}. {hint}")


async def _result(page: Page, fmt: Format) -> ToolResult:
    metadata: dict[str, Any] = {
        "url": page.url,
        "finalUrl": page.final_url,
        "status": page.status,
        "contentType": page.content_type,
        "bytes": len(page.body),
        "format": fmt,
    }
    if page.elsewhere is not None:
        metadata["redirectTo"] = page.elsewhere
        output = (
            f"{page.final_url} redirects (HTTP {page.status}) to another site: {page.elsewhere}\n"
            "It was not followed. To read it, call webfetch again with that URL "
            "(the user is asked about the new site)."
        )
        return ToolResult(f"{page.url} (redirect to another site)", output, metadata)
    title = f"{page.url} ({page.media_type or 'unknown type'})"
    kind = _kind(page.media_type, page.body)
    if kind == "image":
        name = PurePosixPath(unquote(urlsplit(page.final_url).path)).name or "image"
        output = f"Image from {page.final_url} ({page.media_type}, {len(page.body)} bytes), attached."
        return ToolResult(title, output, metadata, [Attachment(page.media_type, page.body, name)])
    if kind == "binary":
        raise ToolError(
            f"{page.url} returned binary content ({page.media_type or 'unknown type'}, "
            f"{len(page.body)} bytes); webfetch returns web pages, text and images only."
        )
    text = _decode(page.body, page.charset, html=kind == "html")
    if kind == "html" and fmt == "markdown" and len(text) <= MAX_MARKDOWN_HTML:
        text = await asyncio.to_thread(html_to_markdown, text)
    elif kind == "html" and fmt != "html":
        note = "" if fmt == "text" else "(The page is over 1 MB of HTML: shown as plain text.)\n\n"
        text = note + await asyncio.to_thread(html_to_text, text)
    if page.final_url != page.url:
        text = f"(Redirected to {page.final_url})\n\n{text}"
    return ToolResult(title, text if text.strip() else f"{page.final_url} returned no text.", metadata)


def _kind(media_type: str, body: bytes) -> Literal["html", "text", "image", "binary"]:
    if media_type in HTML_TYPES:
        return "html"
    if media_type in IMAGE_TYPES:
        return "image"
    if media_type.startswith("text/") or media_type in TEXT_TYPES or media_type.endswith(("+json", "+xml")):
        return "text"
    if media_type in ("", "application/octet-stream") and b"\x00" not in body[:8192]:
        start = body[:512].lstrip().lower()
        return "html" if start.startswith((b"<!doctype html", b"<html")) else "text"
    return "binary"


_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([\w.:-]+)""", re.IGNORECASE)


_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


def _decode(body: bytes, charset: str | None, html: bool) -> str:
    for bom, encoding in _BOMS:  # a BOM wins over the header and the page, as browsers decide
        if body.startswith(bom):
            return body.decode(encoding, errors="replace")
    if not charset and html:
        found = _META_CHARSET.search(body[:4096])
        charset = found.group(1).decode("ascii") if found else None
    try:
        return body.decode(_web_encoding(charset), errors="replace")
    except (LookupError, UnicodeError):  # "idna" and "punycode" refuse errors="replace"
        return body.decode("utf-8", errors="replace")


#: Python codecs that are no character set of the web: they rewrite the text (``unicode_escape``
#: turned ``C:\new`` into a newline) or fail on it.
_NOT_CHARSETS = {"idna", "punycode", "unicode-escape", "raw-unicode-escape", "undefined"}


def _web_encoding(charset: str | None) -> str:
    """The codec for a page's charset: UTF-8 when none is named, or what is named is no charset."""
    if not charset:
        return "utf-8"
    info = codecs.lookup(charset)  # LookupError for an unknown name
    return "utf-8" if info.name in _NOT_CHARSETS or not getattr(info, "_is_text_encoding", True) else charset
