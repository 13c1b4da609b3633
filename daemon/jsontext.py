"""JSON that every reader takes (no lone surrogates), and text a terminal shows without acting on it.

A file name that is not UTF-8 (``caf\\xe9.py`` from a Latin-1 system) is carried in ``str`` with
its undecodable bytes as lone surrogates (``os.fsdecode``), in tool metadata and events.
``json.dumps`` writes them as ``\\udce9``: ASCII, but no Unicode text, and strict decoders
refuse the whole message (Neovim's ``vim.json.decode``: "invalid unicode escape code"). Here such
a string is written as the tools show the name (``tools.context.shown_path``: ``\\xe9``, and a
backslash in it as ``\\\\``); any other lone surrogate becomes U+FFFD. Surrogate pairs (how
``json.dumps`` writes emoji) are kept. Text without ``\\ud`` is returned as it is, at the cost of
one substring search; this module is standard library only, as ``lspilot serve`` starts on it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

#: A JSON escape: an escaped backslash (skipped, so ``\\\\udce9`` is no escape), a surrogate pair,
#: or a lone surrogate (group 1).
_ESCAPES = re.compile(
    r"\\\\|\\ud[89ab][0-9a-f]{2}\\ud[c-f][0-9a-f]{2}|(\\ud[89a-f][0-9a-f]{2})", re.IGNORECASE
)
_SURROGATE = re.compile("[\ud800-\udfff]")


class NestedTooDeep(ValueError):
    """JSON nested deeper than Python's stack lets ``json.loads`` read."""

    def __init__(self) -> None:
        super().__init__("nested too deeply")


def loads(data: str | bytes) -> Any:
    """``json.loads``, where JSON nested too deeply for it (``[[[[...`` thousands deep, which it
    fails with RecursionError) raises ``NestedTooDeep``: a ValueError, as any other invalid JSON."""
    try:
        return json.loads(data)
    except RecursionError:
        raise NestedTooDeep from None


def valid_unicode(text: str, dumps: Callable[[Any], str] = json.dumps) -> str:
    """``text``, JSON as ``json.dumps`` writes it (``ensure_ascii``), with every string holding a
    lone surrogate written as its shown form; written again with ``dumps`` when one is found."""
    if "\\ud" not in text and "\\uD" not in text:
        return text
    if not any(match[1] for match in _ESCAPES.finditer(text)):
        return text  # only pairs
    return dumps(_valid(json.loads(text)))


def valid_frame(data: bytes) -> bytes:
    """A framed JSON-RPC message (headers, blank line, body) with ``valid_unicode``'s body and
    the Content-Length that goes with it."""
    if b"\\ud" not in data and b"\\uD" not in data:
        return data
    head, separator, body = data.partition(b"\r\n\r\n")
    if not separator:
        return data
    text = body.decode()
    fixed = valid_unicode(text)
    if fixed is text:
        return data
    content = fixed.encode()
    lines = [
        b"Content-Length: %d" % len(content) if line.lower().startswith(b"content-length:") else line
        for line in head.split(b"\r\n")
    ]
    return b"\r\n".join(lines) + separator + content


def _valid(value: Any) -> Any:
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, list):
        return [_valid(item) for item in value]  # pyright: ignore[reportUnknownVariableType]
    if isinstance(value, dict):
        return {valid_text(key): _valid(item) for key, item in value.items()}  # pyright: ignore[reportUnknownVariableType,reportUnknownArgumentType]
    return value


def valid_text(text: str) -> str:
    """``text`` with a name that is not UTF-8 as the tools show it and any other lone surrogate as
    U+FFFD: text that UTF-8 (JSON, SQLite, a provider's request) carries."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    from tools.context import shown_path  # noqa: PLC0415 - rare, and heavy for serve's start

    return _SURROGATE.sub("\ufffd", shown_path(text))


#: Control characters (but tab) of text that is not ours: a file's escape sequences in a diff, or
#: the model's, or a prompt's in a session's title, would act on the terminal (retitle it, hide
#: text, write the clipboard).
CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def shown(text: str, keep: str = "") -> str:
    """``text`` as the terminal shows it: valid Unicode (``valid_text``: a name that is
    not UTF-8 as ``\\xe9``, a provider's lone surrogate as U+FFFD), each control character but a
    tab, and those in ``keep``, as ``\\xNN``."""
    text = valid_text(text.replace("\r\n", "\n"))
    return CONTROL.sub(lambda m: m[0] if m[0] in keep else f"\\x{ord(m[0]):02x}", text)
