"""What a tool sees while it runs: the session's environment and the call's context.

``ToolEnv`` lives as long as a session (workspace root, permission engine, session state,
limits, the lsp_bridge); ``ToolContext`` is one call (ids, abort signal, progress sink).
"""

from __future__ import annotations

import asyncio
import errno
import functools
import hashlib
import logging
import os
import re
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISDIR, S_ISREG
from typing import TYPE_CHECKING, Any, Literal, Protocol

from lsp_bridge import Bridge

from .base import ToolError
from .changes import ChangeSink, DiskChanges
from .permission import PermissionEngine, PermissionRequest, literal
from .truncate import OutputLimits

if TYPE_CHECKING:
    from .execute import Outcome

log = logging.getLogger(__name__)

TodoStatus = Literal["pending", "in_progress", "completed", "cancelled"]


@dataclass
class Todo:
    id: str
    content: str
    status: TodoStatus = "pending"
    priority: Literal["high", "medium", "low"] = "medium"


@dataclass(frozen=True)
class FileStamp:
    """What a file held when the agent saw it: the edit tools refuse to change it once it differs."""

    mtime_ns: int
    size: int
    digest: str

    @classmethod
    def of(cls, data: bytes, mtime_ns: int) -> FileStamp:
        return cls(mtime_ns, len(data), hashlib.blake2b(data, digest_size=16).hexdigest())

    @classmethod
    def take(cls, path: Path) -> FileStamp | None:
        """The stamp of ``path`` now; None for a missing file or a directory."""
        try:
            data, stat = read_file(path)
        except OSError:
            return None
        return cls.of(data, stat.st_mtime_ns)


class SessionState(Protocol):
    """What tools remember per session. The daemon persists it; tests and the CLI keep it in memory."""

    id: str

    def record_read(self, path: Path, stamp: FileStamp | None = None) -> None:
        """The agent has seen ``path`` as ``stamp`` says (as it is on disk now when None)."""
        ...

    def last_read(self, path: Path) -> float | None: ...

    def read_stamp(self, path: Path) -> FileStamp | None: ...

    def todos(self) -> list[Todo]: ...

    def set_todos(self, todos: list[Todo]) -> None: ...


@dataclass
class MemorySession:
    id: str
    reads: dict[Path, float] = field(default_factory=dict[Path, float])
    stamps: dict[Path, FileStamp | None] = field(default_factory=dict[Path, FileStamp | None])
    todo_list: list[Todo] = field(default_factory=list[Todo])

    def record_read(self, path: Path, stamp: FileStamp | None = None) -> None:
        self.reads[path] = time.time()
        self.stamps[path] = stamp or FileStamp.take(path)

    def last_read(self, path: Path) -> float | None:
        return self.reads.get(path)

    def read_stamp(self, path: Path) -> FileStamp | None:
        return self.stamps.get(path)

    def todos(self) -> list[Todo]:
        return list(self.todo_list)

    def set_todos(self, todos: list[Todo]) -> None:
        self.todo_list = list(todos)


def read_file(path: Path) -> tuple[bytes, os.stat_result]:
    """The bytes of ``path`` and its stat from the same open file, in four system calls where
    ``open().read()`` makes ten (the edit tools read the file of every call before anything
    else). Raises ``OSError``: ``IsADirectoryError`` for a folder, EINVAL for anything else that
    is not a regular file (a FIFO would block, a device such as /dev/zero never end)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)  # no effect on a regular file
    try:
        stat = os.fstat(fd)
        if not S_ISREG(stat.st_mode):
            if S_ISDIR(stat.st_mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        want = stat.st_size + 1  # one more than its size: a short read is the end of the file
        chunk = os.read(fd, want)
        parts = [chunk]
        while len(chunk) == want:  # it grew meanwhile, or its size says nothing (/proc)
            want = 1 << 16
            chunk = os.read(fd, want)
            parts.append(chunk)
        return b"".join(parts), stat
    finally:
        os.close(fd)


def real_path(path: Path) -> Path:
    """``path.resolve()``: symlinks and ``..`` resolved, a missing tail kept as it is. For a path
    that exists, one open and one readlink of /proc/self/fd (on Linux) instead of an lstat and
    a Python step per component: tools resolve the path of every call."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except (OSError, AttributeError):  # missing, not searchable, or no O_PATH here
        return _resolve(path)
    try:
        real = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:  # no /proc
        return _resolve(path)
    finally:
        os.close(fd)
    if not real.startswith("/") or real.endswith(" (deleted)"):
        return _resolve(path)
    return Path(real)


def _resolve(path: Path) -> Path:
    """``path.resolve()``, a symlink loop an OSError (ELOOP) as the system calls say it, not
    Python 3.11's RuntimeError."""
    try:
        return path.resolve()
    except RuntimeError:
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(path)) from None


