"""Noticing files changed on disk by anyone (git checkout, formatters, the shell, editors).

On Linux this uses inotify: the kernel queues an event before the writing syscall returns,
so draining the queue right before a request sees every change made before it, without polling
or sleeping. Elsewhere it falls back to comparing (mtime, size) snapshots on each drain.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import logging
import os
import select
import struct
from pathlib import Path
from typing import Protocol

from lsprotocol.types import FileChangeType

log = logging.getLogger(__name__)

IGNORED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".cache",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
    }
)

#: The suffix of the temp files lspilot writes beside a file and renames over it at once (an
#: atomic save): they are never reported, so a save is one change of the file itself.
TEMP_SUFFIX = ".lspilot-tmp"
_TEMP_SUFFIX = TEMP_SUFFIX.encode()

_IN_MODIFY = 0x002
_IN_ATTRIB = 0x004
_IN_CLOSE_WRITE = 0x008
_IN_MOVED_FROM = 0x040
_IN_MOVED_TO = 0x080
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_DELETE_SELF = 0x400
_IN_Q_OVERFLOW = 0x4000
_IN_IGNORED = 0x8000
_IN_ISDIR = 0x40000000
_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000
_MASK = (
    _IN_MODIFY
    | _IN_CLOSE_WRITE
    | _IN_MOVED_FROM
    | _IN_MOVED_TO
    | _IN_CREATE
    | _IN_DELETE
    | _IN_DELETE_SELF
    | _IN_ATTRIB
)
_HEADER = struct.Struct("iIII")

Changes = dict[Path, FileChangeType]


class Watcher(Protocol):
    def drain(self) -> Changes: ...
    def covers(self, folder: str) -> bool:
        """Changes to the files directly in ``folder`` are reported as they happen."""
        ...

    def close(self) -> None: ...


def watch(root: Path) -> Watcher:
    """A recursive watcher of ``root``: inotify where available, else snapshots."""
    try:
        return InotifyWatcher(root)
    except OSError as error:
        log.info("inotify unavailable (%s); polling %s for changes", error, root)
        return SnapshotWatcher(root)


def merge_change(changes: Changes, path: Path, kind: FileChangeType) -> None:
    """Record ``kind`` for ``path``, folding it into an earlier event for the same path."""
    previous = changes.get(path)
    if previous == FileChangeType.Created and kind == FileChangeType.Changed:
        return
    if previous == FileChangeType.Created and kind == FileChangeType.Deleted:
        del changes[path]
        return
    if previous == FileChangeType.Deleted and kind == FileChangeType.Created:
        kind = FileChangeType.Changed
    changes[path] = kind


class InotifyWatcher:
    def __init__(self, root: Path) -> None:
        name = ctypes.util.find_library("c")
        libc = ctypes.CDLL(name, use_errno=True)
        self._add_watch = libc.inotify_add_watch
        self._add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1 failed")
        self._fd = fd
        # Asked before every request: a poll that finds nothing costs less than a read that
        # raises BlockingIOError.
        self._ready = select.poll()
        self._ready.register(fd, select.POLLIN)
        self._root = root
        self._dirs: dict[int, Path] = {}
        self._folders: set[str] = set()
        # The names of the files in each watched folder, as last seen: after an overflow, those
        # gone are reported as deleted.
        self._files: dict[str, set[str]] = {}
        self._add_tree(root, changes=None)

    def _add_tree(self, top: Path, changes: Changes | None) -> None:
        for folder, dirnames, filenames in os.walk(top):
            dirnames[:] = [d for d in dirnames if d not in IGNORED_DIRS]
            wd = self._add_watch(self._fd, os.fsencode(folder), _MASK)
            if wd < 0:
                err = ctypes.get_errno()
                if err == errno.ENOSPC:
                    log.warning("inotify watch limit reached; some changes under %s go unseen", top)
                    return
                continue
            self._dirs[wd] = Path(folder)
            self._folders.add(folder)
            names = self._files[folder] = {f for f in filenames if not f.endswith(TEMP_SUFFIX)}
            if changes is not None:  # a new directory: its files appeared with it
                for filename in names:
                    merge_change(changes, Path(folder, filename), FileChangeType.Created)

    def _rescan(self, changes: Changes) -> None:
        """Events were lost: watch the folders made meanwhile, report every file as created
        (servers learn of the new ones and re-read the others) and those gone as deleted."""
        log.warning("inotify queue overflowed; rescanning %s", self._root)
        changes[Path("/")] = FileChangeType.Changed
        before = self._files
        self._dirs, self._folders, self._files = {}, set(), {}  # a watched folder keeps its wd
        self._add_tree(self._root, changes)
        for folder, names in before.items():
            for name in names - self._files.get(folder, set()):
                path = Path(folder, name)
                if not os.path.lexists(path):  # not just in a folder the walk could not watch
                    merge_change(changes, path, FileChangeType.Deleted)

    def _forget_folder(self, folder: str) -> None:
        inside = folder + os.sep
        for known in [f for f in self._files if f == folder or f.startswith(inside)]:
            del self._files[known]

    def drain(self) -> Changes:
        changes: Changes = {}
        while self._ready.poll(0):
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                break
            self._parse(data, changes)
        return changes

    def _parse(self, data: bytes, changes: Changes) -> None:
        offset = 0
        while offset < len(data):
            wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
            offset += _HEADER.size
            name = data[offset : offset + length].rstrip(b"\0")
            offset += length
            if mask & _IN_Q_OVERFLOW:
                self._rescan(changes)
                continue
            folder = self._dirs.get(wd)
            if mask & _IN_IGNORED:
                gone = self._dirs.pop(wd, None)
                if gone is not None:
                    self._folders.discard(str(gone))
                    self._files.pop(str(gone), None)
                continue
            if folder is None or not name or name.endswith(_TEMP_SUFFIX):
                continue
            filename = os.fsdecode(name)
            path = folder / filename
            if mask & _IN_ISDIR:
                if mask & (_IN_CREATE | _IN_MOVED_TO) and filename not in IGNORED_DIRS:
                    self._add_tree(path, changes)
                elif mask & (_IN_DELETE | _IN_MOVED_FROM):
                    merge_change(changes, path, FileChangeType.Deleted)  # a folder went away
                    self._forget_folder(str(path))
                continue
            names = self._files.setdefault(str(folder), set())
            if mask & (_IN_CREATE | _IN_MOVED_TO):
                merge_change(changes, path, FileChangeType.Created)
                names.add(filename)
            elif mask & (_IN_DELETE | _IN_MOVED_FROM):
                merge_change(changes, path, FileChangeType.Deleted)
                names.discard(filename)
            else:
                merge_change(changes, path, FileChangeType.Changed)

    def covers(self, folder: str) -> bool:
        return folder in self._folders

    def close(self) -> None:
        if self._fd >= 0:
            self._ready.unregister(self._fd)
            os.close(self._fd)
            self._fd = -1


class SnapshotWatcher:
    def __init__(self, root: Path) -> None:
        self._root = root
        self._snapshot = self._scan()

    def _scan(self) -> dict[Path, tuple[int, int]]:
        found: dict[Path, tuple[int, int]] = {}
        for folder, dirnames, filenames in os.walk(self._root):
            dirnames[:] = [d for d in dirnames if d not in IGNORED_DIRS]
            for filename in filenames:
                if filename.endswith(TEMP_SUFFIX):
                    continue
                path = Path(folder, filename)
                try:
                    stat = path.stat()
                except OSError:
                    continue
                found[path] = (stat.st_mtime_ns, stat.st_size)
        return found

    def drain(self) -> Changes:
        current = self._scan()
        changes: Changes = {}
        for path, stamp in current.items():
            before = self._snapshot.get(path)
            if before is None:
                changes[path] = FileChangeType.Created
            elif before != stamp:
                changes[path] = FileChangeType.Changed
        for path in self._snapshot.keys() - current.keys():
            changes[path] = FileChangeType.Deleted
        self._snapshot = current
        return changes

    def covers(self, folder: str) -> bool:
        return False  # changes are only seen by the next scan

    def close(self) -> None:
        self._snapshot.clear()
