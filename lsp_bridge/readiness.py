"""Whether a server's answers are complete: its project is loaded and no work is in progress.

The signals are the server's ``Readiness`` (spec.py): a log message saying the project is loaded
(the pyright family), ``$/progress`` tokens that began and have not ended, and, for servers that
load their project only once a document is opened (clangd's background index, tsserver), a
progress that ends after the first didOpen, or (tsgo) a registration of watched files after it.
After files are created or deleted, a server with a load log loads again (``expect_rescan``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from .errors import RequestTimeout, ServerTerminated
from .rpc import Message, RpcStream
from .spec import Readiness

RESCAN_BARRIER_TIMEOUT = 10.0  # seconds
BARRIER = "$/lspilot/rescanBarrier"


class Loading:
    """The readiness signals of one server process, read from its messages."""

    def __init__(self, readiness: Readiness, root: Path, rpc: RpcStream) -> None:
        self._readiness = readiness
        self._rpc = rpc
        self._progress: set[str] = set()
        self._progress_idle = asyncio.Event()
        self._progress_idle.set()
        self._log_ready = asyncio.Event()
        if readiness.log_pattern is None:
            self._log_ready.set()
        # The answers to expect_rescan's requests: done as soon as the reader reads the answer
        # (a task waiting for it resumes later, after messages read behind it).
        self._barriers: set[asyncio.Future[Message]] = set()
        self.opened = False  # a document was opened (set by the connection at the first didOpen)
        self._load_done = asyncio.Event()  # a progress ended after the first didOpen
        if not any((root / name).exists() for name in readiness.open_starts_progress):
            self._load_done.set()
        self._watching = asyncio.Event()  # it registered didChangeWatchedFiles after a didOpen
        if not readiness.open_registers_watchers:
            self._watching.set()
        self.tasks: set[asyncio.Task[None]] = set()  # rescan barriers on their way
        #: A wait ran out and the server has not been ready since (questions do not wait for it
        #: again: a load longer than their bound would make each of them wait that long).
        self.waited_out = False

    async def wait(self, bound: float) -> bool:
        """Wait until the server's answers are complete; False if ``bound`` passed first."""

        if self.ready:
            return True

        async def ready() -> None:
            await self._log_ready.wait()
            if self.opened:
                await self._load_done.wait()
                await self._watching.wait()
            if self._readiness.progress:
                while not self._progress_idle.is_set():
                    await self._progress_idle.wait()

        try:
            await asyncio.wait_for(ready(), bound)
        except TimeoutError:
            self.waited_out = True
            return False
        return True

    @property
    def ready(self) -> bool:
        """Whether answers are complete now (``wait`` without waiting)."""
        return (
            self._log_ready.is_set()
            and (not self.opened or (self._load_done.is_set() and self._watching.is_set()))
            and (not self._readiness.progress or self._progress_idle.is_set())
        )

    @property
    def busy(self) -> list[str]:
        """Progress tokens still running (for messages about incomplete answers)."""
        return sorted(self._progress)

    def expect_rescan(self) -> None:
        """Files were created or deleted (the notification goes right after this): servers with
        a load log message load again.

        A load log already on its way describes the old file list (basedpyright logs twice at
        start), so only a log that follows the answer to a request sent now counts. The request
        goes before the notification, so the server answers it before it even reads the change
        (sent after it, the answer could follow the log: pyright rescans from a timer, which on
        a loaded machine fired before the server read the request). A ``$/`` request the server
        does not know gets MethodNotFound at once (the LSP specification requires it).
        """
        if self._readiness.log_pattern is None:
            return
        try:
            sent = self._rpc.request(BARRIER, None)
        except ServerTerminated:
            return  # the server is gone: its end woke the waiters
        self._log_ready.clear()
        self._barriers.add(sent[1])
        self.tasks.add(task := asyncio.create_task(self._pass_rescan_barrier(*sent)))
        task.add_done_callback(self.tasks.discard)

    async def _pass_rescan_barrier(self, msg_id: int, answered: asyncio.Future[Message]) -> None:
        try:
            await self._rpc.answer(BARRIER, msg_id, answered, RESCAN_BARRIER_TIMEOUT)
        except (RequestTimeout, ServerTerminated):
            pass  # then any later load log counts; wait's bound still holds
        finally:
            self._barriers.discard(answered)

    def on_progress(self, token: str, kind: Any) -> None:
        if kind == "begin":
            self._progress.add(token)
        elif kind == "end":
            self._progress.discard(token)
            if self.opened:
                self._load_done.set()
        if self._progress:
            self._progress_idle.clear()
        else:
            self._progress_idle.set()
        self._check_ready()

    def on_log(self, message: str) -> None:
        pattern = self._readiness.log_pattern
        if pattern is None or not pattern.search(message):
            return
        # A log read right behind a barrier's answer counts: the future is done, though the task
        # waiting for it has not run yet (it did not count, and answers waited ready_timeout).
        if all(barrier.done() for barrier in self._barriers):
            self._log_ready.set()
        self._check_ready()

    def on_register(self, method: str) -> None:
        """The server registered a capability (``client/registerCapability``)."""
        if method == "workspace/didChangeWatchedFiles" and self.opened:
            self._watching.set()
            self._check_ready()

    def _check_ready(self) -> None:
        if self.waited_out and self.ready:
            self.waited_out = False  # ready again: a later load is waited for

    def wake(self) -> None:
        """The server is gone: whoever waits stops waiting (what they do next raises)."""
        for event in (self._log_ready, self._load_done, self._watching, self._progress_idle):
            event.set()
