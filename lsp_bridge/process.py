"""Spawning a language server in its own process group, reading its stderr, and stopping it."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import shutil
import signal
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

_REAPER = Path(__file__).with_name("_reaper.py")
STDERR_TAIL_LINES = 40
STDERR_LINE_BYTES = 2000  # the start of a longer line is kept, the rest dropped


@dataclass
class ServerProcess:
    """A running server: its process (the reaper shim), lifeline and recent stderr."""

    proc: asyncio.subprocess.Process
    name: str
    lifeline: int
    #: The server's own TMPDIR, removed when it stops (typescript-language-server, for one,
    #: leaves a folder in the temp dir at every start).
    tmpdir: Path | None = None
    stderr_tail: collections.deque[str] = field(
        default_factory=lambda: collections.deque(maxlen=STDERR_TAIL_LINES)
    )

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def exited(self) -> bool:
        return self.proc.returncode is not None

    def stderr_text(self) -> str:
        return "\n".join(self.stderr_tail)

    def __post_init__(self) -> None:
        self._stderr_task = asyncio.create_task(self._drain_stderr())

    async def _drain_stderr(self) -> None:
        # Servers block once a pipe fills; always read stderr, keep only its tail. It ends when
        # the server and every child that shared the pipe are gone, stopped or crashed: then
        # their temp dir goes too. Read in chunks: readline() raises on a line longer than the
        # stream's limit (64 kB), and a minified stack trace or a JSON log line can be.
        stream = self.proc.stderr
        assert stream is not None
        partial = b""
        while chunk := await stream.read(65536):
            *lines, partial = (partial + chunk).split(b"\n")
            partial = partial[:STDERR_LINE_BYTES]
            for line in lines:
                self._note(line)
        if partial:
            self._note(partial)
        await self.proc.wait()
        if self.tmpdir is not None:
            await asyncio.to_thread(shutil.rmtree, self.tmpdir, ignore_errors=True)

    def _note(self, line: bytes) -> None:
        text = line[:STDERR_LINE_BYTES].decode(errors="replace").rstrip()
        self.stderr_tail.append(text)
        log.debug("%s stderr: %s", self.name, text)

    def kill(self) -> None:
        """SIGKILL the process group now (``stop`` still reaps it)."""
        _signal_group(self.proc.pid, signal.SIGKILL)

    async def stop(self, grace: float = 2.0) -> None:
        """SIGTERM the process group, SIGKILL it after ``grace`` seconds, reap everything."""
        with contextlib.suppress(OSError):
            os.close(self.lifeline)
        if not self.exited:
            _signal_group(self.proc.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), grace)
            except TimeoutError:
                log.warning("%s ignored SIGTERM; killing it", self.name)
        # Children of the server (e.g. tsserver) may outlive it: kill the whole group.
        _signal_group(self.proc.pid, signal.SIGKILL)
        await self.proc.wait()
        with contextlib.suppress(asyncio.CancelledError):
            await self._stderr_task


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def spawn(name: str, argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> ServerProcess:
    """Start ``argv`` under the reaper shim in a new process group, with a temp dir of its own."""
    tmpdir = Path(tempfile.mkdtemp(prefix=f"lspilot-{name}-"))
    read_end, write_end = os.pipe()
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            "-S",
            str(_REAPER),
            str(read_end),
            "--",
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=cwd,
            env={**os.environ, "TMPDIR": str(tmpdir), **(env or {})},
            pass_fds=(read_end,),
            start_new_session=True,
        )
    except BaseException:
        os.close(write_end)
        shutil.rmtree(tmpdir, ignore_errors=True)
        raise
    finally:
        os.close(read_end)
    return ServerProcess(proc=proc, name=name, lifeline=write_end, tmpdir=tmpdir)
