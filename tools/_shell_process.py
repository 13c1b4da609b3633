"""Process-group plumbing for the bash tool: pick the shell, stop a whole group, hide secrets.

Commands run in their own session (``start_new_session=True``), so the shell and everything it
starts share one process group that can be signalled at once: SIGTERM, then SIGKILL after a
grace period. A group counts as gone when no member is left that is not a zombie (where nothing
reaps orphans, killed grandchildren stay zombies; on Linux ``/proc`` tells them apart).
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
