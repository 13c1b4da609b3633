"""Keeping secrets out of lspilot's logs.

API keys and tokens from the environment (``OPENAI_API_KEY``, ``GITHUB_TOKEN``, ...), the
secret-looking values of ``provider_options`` (``api_key``, an ``Authorization`` or ``x-api-key``
header in ``extra_headers``) and those of the api_base (a password, ``?api-key=...``) are replaced
by ``[redacted]`` in every record lspilot's log handlers write: the log file, stderr and the
editor's log. With ``-v`` the openai SDK logs each request's options, custom headers included.

They are masked in what tools return too (``scrub_outcome``, an after-hook on every registry the
daemon builds): ``env``, ``cat .env`` or a command echoing ``$GITHUB_TOKEN`` would otherwise put
the value in the session store and send it to the model's provider.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Mapping
from typing import Any, cast
from urllib.parse import parse_qsl, urlsplit

from tools import HookCall, Outcome, environment_secrets

#: Option and header names whose string values are credentials.
SECRET_NAME = re.compile(r"key|token|secret|passw|auth|credential|cookie|signature", re.IGNORECASE)
MIN_LENGTH = 8  # shorter values would blot out ordinary words
MASK = "[redacted]"


class Redactor(logging.Filter):
    """A handler filter that masks every known secret in a record's message and traceback."""

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._secrets: set[str] = set()
        self._pattern: re.Pattern[str] | None = None

    def add(self, value: object) -> None:
        if not isinstance(value, str) or len(value.strip()) < MIN_LENGTH:
            return
        with self._lock:
            if value in self._secrets:
                return
            self._secrets.add(value)
            longest_first = sorted(self._secrets, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(s) for s in longest_first))

    def add_environment(self, environ: Mapping[str, str]) -> None:
        """The credentials among ``environ`` (those the bash tool masks in its output, too)."""
        for value in environment_secrets(environ):
            self.add(value)

    def add_options(self, options: Mapping[str, Any]) -> None:
        """The string values under secret-looking names, at any depth (``extra_headers`` too)."""
        for name, value in options.items():
            if isinstance(value, Mapping):
                self.add_options(cast(Mapping[str, Any], value))
            elif SECRET_NAME.search(str(name)):
                self.add(value)

    def add_url(self, url: str) -> None:
        """The password and the values of secret-looking query parameters of a URL (an api_base
        such as ``https://user:password@proxy/v1?api-key=...``)."""
        try:
            parts = urlsplit(url)
            self.add(parts.password)
        except ValueError:  # not a URL litellm could use either
            return
        for name, value in parse_qsl(parts.query):
            if SECRET_NAME.search(name):
                self.add(value)

    @property
    def active(self) -> bool:
        """There is a secret to mask."""
        return self._pattern is not None

    def scrub(self, text: str) -> str:
        pattern = self._pattern
        return pattern.sub(MASK, text) if pattern is not None else text

    def scrub_value(self, value: Any) -> Any:
        """``value`` with every string in it scrubbed, at any depth of lists and dicts."""
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, dict):
            return {key: self.scrub_value(item) for key, item in cast(dict[Any, Any], value).items()}
        if isinstance(value, list | tuple):
            return [self.scrub_value(item) for item in cast(list[Any], value)]
        return value

    def filter(self, record: logging.LogRecord) -> bool:
        if self._pattern is None:
            return True
        message = record.getMessage()
        clean = self.scrub(message)
        if clean != message:
            record.msg, record.args = clean, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.scrub(record.exc_text)
        if record.stack_info:
            record.stack_info = self.scrub(record.stack_info)
        return True


#: The one redactor every handler of this process uses.
REDACTOR = Redactor()


async def scrub_outcome(call: HookCall, outcome: Outcome) -> None:
    """Mask the known secrets in a tool call's result or error before anything else sees it."""
    if not REDACTOR.active:
        return
    if outcome.error is not None:
        outcome.error = REDACTOR.scrub(outcome.error)
    result = outcome.result
    if result is not None:
        result.title, result.output = REDACTOR.scrub(result.title), REDACTOR.scrub(result.output)
        result.metadata = REDACTOR.scrub_value(result.metadata)