#: A byte of a file name that is not UTF-8, as ``os.fsdecode`` keeps it: a lone surrogate.
_UNDECODABLE = re.compile("[\udc80-\udcff]")
#: ``shown_path``'s escapes: ``\\xNN`` for such a byte (never below 0x80), ``\\\\`` for a backslash.
_ESCAPE = re.compile(r"\\(\\|x[89a-fA-F][0-9a-fA-F])")


def shown_path(text: str) -> str:
    """A path (as ``os.fsdecode`` gives it) as the model reads and writes it back.

    A file name need not be UTF-8 on Linux (``caf\\xe9.py`` from a Latin-1 system). Its
    undecodable bytes are lone surrogates in ``str``, which no JSON or UTF-8 carries, and
    ``decode(errors="replace")`` makes them a U+FFFD that names no file. They are shown as
    ``\\xNN`` instead, a backslash in such a name as ``\\\\``; ``ToolContext.resolve`` reads
    the form back. Every other path is returned as it is."""
    if text.isascii() or _UNDECODABLE.search(text) is None:
        return text
    return _UNDECODABLE.sub(lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", text.replace("\\", "\\\\"))


def shown_name(raw: bytes) -> str:
    """``shown_path`` of a path as bytes (what rg prints)."""
    return raw.decode() if raw.isascii() else shown_path(os.fsdecode(raw))


def _unescaped(path: str, root: Path) -> str | None:
    """``path`` read as ``shown_path`` writes names that are not UTF-8, when that names a file, or
    a new file in a folder so named (otherwise its backslashes are something else)."""
    text = _ESCAPE.sub(lambda m: "\\" if m[1] == "\\" else chr(0xDC00 + int(m[1][1:], 16)), path)
    try:  # escaped UTF-8 bytes (\\xc3\\xa9) become their character, as the name's own text
        text = os.fsdecode(os.fsencode(text))
    except UnicodeError:  # another lone surrogate, sent as \\udXXX in JSON: not a file's name
        return None
    whole = os.path.join(root, text)
    folder = os.path.dirname(text)
    if os.path.lexists(whole) or (_UNDECODABLE.search(folder) and os.path.isdir(os.path.join(root, folder))):
        return text
    return None


def _plain(path: str, root: Path) -> str:
    """``path`` with ``~`` expanded, a ``file://`` URI as its path, ``shown_path``'s escapes
    read back when they name a file, and (on POSIX) other backslashes as separators unless a
    file is really named so."""
    if path.startswith("~"):
        return os.path.expanduser(path)
    if path.startswith("file://"):
        parsed = urllib.parse.urlsplit(path)
        if parsed.scheme == "file" and parsed.netloc in ("", "localhost"):
            path = urllib.parse.unquote(parsed.path, errors="surrogateescape")
    if "\\" in path and os.sep == "/" and not os.path.lexists(os.path.join(root, path)):
        if "\\x" in path and (named := _unescaped(path, root)) is not None:
            return named
        path = path.replace("\\", "/")
    return path


def relative_text(path: Path, root: Path) -> str:
    """``ToolContext.relative`` before ``shown_path``: "." for the root itself."""
    inner, outer = str(path), str(root)
    if inner == outer:
        return "."
    if is_within(path, root):
        return inner[len(outer) :].lstrip(os.sep)
    return inner


def is_within(path: Path, folder: Path) -> bool:
    """``path`` is ``folder`` or inside it (both absolute and normalised, so comparing their text
    by whole components is enough: ``/a/bc`` is not inside ``/a/b``)."""
    inner, outer = str(path), str(folder)
    return inner == outer or inner.startswith(outer if outer.endswith(os.sep) else outer + os.sep)


@dataclass
class ToolEnv:
    root: Path
    session: SessionState
    permissions: PermissionEngine
    data_dir: Path
    limits: OutputLimits = field(default_factory=OutputLimits)
    agent: str = "build"
    #: The tools ``agent`` may call, by id (the agent loop sets them each step); None: every tool
    #: whose permission is not denied outright. Calls through batch are held to them too.
    tools: frozenset[str] | None = None
    bridge_factory: Callable[[], Bridge] | None = None
    #: False when the bridge is shared with other sessions (the editor server's): ``close`` leaves it up.
    owns_bridge: bool = True
    settings: dict[str, Any] = field(default_factory=dict[str, Any])
    #: Where the edit tools' changes go: the disk, or (later) an editor's review.
    changes: ChangeSink = field(default_factory=DiskChanges)
    _bridge: Bridge | None = None
    _background: set[asyncio.Task[Any]] = field(default_factory=set[asyncio.Task[Any]])

    def __post_init__(self) -> None:
        self.root = self.root.resolve()

    @property
    def output_dir(self) -> Path:
        """Where full outputs of truncated calls are saved (readable without an external ask)."""
        return self.data_dir / "tool-output"

    @functools.cached_property
    def output_dir_real(self) -> Path:
        return self.output_dir.resolve()

    @property
    def bridge(self) -> Bridge:
        if self._bridge is None:
            if self.bridge_factory is None:
                raise ToolError("Language servers are not available in this session.")
            self._bridge = self.bridge_factory()
        return self._bridge

    @property
    def bridge_started(self) -> bool:
        return self._bridge is not None

    def background(self, work: Coroutine[Any, Any, Any], what: str) -> None:
        """Run ``work`` without waiting for it; failures are logged, never raised into a tool."""

        def done(task: asyncio.Task[Any]) -> None:
            self._background.discard(task)
            if not task.cancelled() and task.exception():
                log.info("background %s failed: %s", what, task.exception())

        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(done)

    async def close(self) -> None:
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        if self._bridge is not None and self.owns_bridge:
            await self._bridge.shutdown()
        self._bridge = None


MetadataSink = Callable[[str | None, dict[str, Any]], None]
RunTool = Callable[[str, dict[str, Any], str], Awaitable["Outcome"]]


class Abort(asyncio.Event):
    """A call's abort signal (set by whoever drives the call): an ``asyncio.Event`` whose first
    ``set`` also cancels the tasks it ``guards``, once each, so no waiter task is needed per call."""

    def __init__(self) -> None:
        super().__init__()
        self._tasks: set[asyncio.Future[Any]] = set()

    def set(self) -> None:
        if self.is_set():
            return
        super().set()
        for task in list(self._tasks):
            task.cancel()

    def guard(self, task: asyncio.Future[Any]) -> None:
        """Cancel ``task`` when the signal is set (at once if it is), until ``release``."""
        if self.is_set():
            task.cancel()
        self._tasks.add(task)

    def release(self, task: asyncio.Future[Any]) -> None:
        self._tasks.discard(task)


@dataclass
class ToolContext:
    env: ToolEnv
    call_id: str
    message_id: str = ""
    abort: Abort = field(default_factory=Abort)
    on_metadata: MetadataSink | None = None
    #: Runs another tool through the same wrapper (set by the wrapper; used by ``batch``).
    run_tool: RunTool | None = None
    depth: int = 0

    @property
    def root(self) -> Path:
        return self.env.root

    @property
    def session_id(self) -> str:
        return self.env.session.id

    @property
    def agent(self) -> str:
        return self.env.agent

    def metadata(self, title: str | None = None, metadata: dict[str, Any] | None = None) -> None:
        """Live progress for whoever watches the call (editor, terminal)."""
        if self.on_metadata:
            self.on_metadata(title, metadata or {})

    async def ask(self, request: PermissionRequest) -> None:
        request.call_id = request.call_id or self.call_id
        await self.env.permissions.ask(request)

    async def approved(self) -> None:
        """A change sink that approves edits without ``ask`` (an editor's review) calls this once the
        user accepted, before writing: the edit tools' diagnostics of the old text wait for it."""

    def resolve(self, path: str) -> Path:
        """``path`` (absolute, ``~``, or relative to the workspace root) made absolute and normalised.

        Models also name files as ``file://`` URIs (copied from a language server's answer) and
        with Windows separators (``src\\app.py``): taken as written, the first made ``write``
        create a folder called ``file:`` and the second a file whose name holds backslashes."""
        if "\0" in path:  # no file name holds one (os calls raise ValueError)
            raise ToolError(f"{path!r} is no path: it holds a NUL character (\\0).")
        if path.startswith(("~", "file://")) or "\\" in path:
            path = _plain(path, self.root)
        return Path(os.path.normpath(os.path.join(self.root, path)))  # join keeps an absolute path

    def relative(self, path: Path) -> str:
        """Workspace-relative text for paths inside the root, absolute text for the rest; bytes of
        a name that are not UTF-8 as ``shown_path`` shows them (so permission rules, asks and
        results all name such a file as the model writes it)."""
        inner = relative_text(path, self.root)
        return inner if inner.isascii() else shown_path(inner)

    async def authorize(self, path: str, permission: str, title: str) -> Path:
        """Resolve ``path``, ask ``external_directory`` if it leaves the workspace (after ``..`` and
        symlinks), then ask ``permission`` for it. Returns the path as given, normalised."""
        resolved = self.resolve(path)
        real = real_path(resolved)
        trusted = is_within(real, self.env.output_dir_real)
        if not trusted:
            await self.ask_outside(real, title)
            pattern = self.relative(real)
            await self.ask(PermissionRequest(permission, [pattern], [pattern], title, {"path": str(real)}))
        return resolved

    async def ask_outside(self, real: Path, title: str) -> None:
        """Ask ``external_directory`` for the folder of ``real`` (symlinks resolved) if it lies
        outside the workspace."""
        if is_within(real, self.root):
            return
        folder = real if real.is_dir() else real.parent
        await self.ask(
            PermissionRequest(
                "external_directory",
                patterns=[str(folder / "*")],
                always=[os.path.join(literal(str(folder)), "*")],  # that folder, whatever its name
                title=f"{title} outside the workspace: {real}",
                metadata={"path": str(real)},
            )
        )
