"""One process at a time runs turns in a session: a lock per session, held across processes.

Two daemons (two `lspilot run --session ID`, or `lspilot serve` in two editors) would otherwise
run turns in one session at once and interleave their messages in the store. A turn holds an
exclusive ``flock`` on ``<id>.lock`` in a folder beside the database. The kernel releases it when
its holder exits, however it exits (kill -9 included), so a crashed daemon leaves nothing stale
behind; the file names the holder's pid for the message the next one gets. ``held`` tells which
sessions some process is running a turn in (for the session lists), by a shared lock taken and
dropped at once on each lock file; a turn that starts in that instant tries again a few times,
awaiting between tries, so the event loop (the editor's other requests, other sessions' turns)
goes on meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
from collections.abc import AsyncIterator
from pathlib import Path

from .config import ConfigError


class SessionBusy(ConfigError):
    """Another process (or another loop of this one) is running a turn in the session."""


@contextlib.asynccontextmanager
async def hold(folder: Path, session_id: str) -> AsyncIterator[None]:
    """Hold the session's lock for the block; ``SessionBusy`` at once when someone else holds it."""
    if not session_id or "/" in session_id or session_id.startswith("."):
        raise ValueError(f"not a session id: {session_id!r}")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session_id}.lock"
    descriptor = await _claim(path, session_id)
    try:
        yield
    finally:
        # Removed while still locked: whoever opened this file meanwhile finds, once it has the
        # lock, that the path no longer leads to it, and opens the path again (see _claim).
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        os.close(descriptor)


async def _claim(path: Path, session_id: str) -> int:
    while True:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            await _lock_past_probes(descriptor)
        except BlockingIOError:
            holder = os.pread(descriptor, 32, 0).decode(errors="replace").strip()
            os.close(descriptor)
            who = f"pid {holder}" if holder.isdigit() else "another lspilot process"
            raise SessionBusy(
                f"session {session_id} is in use by {who}, which is running a turn in it; "
                "wait for that turn to end, or stop it"
            ) from None
        except BaseException:  # cancelled while it waited, too
            os.close(descriptor)
            raise
        if _still_at(path, descriptor):
            os.ftruncate(descriptor, 0)
            os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
            return descriptor
        os.close(descriptor)  # its holder released and removed it after we opened it: again


def _still_at(path: Path, descriptor: int) -> bool:
    """Whether ``path`` still names the file open at ``descriptor``."""
    try:
        named = path.stat()
    except FileNotFoundError:
        return False
    opened = os.fstat(descriptor)
    return (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino)


def held(folder: Path) -> set[str]:
    """The sessions whose lock a process holds now (this one included): one directory listing,
    then a shared lock tried and dropped on each lock file there (only held or crashed turns leave
    one)."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return set()
    busy: set[str] = set()
    for name in names:
        if not name.endswith(".lock"):
            continue
        try:
            descriptor = os.open(folder / name, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:  # released meanwhile
            continue
        try:
            fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            busy.add(name.removesuffix(".lock"))
        finally:
            os.close(descriptor)  # drops the shared lock with it
    return busy


async def _lock_past_probes(descriptor: int) -> None:
    """The exclusive lock, or ``BlockingIOError``. ``held``'s probes hold a shared lock for
    microseconds: a few quick tries keep one from refusing a turn. (flock cannot wait with a
    timeout, and a blocking one would stall the event loop for as long as another turn runs.)"""
    for _ in range(4):
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            await asyncio.sleep(0.002)
    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
