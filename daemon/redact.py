"""Keeping secrets out of lspilot's logs.

API keys and tokens from the environment (``OPENAI_API_KEY``, ``GITHUB_TOKEN``, ...) and the
secret-looking values of ``provider_options`` (``api_key``, an ``Authorization`` or ``x-api-key``
header in ``extra_headers``) are replaced by ``[redacted]`` in every record lspilot's log handlers
write: the log file, stderr and the editor's log. With ``-v`` the openai SDK logs each request's
options, custom headers included.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Mapping
from typing import Any, cast

#: Environment variables holding credentials, by the end of their name.
SECRET_VARIABLE = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$", re.IGNORECASE)
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
        for name, value in environ.items():
            if SECRET_VARIABLE.search(name):
                self.add(value)

    def add_options(self, options: Mapping[str, Any]) -> None:
        """The string values under secret-looking names, at any depth (``extra_headers`` too)."""
        for name, value in options.items():
            if isinstance(value, Mapping):
                self.add_options(cast(Mapping[str, Any], value))
            elif SECRET_NAME.search(str(name)):
                self.add(value)

    def scrub(self, text: str) -> str:
        pattern = self._pattern
        return pattern.sub(MASK, text) if pattern is not None else text

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
