"""SIGTERM and SIGHUP stop lspilot as Ctrl-C does, instead of ending the process at once.

Killed outright, lspilot left running what its tools had started in process groups of their own
(a dev server, a test run, ``sleep 300`` from the bash tool), and the turn in flight unrecorded.
Here such a signal cancels the main task: the turn ends cancelled and stored, the bash tool stops
its commands' process groups, language servers are shut down; then ``Stopped`` is raised, whose
exit status is the shell's for the signal (128 + its number). SIGTERM comes from ``kill``,
``timeout`` and service managers; SIGHUP when the terminal closes. Standard library only:
``lspilot serve`` imports it before it answers the editor.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Stopped(Exception):
    """The process was asked to stop by ``signum``, and has unwound."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum

    @property
    def status(self) -> int:
        return 128 + self.signum


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)``, cancelled by SIGTERM or SIGHUP (then ``Stopped``). A second such
    signal while it unwinds is ignored: the first one's cleanup is under way."""
    received: list[int] = []

    async def guarded() -> T:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None

        def stop(signum: int) -> None:
            if not received:
                received.append(signum)
                task.cancel()

        for signum in SIGNALS:
            loop.add_signal_handler(signum, stop, signum)
        try:
            return await main
        finally:
            for signum in SIGNALS:
                loop.remove_signal_handler(signum)

    try:
        return asyncio.run(guarded())
    except asyncio.CancelledError:
        if not received:
            raise
        raise Stopped(received[0]) from None
