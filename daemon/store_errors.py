"""The session database's connection, whose failures from outside lspilot are one line naming the
file and what to do (``StoreError``), not a traceback, and not taken for the model's error.

Outside lspilot: another process holding the database locked past the busy timeout (a ``sqlite3``
shell or a database browser with a transaction open), a full or read-only disk (said as such,
``statvfs`` telling), an I/O error, and a file damaged after it was opened (``database disk image
is malformed``). SQL that lspilot gets wrong stays a bug.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from .config import ConfigError

BUSY_SECONDS = 5
LOCKED = ("SQLITE_BUSY", "SQLITE_LOCKED")
DAMAGED = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
#: SQLite's errors (and their extended forms, ``SQLITE_READONLY_DBMOVED``) that a user fixes.
#: Those that a read-only or full disk causes (a WAL index that cannot be made is an I/O error).
WRITES = ("SQLITE_FULL", "SQLITE_READONLY", "SQLITE_IOERR", "SQLITE_CANTOPEN")
OUTSIDE = (*LOCKED, *DAMAGED, *WRITES)
#: Less free space than this counts as a full disk: the WAL's index alone takes 32 KiB.
FULL_BELOW = 1 << 20
ELSEWHERE = "set LSPILOT_DATA_DIR to a folder lspilot can write"


class StoreError(ConfigError):
    """The database cannot be used now, for a reason outside lspilot."""

    def __init__(self, path: Path, error: sqlite3.DatabaseError) -> None:
        self.name = error.sqlite_errorname
        super().__init__(explain(path, error))


def explain(path: Path, error: BaseException) -> str:
    """What is wrong with the database at ``path``, and what to do."""
    name = getattr(error, "sqlite_errorname", "")
    if name.startswith(LOCKED):
        return (
            f"cannot write the session database {path} ({error}): another process has held it locked "
            f"for more than {BUSY_SECONDS} s (a sqlite3 shell or a database browser with a transaction "
            "open?): close that, then try again"
        )
    unwritable = _unwritable(path.parent) if isinstance(error, OSError) or name.startswith(WRITES) else None
    if unwritable is not None:
        readable = " (sessions list and show read it as it is)" if path.is_file() else ""
        return f"cannot write the session database {path}: {unwritable}{readable}"
    reason = getattr(error, "strerror", None) or str(error)
    return (
        f"{path} cannot be used as lspilot's session database ({reason}): move it away if it is "
        "damaged, check that its folder is writable and the disk not full, or set LSPILOT_DATA_DIR "
        "to use another place"
    )


def _unwritable(folder: Path) -> str | None:
    """Why nothing can be written in ``folder`` (or the nearest folder there is above it), and
    what to do, when that is the disk's doing: read-only, not writable, or full."""
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    try:
        disk = os.statvfs(folder)
    except OSError:
        return None
    if disk.f_flag & os.ST_RDONLY:
        return f"{folder} is on a read-only file system; {ELSEWHERE}"
    if not os.access(folder, os.W_OK):
        return f"{folder} is not writable; {ELSEWHERE}"
    if disk.f_bavail * disk.f_frsize < FULL_BELOW:
        return "its disk is full; free some space, or set LSPILOT_DATA_DIR to use another place"
    return None


class Connection(sqlite3.Connection):
    """``sqlite3.Connection`` whose errors from outside lspilot are ``StoreError``s."""

    def __init__(self, database: Path, *args: Any, **kwargs: Any) -> None:
        super().__init__(database, *args, **kwargs)
        self.path = database

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        try:
            return super().execute(sql, parameters)
        except sqlite3.DatabaseError as error:
            if not error.sqlite_errorname.startswith(OUTSIDE):
                raise
            raise StoreError(self.path, error) from None
