"""The session database's connection, whose failures from outside lspilot are one line naming the
file and what to do (``StoreError``), not a traceback, and not taken for the model's error.

Outside lspilot: another process holding the database locked past the busy timeout (a ``sqlite3``
shell or a database browser with a transaction open), a full or read-only disk, an I/O error,
and a file damaged after it was opened (``database disk image is malformed``). SQL that lspilot
gets wrong stays a bug.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from .config import ConfigError

BUSY_SECONDS = 5
LOCKED = ("SQLITE_BUSY", "SQLITE_LOCKED")
DAMAGED = ("SQLITE_CORRUPT", "SQLITE_NOTADB")
#: SQLite's errors (and their extended forms, ``SQLITE_READONLY_DBMOVED``) that a user fixes.
OUTSIDE = (*LOCKED, *DAMAGED, "SQLITE_FULL", "SQLITE_READONLY", "SQLITE_IOERR", "SQLITE_CANTOPEN")


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
    reason = getattr(error, "strerror", None) or str(error)
    return (
        f"{path} cannot be used as lspilot's session database ({reason}): move it away if it is "
        "damaged, check that its folder is writable and the disk not full, or set LSPILOT_DATA_DIR "
        "to use another place"
    )


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
