"""Waiting on the other end of a FIFO without a thread stuck in ``open``.

A test's command reports through a FIFO that it runs (and its pid); opening a FIFO blocks until
the other end is opened too. In a thread (``asyncio.to_thread``) that open can be neither
cancelled nor timed out: when the other end never came (the daemon died first), the test's
timeout fired but the interpreter waited for the thread at exit, and the whole run hung instead
of failing. These open the FIFO without blocking, give up when the process that should answer
has exited, and have a deadline.
"""

from __future__ import annotations

import asyncio
import errno
import os
import select
import time
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

STEP = 0.05  # seconds between looks at the process that should answer


def read_line(fifo: Path, exited: Callable[[], int | None], timeout: float = 60.0) -> str:
    """The first line written to ``fifo``; fails when ``exited()`` gives an exit code first."""
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # Linux: opens at once, writer or not
    try:
        data = b""
        deadline = time.monotonic() + timeout
        while b"\n" not in data:
            code = exited()
            if code is not None:
                raise AssertionError(f"exited with {code} before writing to {fifo.name} (had {data!r})")
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing written to {fifo.name} within {timeout:g}s (had {data!r})")
            if select.select([fd], [], [], STEP)[0]:
                data += os.read(fd, 4096)
        return data.decode().split("\n", 1)[0]
    finally:
        os.close(fd)


async def read_line_async(fifo: Path, process: asyncio.subprocess.Process, timeout: float = 60.0) -> str:
    """``read_line`` for an asyncio child process, without blocking the event loop."""
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    readable = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_reader(fd, readable.set)
    try:
        data = b""
        async with asyncio.timeout(timeout):
            while b"\n" not in data:
                if process.returncode is not None:
                    code = process.returncode
                    raise AssertionError(f"exited with {code} before writing to {fifo.name} (had {data!r})")
                try:
                    await asyncio.wait_for(readable.wait(), STEP)
                except TimeoutError:
                    continue
                readable.clear()
                data += os.read(fd, 4096)
        return data.decode().split("\n", 1)[0]
    finally:
        loop.remove_reader(fd)
        os.close(fd)


async def opened_for_writing(fifo: Path, timeout: float = 20.0) -> BinaryIO:
    """``fifo`` opened to write, once something has opened it to read (until then a
    non-blocking open fails with ENXIO)."""
    async with asyncio.timeout(timeout):
        while True:
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as error:
                if error.errno != errno.ENXIO:
                    raise
                await asyncio.sleep(STEP)
                continue
            os.set_blocking(fd, True)
            return os.fdopen(fd, "wb")
