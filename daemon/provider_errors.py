"""What a provider error means for the loop: retry it (and how), compact and retry, or stop and
tell the user why, in words they can act on (a missing key, a used-up quota, nothing listening at
``api_base``, a host name that does not resolve, a request that cannot be sent at all). The
``api_base`` is named without the credentials it may carry.
"""

from __future__ import annotations

import email.utils
import errno
import math
import re
import socket
import time
from collections.abc import Callable
from typing import Literal
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from .model import ModelSettings, litellm
from .redact import MASK, REDACTOR, SECRET_NAME

ErrorKind = Literal["transient", "refused", "overflow", "fatal"]


def classify(error: BaseException) -> ErrorKind:
    """transient: retry with backoff; refused: nothing listens at the address or its host name does
    not resolve, retry once at most; overflow: compact and retry; fatal: stop with the message."""
    lib = litellm()
    if isinstance(error, lib.ContextWindowExceededError):
        return "overflow"
    if is_auth(error) or quota_exhausted(error) or unsendable(error) is not None:
        return "fatal"
    if refused(error):
        return "refused"
    transient: tuple[type[BaseException], ...] = (
        lib.RateLimitError,
        lib.InternalServerError,  # also how litellm reports a dropped connection
        lib.ServiceUnavailableError,
        lib.APIConnectionError,
        lib.Timeout,
        getattr(lib, "MidStreamFallbackError", ConnectionError),  # the stream broke off midway
        ConnectionError,
        TimeoutError,
    )
    if isinstance(error, transient):
        return "transient"
    if getattr(error, "status_code", None) in (408, 409, 429, 500, 502, 503, 504):
        return "transient"
    return "fatal"


# litellm reports a missing key as InternalServerError (openai, mistral) or APIConnectionError
# (gemini), raised before any request is sent: by its text, it is not worth retrying.
MISSING_KEY = re.compile(
    r"missing credentials|missing [\w ]{0,30}api[ _-]?key"
    r"|api[ _-]?key[\w ]{0,30} (?:not set|is missing|required)",
    re.IGNORECASE,
)


def is_auth(error: BaseException) -> bool:
    """The provider refused the credentials, or there were none to send."""
    lib = litellm()
    return isinstance(error, lib.AuthenticationError) or bool(MISSING_KEY.search(str(error)))


def refused(error: BaseException) -> bool:
    """The address cannot be reached: nothing listens there (a local server that is not running,
    a wrong port), or its host name does not resolve (a typo in api_base, no network). litellm
    reports both as a generic connection or server error; the cause is at the bottom of its
    chain of causes."""
    return _cause(error, _refusal) is not None or unresolved(error)


def unresolved(error: BaseException) -> bool:
    """The host name does not resolve (DNS): ``socket.gaierror`` somewhere in the chain."""
    return _cause(error, lambda cause: isinstance(cause, socket.gaierror)) is not None


def _refusal(cause: BaseException) -> bool:
    return isinstance(cause, ConnectionRefusedError) or (
        isinstance(cause, OSError) and cause.errno == errno.ECONNREFUSED
    )


def _cause(error: BaseException, wanted: Callable[[BaseException], bool]) -> BaseException | None:
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if wanted(cause):
            return cause
        cause = cause.__cause__ or cause.__context__
    return None


def unsendable(error: BaseException) -> str | None:
    """Why the request cannot be sent from here, whatever the provider: a header value with a
    character HTTP cannot carry (an API key pasted with a curly quote or a non-breaking space),
    or credentials in the api_base URL, which the HTTP client refuses beside the API key. litellm
    reports both as a connection error, and retrying cannot help."""
    header = _cause(error, lambda c: isinstance(c, UnicodeEncodeError) and c.encoding in ("ascii", "latin-1"))
    if isinstance(header, UnicodeEncodeError):
        bad = header.object[header.start : header.end][:1]  # never the rest: it is the key's
        return (
            f"a header of the request holds {bad!r} (U+{ord(bad):04X}), which HTTP headers cannot carry: "
            "check the API key (its environment variable, or provider_options.api_key) and "
            "provider_options.extra_headers for a character pasted with them"
        )
    if _cause(error, lambda c: isinstance(c, ValueError) and "credentials encoded in URL" in str(c)):
        return (
            "the api_base carries credentials (user:password@host), which the HTTP client refuses "
            "beside the API key: take them out of the URL and give the key as the API key "
            "(or a header in provider_options.extra_headers)"
        )
    return None


def shown_base(api_base: str) -> str:
    """``api_base`` as messages name it: a password in it, and the values of query parameters
    with secret-looking names (``?key=...``), as ``[redacted]``."""
    try:
        parts = urlsplit(api_base)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return api_base
    netloc = parts.netloc
    if parts.password is not None:
        netloc = f"{parts.username}:{MASK}@{host}{port}"
    query = "&".join(
        f"{name}={MASK if SECRET_NAME.search(name) else value}"
        for name, value in parse_qsl(parts.query, keep_blank_values=True)
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query if parts.query else "", parts.fragment))


