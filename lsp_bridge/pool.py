"""The running servers of a workspace: one process per (server, root), started lazily.

A server starts on first use (installed first when it is missing and auto-install is on), is
stopped after ``idle_timeout`` without use, and is restarted with backoff after a crash; after
``CRASHES_BEFORE_BROKEN`` crashes within ``CRASH_WINDOW`` seconds it is ``ServerBroken`` with its
stderr tail. A server being started when the pool shuts down is stopped too. A new configuration
stops the servers whose definition it changed; they start with the new one at their next use.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from pathlib import Path

from . import install
from .answers import each
from .connection import ServerConnection
from .errors import BridgeError, ServerBroken, ServerStartError
from .registry import BridgeConfig, Route
from .spec import ServerSpec
from .sync import Synchronizer

log = logging.getLogger(__name__)

Key = tuple[str, Path]

CRASH_WINDOW = 180.0
CRASHES_BEFORE_BROKEN = 5


class ServerPool:
    def __init__(self, config: BridgeConfig, sync: Synchronizer) -> None:
        self.config = config
        self._sync = sync  # watches the root of each server started; forgets what it had open
        self._connections: dict[Key, ServerConnection] = {}
        self._locks: dict[Key, asyncio.Lock] = {}
        self._crashes: dict[Key, list[float]] = {}
        self._idle: dict[Key, asyncio.TimerHandle] = {}
        self._last_used: dict[Key, float] = {}
        self._last_stderr: dict[Key, str] = {}
        self._stopping: set[asyncio.Task[None]] = set()
        self._starting: set[ServerConnection] = set()  # started, not yet initialized
        self._closed = False

    @property
    def alive(self) -> list[ServerConnection]:
        return [c for c in self._connections.values() if c.alive]

    async def at(self, route: Route, notes: list[str]) -> list[ServerConnection]:
        """The route's running connections; one that cannot start is left out with a note,
        unless none started."""
        if len(route.targets) == 1:  # the usual case: no gather (a task, more loop turns)
            spec, root = route.targets[0]
            return [await self.get(spec, root)]
        before = len(notes)
        _started, connections = await each(
            route.targets, lambda target: self.get(*target), lambda target: target[0].name, notes
        )
        for note in notes[before:]:
            log.warning("%s", note)
        return connections

    async def get(self, spec: ServerSpec, root: Path) -> ServerConnection:
        if self._closed:
            raise BridgeError("the bridge is shut down")
        key = (spec.name, root)
        conn = self._connections.get(key)
        if conn is not None and conn.alive:  # the usual case: no lock, no event loop round trip
            self._touch(key)
            return conn
        async with self._locks.setdefault(key, asyncio.Lock()):
            conn = self._connections.get(key)
            if conn is None or not conn.alive:
                if conn is not None:
                    await conn.stop(graceful=False)
                conn = await self._start(spec, root, key)
                self._connections[key] = conn
        self._touch(key)
        return conn

    async def _start(self, spec: ServerSpec, root: Path, key: Key) -> ServerConnection:
        crashes = [t for t in self._crashes.get(key, []) if time.monotonic() - t < CRASH_WINDOW]
        self._crashes[key] = crashes
        if len(crashes) >= CRASHES_BEFORE_BROKEN:
            raise ServerBroken(
                f"{spec.name} crashed {len(crashes)} times in {CRASH_WINDOW:g}s; not restarting"
                f"{self._last_stderr.get(key, '')}"
            )
        if crashes:  # back off: 0.5 s, 1 s, 2 s ... after consecutive crashes
            await asyncio.sleep(min(0.5 * 2 ** (len(crashes) - 1), 8.0))
        argv = await self._command(spec)
        if self._closed:  # shut down during the back-off or the install
            raise BridgeError("the bridge is shut down")
        conn = ServerConnection(spec, root, argv)
        conn.on_exit = self._on_exit
        log.info("starting %s for %s", spec.name, root)
        self._starting.add(conn)
        try:
            await conn.start(self.config.start_timeout)
        except ServerStartError:
            if self._closed:  # shutdown() stopped it
                raise BridgeError("the bridge is shut down") from None
            raise
        finally:
            self._starting.discard(conn)
        self._sync.watch(root)
        return conn

    def _on_exit(self, conn: ServerConnection) -> None:
        key = (conn.spec.name, conn.root)
        self._crashes.setdefault(key, []).append(time.monotonic())
        if conn.process is not None:
            self._last_stderr[key] = f"\n--- stderr (tail) ---\n{conn.process.stderr_text()}"

    async def _command(self, spec: ServerSpec) -> list[str]:
        status = install.status(spec, self.config.data_dir)
        if status.state in ("missing", "outdated") and spec.install.kind != "system":
            if not self.config.auto_install:
                if status.command is not None:
                    return status.command
                raise install.missing_error(spec)
            log.warning("installing %s into %s", spec.name, self.config.data_dir)
            status = await install.install(spec, self.config.data_dir)
        if status.command is None:
            raise install.missing_error(spec)
        return status.command

    def _touch(self, key: Key) -> None:
        """Note a use; one timer per server checks for idleness (not a new timer per request)."""
        loop = asyncio.get_running_loop()
        self._last_used[key] = loop.time()
        if key not in self._idle:
            self._idle[key] = loop.call_later(self.config.idle_timeout, self._check_idle, key)

    def _check_idle(self, key: Key) -> None:
        loop = asyncio.get_running_loop()
        idle_for = loop.time() - self._last_used.get(key, 0.0)
        if idle_for >= self.config.idle_timeout:
            del self._idle[key]
            self._stopping.add(task := loop.create_task(self._stop_idle(key)))
            task.add_done_callback(self._stopping.discard)
        else:
            self._idle[key] = loop.call_later(self.config.idle_timeout - idle_for, self._check_idle, key)

    async def _stop_idle(self, key: Key) -> None:
        conn = self._connections.pop(key, None)
        if conn is not None:
            log.info("stopping idle %s for %s", *key)
            await conn.stop()
            self._sync.forget(conn)

    async def reconfigure(self, config: BridgeConfig, specs: Mapping[str, ServerSpec]) -> None:
        """Run with ``config`` and the server definitions ``specs`` (by name) from now on: each
        running server whose definition changed (or that is no longer defined) is stopped, and
        starts with the new one at its next use, its crash count forgotten; the others run on.
        The caller makes sure no request to the servers is pending (it would fail)."""
        self.config = config
        changed = [key for key, conn in self._connections.items() if specs.get(key[0]) != conn.spec]
        for key in changed:
            if (timer := self._idle.pop(key, None)) is not None:
                timer.cancel()
            self._crashes.pop(key, None)
            self._last_stderr.pop(key, None)
        await asyncio.gather(*(self._retire(self._connections.pop(key)) for key in changed))

    async def _retire(self, conn: ServerConnection) -> None:
        log.info("stopping %s for %s: its configuration changed", conn.spec.name, conn.root)
        await conn.stop()
        self._sync.forget(conn)

    async def shutdown(self) -> None:
        """Stop every server (shutdown, exit, then signals), those starting too."""
        self._closed = True
        for timer in self._idle.values():
            timer.cancel()
        self._idle.clear()
        await asyncio.gather(
            *(c.stop() for c in self._connections.values()),
            *(c.stop(graceful=False) for c in self._starting),
        )
        self._connections.clear()
