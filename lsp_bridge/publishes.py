"""Diagnostics a server pushed (``textDocument/publishDiagnostics``), and waiting for a publish.

Servers without pull diagnostics answer a change by publishing; the bridge waits for the
publish that carries the changed version, or for servers that send no version, the first one
that arrived late enough (see ``ServerSpec.publish_delay``). Each publish is kept with its
sequence number and arrival time so a waiter can tell which came after its change.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from lsprotocol import types as lsp

from .documents import normal_uri


@dataclass
class PushedDiagnostics:
    version: int | None
    diagnostics: list[lsp.Diagnostic]
    seq: int  # how many publishes had arrived when this one did
    at: float  # when it arrived (time.monotonic)


class Publishes:
    """The latest publish per document URI (as ``Path.as_uri`` writes it)."""

    def __init__(self) -> None:
        self.latest: dict[str, PushedDiagnostics] = {}
        self.seq = 0  # publishes so far
        self._arrived = asyncio.Event()  # replaced after every publish; waiters re-check

    def add(self, params: lsp.PublishDiagnosticsParams) -> None:
        self.seq += 1
        self.latest[normal_uri(params.uri)] = PushedDiagnostics(
            params.version, list(params.diagnostics), self.seq, time.monotonic()
        )
        self.wake()

    def wake(self) -> None:
        """Let every waiter look again (after a publish, or when the server is gone)."""
        arrived, self._arrived = self._arrived, asyncio.Event()
        arrived.set()

    async def wait(
        self,
        uri: str,
        predicate: Callable[[PushedDiagnostics], bool],
        timeout: float,
        check: Callable[[], None],
    ) -> PushedDiagnostics | None:
        """The publish for ``uri`` that satisfies ``predicate``; None after ``timeout``.
        ``check`` runs before each look and raises when the server is gone."""

        async def arrived() -> PushedDiagnostics:
            while True:
                check()
                current = self.latest.get(uri)
                if current is not None and predicate(current):
                    return current
                await self._arrived.wait()

        try:
            return await asyncio.wait_for(arrived(), timeout)
        except TimeoutError:
            return None