def quota_exhausted(error: BaseException) -> bool:
    """OpenAI's ``insufficient_quota`` 429: no amount of waiting fixes it."""
    text = str(error)
    if getattr(error, "code", None) == "insufficient_quota" or "insufficient_quota" in text:
        return True
    openai = getattr(error, "llm_provider", None) in ("openai", "azure", "text-completion-openai")
    return openai and "exceeded your current quota" in text


def key_hint(settings: ModelSettings) -> str:
    """Which environment variables would hold the provider's key, when litellm knows and none is set."""
    try:
        found = litellm().validate_environment(model=settings.model, api_base=settings.api_base)
    except Exception:
        return ""
    missing = [k for k in found.get("missing_keys") or [] if "KEY" in k or "TOKEN" in k]
    return f"set {' or '.join(missing)} in the environment" if missing else ""


def explain(error: BaseException, settings: ModelSettings) -> str:
    """Why a model call failed, for the user: the provider's message, and what to do when we know."""
    text = f"The model call failed: {describe(error)}"
    why = unsendable(error)
    if why is not None:
        return f"The model call failed: {why}"
    if quota_exhausted(error):
        return f"{text} (the account's quota is used up: waiting will not help; check its plan and billing)"
    if "LLM Provider NOT provided" in str(error):  # litellm cannot tell whose model the name is
        return (
            f"The model call failed: litellm does not know which provider serves {settings.model!r}: "
            "name the model as provider/model, e.g. openai/gpt-4o, anthropic/claude-sonnet-4-5 or "
            "ollama/qwen3 (model in lspilot.toml, LSPILOT_MODEL or --model)"
        )
    if is_auth(error):
        hint = key_hint(settings)
        return f"{text} (no usable API key for {settings.model}{': ' + hint if hint else ''})"
    base = shown_base(settings.api_base) if settings.api_base else None
    if unresolved(error):
        if base:
            return (
                f"{text} (the host name of {base} does not resolve: correct api_base / "
                "LSPILOT_API_BASE / --api-base, or check the network and DNS)"
            )
        return (
            f"{text} (the host name of the provider of {settings.model} does not resolve: check the network)"
        )
    if refused(error):
        if base:
            return (
                f"{text} (nothing accepts connections at {base}: start the server there, "
                "or correct api_base / LSPILOT_API_BASE / --api-base)"
            )
        return f"{text} (the connection to the provider of {settings.model} was refused)"
    return text


def retry_after(error: BaseException) -> float | None:
    """How long the provider asks to wait, in seconds: its Retry-After header, or else what the
    message of its 429 says (OpenAI: "Please try again in 1.5s" or "in 50ms"; Gemini: "Please
    retry in 45.1s", ``"retryDelay": "45s"``)."""
    value = None
    for headers in (getattr(error, "litellm_response_headers", None), getattr(error, "headers", None)):
        if headers is not None and hasattr(headers, "get"):
            value = value or headers.get("retry-after")
    if value is not None and (seconds := _header_seconds(str(value))) is not None:
        return seconds
    said = WAIT_IN_MESSAGE.search(str(error)) if getattr(error, "status_code", None) == 429 else None
    if said is None:
        return None
    amount, unit = (said[1], said[2]) if said[1] else (said[3], "s")
    return float(amount) / (1000 if unit.lower() == "ms" else 1)


def _header_seconds(value: str) -> float | None:
    """A Retry-After header in seconds: a number of them (not NaN, infinite or negative, which
    ``asyncio.sleep`` takes as no wait or as forever), or an HTTP date (RFC 9110)."""
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        return max(when.timestamp() - time.time(), 0.0)  # a date without a zone is taken as UTC
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


WAIT_IN_MESSAGE = re.compile(
    r"(?:try again|retry) in (\d+(?:\.\d+)?) ?(ms|s)\b|\\?\"retryDelay\\?\": ?\\?\"(\d+(?:\.\d+)?)s",
    re.IGNORECASE,
)


def describe(error: BaseException) -> str:
    """A provider error as one line for the user (litellm's messages carry the provider's text),
    without the known secrets (a provider may echo the URL it was sent, a key in its query)."""
    text = REDACTOR.scrub(str(error)).strip()
    message = text.splitlines()[0] if text else ""
    # litellm prefixes its class name and the provider's: "litellm.RateLimitError: RateLimitError:
    # OpenAIException - Rate limit reached" -> "Rate limit reached"
    message = re.sub(r"^(litellm\.\w+: )?(\w+Error: )?(\w+Exception - )?", "", message)
    return f"{type(error).__name__}: {message or 'no details'}"[:500]
