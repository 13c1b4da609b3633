"""Running ripgrep for the search tools (glob, grep, list): finding ``rg``, the flags they share,
streaming its output to a consumer in a worker thread, and killing it when the call is cancelled.

Output is consumed while rg is still walking the tree, so the per-path work the tools do (``stat``
for the modification-time sort) overlaps with the search instead of following it.
(What a search may show, its permissions: ``_search_access.py``.)
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import shutil
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lsp_bridge.globs import glob_pattern

from .base import ToolError

#: Flags every search uses: .gitignore/.ignore are respected even outside a git repository,
#: hidden files are searched, ``.git`` never is, and the user's rg config cannot change the output.
COMMON_FLAGS: tuple[str, ...] = ("--no-config", "--color=never", "--hidden", "--no-require-git")
NO_GIT = "--glob=!.git"

#: How many results the search tools show.
LIMIT = 100

_READ_SIZE = 1 << 20
_STDERR_CAP = 64 * 1024
#: Batches up to this many lines are consumed on the event loop; bigger ones in a worker thread.
_INLINE_LINES = 2048


@functools.cache
def _locate() -> str | None:
    beside = Path(sys.executable).with_name("rg")
    if os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("rg")


def find_rg() -> str:
    """The rg next to the running Python (the ``ripgrep`` wheel), else the one on PATH."""
    found = _locate()
    if found is None:
        raise ToolError(
            "ripgrep (rg) is not installed, so file search is unavailable. "
            "Install lspilot's dependencies (the `ripgrep` package) or put `rg` on PATH."
        )
    return found


def search_flags() -> list[str]:
    return [*COMMON_FLAGS, NO_GIT]


_GLOB_CHARS = frozenset("*?[{")


@dataclass(frozen=True)
class FileFilter:
    """A file glob as rg arguments that keep .gitignore in force.

    ``--glob`` would not do: a path it matches is searched even when .gitignore excludes it. So the
    name part becomes an rg file type (``--type-add``, matched after the ignore rules), leading
    literal folders become rg's path arguments, and only a glob with wildcards inside its folder
    part ("*/tests/*.py") also needs ``keeps`` on each path rg prints.
    """

    flags: list[str]
    roots: list[str]
    regex: re.Pattern[bytes] | None = None

    def keeps(self, path: bytes) -> bool:
        return self.regex is None or self.regex.fullmatch(path) is not None


def file_filter(glob: str | None, folder: Path) -> FileFilter:
    if not glob:
        return FileFilter([], [])
    text = glob.strip()
    if os.path.isabs(text):
        text = os.path.relpath(text, folder)
    parts = [part for part in text.split("/") if part not in ("", ".")]
    if ".." in parts or not parts:
        raise ToolError(
            f"The glob {glob!r} must stay inside the folder searched: put the folder in `path` "
            'and give a relative glob such as "**/*.py".'
        )
    roots: list[str] = []
    while len(parts) > 1 and not _GLOB_CHARS & set(parts[0]):
        roots.append(parts.pop(0))
    name = parts[-1]
    flags = [] if name in ("*", "**") else [f"--type-add=lspilot:{name}", "--type=lspilot"]
    simple = len(parts) == 1 or (len(parts) == 2 and parts[0] == "**")
    if roots and len(parts) == 1:  # "src/*.py": src's own files (the name alone matches at any depth)
        flags.append("--max-depth=1")
    regex = None if simple else re.compile(glob_pattern("/".join([*roots, *parts])).encode())
    return FileFilter(flags, ["/".join(roots)] if roots else [], regex)


@dataclass(frozen=True)
class RgExit:
    code: int
    stderr: str

    @property
    def failed(self) -> bool:
        """rg stopped on an error (not "nothing matched", nor "no file passed the filters", nor
        only paths it could not read: the rest was searched)."""
        if self.code in (0, 1) or "No files were searched" in self.stderr:
            return False
        lines = self.stderr.strip().splitlines()
        return not (self.code == 2 and lines and all(_PATH_ERROR.match(line) for line in lines))

    @property
    def skipped_some(self) -> bool:
        """rg could not read some paths (and searched the rest)."""
        return self.code == 2 and any(_PATH_ERROR.match(line) for line in self.stderr.splitlines())


#: Said when rg could not read some paths (exit 2) and searched the rest.
SKIPPED = "(Some paths could not be read and were skipped.)"
_ERROR_LINE = re.compile(r"^error: (.*)$", re.MULTILINE)
#: rg's word on one path it could not read: "rg: ./locked: Permission denied (os error 13)".
_PATH_ERROR = re.compile(r"rg: .+: .+ \(os error \d+\)$")


def rg_failure(stderr: str, pattern: str, what: str) -> ToolError:
    """rg's complaint about ``pattern`` (a regex or a glob), as a message the model can act on."""
    text = stderr.strip()
    if "regex parse error" in text:
        found = _ERROR_LINE.search(text)
        reason = found.group(1) if found else text.splitlines()[-1]
        return ToolError(
            f"Invalid regex {pattern!r}: {reason}. The pattern is a Rust regex: escape special "
            "characters such as ( ) [ ] { } . * + ? | \\ with a backslash to match them literally."
        )
    if "error parsing glob" in text:
        reason = text.split(":", 2)[-1].strip() if text.count(":") >= 2 else text
        return ToolError(f"Invalid glob {pattern!r}: {reason}.")
    first = text.splitlines()[0].removeprefix("rg: ") if text else "no error message"
    return ToolError(f"The {what} failed: {first}")


