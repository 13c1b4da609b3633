"""JSON-RPC over a server's stdio: framing, the ids of our requests, and their answers.

pygls's protocol keeps the futures of the requests it sends and of the server requests it is
answering in one dict keyed by id. Both sides number their requests from 1, so when a server
request (basedpyright sends ``window/workDoneProgress/create`` before every references search)
carried the id of a request of ours still pending, pygls popped our future while answering it
and our request hung until its timeout; with our ids rising faster than the server's, that was
certain after a few dozen questions. This module therefore owns our side of the wire: it numbers
our requests, keeps their futures, and resolves them from answers (messages without a method).
Everything the server sends on its own initiative goes to ``on_message`` (the connection hands
it to pygls). Answers stay raw JSON; the caller decides how to read them.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import re
from collections.abc import Callable
from typing import Any, cast

from .errors import RequestTimeout, ServerTerminated

log = logging.getLogger(__name__)

Message = dict[str, Any]


class RpcStream:
    def __init__(self, name: str, on_message: Callable[[Message], None]) -> None:
        self.name = name
        self.on_message = on_message
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Message]] = {}
        self._writer: asyncio.StreamWriter | None = None
        self._closed = False
        self.failure: str | None = None  # why reading stopped before the end of the output

    def start(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> asyncio.Task[None]:
        """Start talking: the returned task reads messages until EOF."""
        self._writer = writer
        return asyncio.create_task(self._read(reader))

    async def _read(self, reader: asyncio.StreamReader) -> None:
        while True:
            try:
                header = await reader.readuntil(b"\r\n\r\n")
                body = await reader.readexactly(_content_length(header))
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            except (ValueError, asyncio.LimitOverrunError) as error:
                # Nothing after this can be framed: the connection ends the server when this
                # task ends, failing what is pending now instead of at each request's timeout.
                log.error("%s sent a malformed header: %s", self.name, error)
                self.failure = f"sent a malformed message header ({error})"
                return
            try:
                message: Any = json.loads(body)
            except (ValueError, RecursionError) as error:  # not UTF-8, not JSON, nested too deep
                message = error
            if not isinstance(message, dict):  # an answer lost in it would be waited for in vain
                log.error("%s sent a malformed body: %.200r", self.name, body)
                self.failure = f"sent a malformed message body ({str(cast(object, message))[:100]})"
                return
            message = cast(Message, message)
            try:
                if "method" in message:
                    self.on_message(message)
                else:
                    self._answered(message)
            except Exception as error:
                log.exception("%s sent something unexpected: %s", self.name, error)

    def _answered(self, message: Message) -> None:
        msg_id: Any = message.get("id")
        future = self._pending.pop(msg_id, None)
        if future is not None and not future.done():
            future.set_result(message)
        # else: the answer to a request that timed out or was cancelled; dropped.

    def send(self, message: Message) -> None:
        if self._writer is None or self._closed:
            raise ServerTerminated(f"{self.name} is not running")
        body = json.dumps(message).encode()  # default arguments: json's cached encoder
        self._writer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    async def call(self, method: str, params: Any, timeout: float) -> Message:
        """Send a request and return the whole answer message (``result`` or ``error``).

        On timeout, or when the caller is cancelled, ``$/cancelRequest`` is sent.
        """
        return await self.answer(method, *self.request(method, params), timeout)

    def request(self, method: str, params: Any) -> tuple[int, asyncio.Future[Message]]:
        """Send a request now (``call`` sends it once the coroutine runs): its id, and the
        future of its answer, to pass to ``answer``."""
        msg_id = next(self._ids)
        message: Message = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        return msg_id, future

    async def answer(
        self, method: str, msg_id: int, future: asyncio.Future[Message], timeout: float
    ) -> Message:
        """The answer to a request sent by ``request``; ``$/cancelRequest`` as for ``call``."""
        try:
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError:
            raise RequestTimeout(f"{self.name} did not answer {method} within {timeout:g}s") from None
        finally:
            if self._pending.pop(msg_id, None) is not None and not self._closed:
                self.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": msg_id}})

    def close(self, reason: str = "exited") -> None:
        """The server is gone: fail every pending request at once, refuse new ones."""
        self._closed = True
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(ServerTerminated(f"{self.name} {reason}"))


_CONTENT_LENGTH = re.compile(rb"content-length[ \t]*:[ \t]*(\d+)", re.IGNORECASE)


def _content_length(header: bytes) -> int:
    """The length a header announces; what a server printed to stdout before it is skipped."""
    found = _CONTENT_LENGTH.search(header)
    if found is None:
        raise ValueError(f"no Content-Length in {header[:200]!r}")
    return int(found[1])
