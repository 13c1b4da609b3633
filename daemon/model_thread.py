"""The thread with an event loop of its own where every model request runs, and its orderly end.

Building a request is pure Python that grows with the conversation (the openai SDK alone walks
every message and tool schema: ~40 ms per step at 30 messages), and it never yields. On the
daemon's loop it would stall the editor's requests; here the interpreter switches threads every
few milliseconds, so the daemon keeps answering while a step is being prepared.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


class ModelThread:
    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._thread = threading.Thread(
                    target=_serve, args=(self._loop,), name="lspilot-model", daemon=True
                )
                self._thread.start()
            return self._loop

    def submit(self, work: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(work, self.loop())

    def stop(self, cleanup: Callable[[], Coroutine[Any, Any, None]], timeout: float) -> None:
        """Run ``cleanup`` on the loop (closing what belongs to it), then end the loop and wait for
        the thread, each for at most ``timeout`` seconds. The next ``submit`` starts another."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(cleanup(), loop).result(timeout)
        except Exception as error:  # what would not close is the OS's to clean up now
            log.debug("cleaning up the model thread failed: %r", error)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    """The thread: the loop until stopped, then what ``asyncio.run`` does at its end."""
    try:
        loop.run_forever()
    finally:
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()
