"""Process-group plumbing for the bash tool: pick the shell, stop a whole group, hide secrets.

Commands run in their own session (``start_new_session=True``), so the shell and everything it
starts share one process group that can be signalled at once: SIGTERM, then SIGKILL after a
grace period; should lspilot die first, its ``GroupGuard`` does that. A group counts as gone when
no member is left that is not a zombie (where nothing reaps orphans, killed grandchildren stay
zombies; on Linux ``/proc`` tells them apart).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

POLL_SECONDS = 0.02
Stopped = Literal["exited", "SIGTERM", "SIGKILL"]

#: Environment variables whose values are credentials (provider API keys and the like).
SECRET_NAME = re.compile(r"(API_?KEY|(^|_)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?))$", re.IGNORECASE)
MIN_SECRET_LENGTH = 8  # shorter values ("1", "true") would redact ordinary output


def choose_shell(environ: Mapping[str, str]) -> str:
    """The user's ``$SHELL`` when it is bash, else bash from PATH, else sh.

    Commands are analyzed with the bash grammar, so they run in bash: zsh would expand glob
    qualifiers such as ``*(e:'cmd':)`` (code the bash grammar reads as a plain word), and fish or
    csh read a different language altogether. sh is the fallback on systems without bash.
    """
    shell = environ.get("SHELL", "")
    if Path(shell).name == "bash" and os.access(shell, os.X_OK):
        return shell
    return shutil.which("bash") or shutil.which("sh") or "/bin/sh"


def _members(pgid: int) -> bool:
    """Whether process group ``pgid`` has a member that is not a zombie."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            return True
    return False


async def _gone(pgid: int, seconds: float) -> bool:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while _members(pgid):
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(POLL_SECONDS)
    return True


async def stop_group(process: asyncio.subprocess.Process, grace: float) -> Stopped:
    """SIGTERM the process's group, SIGKILL whatever is left after ``grace`` seconds."""
    pgid = process.pid  # a session leader: its pid is the group id
    if not _members(pgid):
        await process.wait()
        return "exited"
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        if await _gone(pgid, grace):
            break
    await process.wait()
    return "SIGKILL" if sig == signal.SIGKILL else "SIGTERM"


#: The guard's script: the group's id on its first line, then a line when the command is over. A
#: pipe that ends before that second line means lspilot died: SIGTERM the group, SIGKILL it a
#: second later.
GUARD_SCRIPT = (
    'read g || exit; read _ && exit; kill -TERM "-$g" 2>/dev/null && sleep 1 && kill -KILL "-$g" 2>/dev/null'
)


#: What a command's process runs first: it waits for the gate's line, then becomes the shell
#: running the command (the same process, so the same group), with stdin from /dev/null.
GATE_SCRIPT = 'IFS= read -r _ || exit 125; exec "$0" -c "$1" </dev/null'


class GroupGuard:
    """Stops a command's process group when lspilot dies without stopping it (``kill -9``, the
    editor taking the daemon down): a small shell in a session of its own reads a pipe whose
    other end only lspilot holds, which the kernel closes however lspilot ends. (The lifeline of
    ``lsp_bridge/_reaper.py``, outside the group, so the command runs as it would without it.
    ``PR_SET_PDEATHSIG`` would reach the shell only, not the commands it starts.)

    Started before the command, so a command never runs unguarded; ``watch`` names the group,
    ``release`` lets the guard go once the command is over (or its group stopped)."""

    def __init__(self, process: asyncio.subprocess.Process, pipe: int) -> None:
        self.process = process
        self.pipe = pipe

    @classmethod
    async def start(cls) -> GroupGuard:
        read_end, write_end = os.pipe()  # not inheritable: no command gets the write end
        try:
            process = await asyncio.create_subprocess_exec(
                "/bin/sh",
                "-c",
                GUARD_SCRIPT,
                stdin=read_end,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
                start_new_session=True,  # Ctrl-C in lspilot's terminal does not end it
            )
        except BaseException:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)
        return cls(process, write_end)

    def watch(self, pgid: int) -> None:
        os.write(self.pipe, b"%d\n" % pgid)

    async def spawn(self, shell: str, command: str, cwd: Path) -> asyncio.subprocess.Process:
        """``shell -c command`` in a session of its own, watched: it starts held at a gate (a
        line on its stdin that only lspilot writes, once the guard knows the group), so lspilot
        killed while starting it cannot leave it running unwatched; at EOF it never runs."""
        gate_read, gate = os.pipe()  # not inheritable: the command never holds the write end
        try:
            try:
                process = await asyncio.create_subprocess_exec(
                    "/bin/sh",
                    "-c",
                    GATE_SCRIPT,
                    shell,
                    command,
                    cwd=cwd,
                    stdin=gate_read,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.STDOUT,
                    start_new_session=True,
                )
            finally:
                os.close(gate_read)
            self.watch(process.pid)  # a session leader: its pid is the group id
            os.write(gate, b"\n")
        finally:
            os.close(gate)
        return process

    async def release(self) -> None:
        try:
            os.write(self.pipe, b"\n")
        except OSError:
            pass  # the guard was killed: there is nothing to release
        finally:
            os.close(self.pipe)
        await self.process.wait()


def secrets(environ: Mapping[str, str]) -> dict[str, str]:
    """Credential values in ``environ`` (value -> variable name), longest first."""
    found = {
        value: name
        for name, value in environ.items()
        if SECRET_NAME.search(name) and len(value) >= MIN_SECRET_LENGTH
    }
    return dict(sorted(found.items(), key=lambda item: -len(item[0])))


class Redactor:
    """Replaces credential values in streamed text, even when one is split across chunks: text
    that could be the start of a secret is held back until the next chunk decides it."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = values
        self.pending = ""

    def feed(self, text: str) -> str:
        text = self.pending + text
        for value, name in self.values.items():
            if value in text:
                text = text.replace(value, f"[{name} redacted]")
        hold = max((_overlap(text, value) for value in self.values), default=0)
        self.pending = text[len(text) - hold :] if hold else ""
        return text[: len(text) - hold]

    def flush(self) -> str:
        rest, self.pending = self.pending, ""
        return rest


def _overlap(text: str, value: str) -> int:
    """The length of the longest end of ``text`` that is a proper start of ``value``."""
    for size in range(min(len(value) - 1, len(text)), 0, -1):
        if text.endswith(value[:size]):
            return size
    return 0