def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)  # its own group: start_new_session=True


async def _drain(stream: asyncio.StreamReader) -> str:
    kept = bytearray()
    while chunk := await stream.read(65536):
        if len(kept) < _STDERR_CAP:
            kept += chunk[: _STDERR_CAP - len(kept)]
    return kept.decode(errors="replace")


async def stream_rg(
    args: Sequence[str],
    cwd: Path,
    abort: asyncio.Event,
    consume: Callable[[list[bytes]], None],
    end: bytes = b"\n",
) -> RgExit:
    """Run ``rg args`` in ``cwd`` and hand its stdout, in batches of whole records (lines, or with
    ``--files --null`` names ending in ``end`` = NUL, as a name may hold a newline), to ``consume``.

    Batches are consumed one at a time: on the event loop when small (a read rarely returns
    more than a pipe buffer, 64 KiB), in a worker thread when large. rg is killed (and reaped) if
    ``abort`` is set or the calling task is cancelled; an abort then raises ``ToolError``.
    """
    proc = await asyncio.create_subprocess_exec(
        find_rg(),
        *args,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        limit=4 * _READ_SIZE,  # keep draining the pipe while a batch is being consumed
    )
    assert proc.stdout is not None and proc.stderr is not None
    watcher = asyncio.ensure_future(abort.wait())
    watcher.add_done_callback(lambda done: None if done.cancelled() else _kill(proc))
    errors = asyncio.ensure_future(_drain(proc.stderr))
    batch: asyncio.Future[None] | None = None
    try:
        tail = b""
        while chunk := await proc.stdout.read(_READ_SIZE):
            lines = (tail + chunk).split(end)
            tail = lines.pop()
            if len(lines) <= _INLINE_LINES:
                consume(lines)  # a pipe's worth: a few ms at most, cheaper than a thread hop
            else:
                batch = asyncio.ensure_future(asyncio.to_thread(consume, lines))
                await asyncio.shield(batch)
        if tail:
            consume([tail])
        code = await proc.wait()
        stderr = await errors
    finally:
        watcher.cancel()
        if proc.returncode is None:
            _kill(proc)
            await proc.wait()
        errors.cancel()
        if batch is not None and not batch.done():
            # The worker thread cannot be interrupted: let it finish before the caller's state goes.
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({batch})
    if abort.is_set():
        raise ToolError("The search was cancelled.")
    return RgExit(code, stderr)


class DirFd:
    """An open directory, for ``os.stat(name, dir_fd=...)`` on the relative paths rg prints."""

    def __init__(self, folder: Path) -> None:
        self.fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)

    def mtime(self, name: bytes) -> int:
        """Modification time in ns; 0 for a file that vanished or cannot be read."""
        try:
            return os.stat(name, dir_fd=self.fd).st_mtime_ns
        except OSError:
            return 0

    def newest_first(self, names: list[bytes]) -> list[tuple[int, bytes]]:
        """``(-mtime, name)`` pairs, which sort newest first (the hot loop of a big glob)."""
        stat, fd = os.stat, self.fd
        keyed: list[tuple[int, bytes]] = []
        append = keyed.append
        for name in names:
            try:
                append((-stat(name, dir_fd=fd).st_mtime_ns, name))
            except OSError:
                append((0, name))
        return keyed

    def close(self) -> None:
        os.close(self.fd)


def displayer(folder: Path, relative: Callable[[Path], str]) -> Callable[[bytes], str]:
    """Turns the paths rg prints (relative to ``folder``) into workspace-relative text.

    ``relative`` is ``ctx.relative``, applied once to ``folder`` rather than to every path; a name
    that is not plain ASCII goes through it whole, so bytes that are not UTF-8 are shown as
    ``\\xNN`` (``shown_path``), a form read and the edit tools take back, not as U+FFFD.
    """
    prefix = relative(folder)
    absolute = os.path.isabs(prefix)

    def show(name: bytes) -> str:
        if name.isascii() and b"\\" not in name:
            shown = os.path.join(prefix, name.decode())
            return shown if absolute else os.path.normpath(shown)
        return relative(Path(os.path.normpath(os.path.join(folder, os.fsdecode(name)))))

    return show


def capped_note(shown: int, found: int, noun: str, refine: str) -> str:
    return (
        f"(Showing {shown} of {found} {noun}, the most recently modified first. "
        f"Refine your {refine} to see the rest.)"
    )
