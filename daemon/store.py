"""SQLite persistence (stdlib ``sqlite3``, WAL) in lspilot's data dir.

Schema changes are numbered migrations applied in order; ``PRAGMA user_version`` records the
last one applied. Sessions belong to a workspace root; their messages and parts (text, reasoning,
tool calls with input, state, output, metadata and timings) are written as a turn goes, so a
crash or kill loses at most the part in flight. Tool state (files read and when, the todo
list) is stored per session so a resumed session keeps its read-before-write guarantees. A turn
holds its session's lease (``daemon/lease.py``) so two processes never write one session at once.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import time
import uuid
from contextlib import AbstractAsyncContextManager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tools import FileStamp, Todo

from . import jsontext, lease
from .config import ConfigError
from .store_errors import BUSY_SECONDS, LOCKED, Connection, StoreError, explain

MIGRATIONS: list[str] = [
    """
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        root TEXT NOT NULL,
        title TEXT NOT NULL DEFAULT '',
        agent TEXT NOT NULL DEFAULT 'build',
        created REAL NOT NULL,
        updated REAL NOT NULL
    );
    CREATE INDEX sessions_root ON sessions (root, updated);
    CREATE TABLE file_reads (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        path TEXT NOT NULL,
        at REAL NOT NULL,
        PRIMARY KEY (session_id, path)
    );
    CREATE TABLE todos (
        session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
        items TEXT NOT NULL
    );
    """,
    """
    CREATE TABLE messages (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        role TEXT NOT NULL,          -- user | assistant | summary
        turn_id TEXT NOT NULL,
        created REAL NOT NULL,
        model TEXT,
        finish TEXT,
        usage TEXT,
        cost REAL NOT NULL DEFAULT 0
    );
    CREATE INDEX messages_session ON messages (session_id, seq);
    CREATE TABLE parts (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        message_id TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
        kind TEXT NOT NULL,          -- text | reasoning | tool | error | summary
        text TEXT NOT NULL DEFAULT '',
        call_id TEXT,
        tool TEXT,
        input TEXT,
        state TEXT,                  -- pending | running | completed | error
        output TEXT,
        metadata TEXT,
        started REAL,
        ended REAL
    );
    CREATE INDEX parts_message ON parts (message_id, id);
    """,
    """
    ALTER TABLE file_reads ADD COLUMN mtime_ns INTEGER;
    ALTER TABLE file_reads ADD COLUMN size INTEGER;
    ALTER TABLE file_reads ADD COLUMN digest TEXT;
    """,
    # a subagent's session: continued only from the session that made it, and not listed
    """
    ALTER TABLE sessions ADD COLUMN parent_id TEXT REFERENCES sessions (id) ON DELETE CASCADE;
    """,
]


WAL_TRIES = 50


def _statements(script: str) -> list[str]:
    """A migration's statements, one by one (``executescript`` would commit the transaction)."""
    statements: list[str] = []
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                statements.append(pending)
            pending = ""
    if pending.strip(" \n;"):
        statements.append(pending)
    return statements


class Store:
    def __init__(self, path: Path, *, reading: bool = False) -> None:
        """Open (creating or migrating) the database; a ``ConfigError`` naming the file when it is
        not one SQLite can use (damaged, not a database, its folder not writable). ``reading``, for
        a command that only reads (``sessions list``): a database that cannot be written (its disk
        read-only or full) is opened read-only instead."""
        self.path = path
        try:
            self._open()
        except ConfigError:
            read_only = _read_only(path) if reading else None
            if read_only is None:
                raise
            self.db = read_only

    def _open(self) -> None:
        path = self.path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(path, isolation_level=None, factory=Connection)
        except (OSError, sqlite3.Error) as error:
            raise ConfigError(explain(path, error)) from None
        try:
            # First: two daemons may open the file at once.
            self.db.execute(f"PRAGMA busy_timeout={BUSY_SECONDS * 1000}")
            self._wal()
            # WAL + NORMAL: every write survives a killed process; only a power cut may lose the last ones.
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except BaseException as error:
            self.db.close()
            if isinstance(error, sqlite3.Error):
                raise ConfigError(explain(path, error)) from None
            raise

    def _wal(self) -> None:
        """Switch to WAL. On a new file that another process is switching too, SQLite answers
        "database is locked" at once (the busy timeout does not cover it): try again a while."""
        for attempt in range(WAL_TRIES):
            try:
                self.db.execute("PRAGMA journal_mode=WAL")
                return
            except StoreError as error:
                if attempt == WAL_TRIES - 1 or not error.name.startswith(LOCKED):
                    raise
                time.sleep(0.1)  # blocking, like the busy timeout itself: the store is synchronous

    def _version(self) -> int:
        return int(self.db.execute("PRAGMA user_version").fetchone()[0])

    def _migrate(self) -> None:
        """Apply the migrations this database lacks, in one write transaction: another process
        migrating at the same moment waits for it, then finds nothing left to do."""
        if self._version() == len(MIGRATIONS):
            return
        self.db.execute("BEGIN IMMEDIATE")
        try:
            version = self._version()  # again, now that no other process can write
            if version > len(MIGRATIONS):
                raise ConfigError(
                    f"{self.path} was written by a newer lspilot (schema {version}; this one knows "
                    f"{len(MIGRATIONS)}): upgrade lspilot, or set LSPILOT_DATA_DIR to use another place"
                )
            for number, script in enumerate(MIGRATIONS[version:], version + 1):
                for statement in _statements(script):
                    self.db.execute(statement)
                self.db.execute(f"PRAGMA user_version = {number}")
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self.db.close()

    def claim(self, session_id: str) -> AbstractAsyncContextManager[None]:
        """Hold the session while a turn writes to it (``async with``): ``lease.SessionBusy`` when
        another process holds it; released when the block ends, or by the kernel when the process
        dies."""
        return lease.hold(self.path.with_name("session-locks"), session_id)

    def running(self) -> set[str]:
        """The sessions in which a process (this one included) is running a turn now."""
        return lease.held(self.path.with_name("session-locks"))

    def create_session(
        self, root: Path, agent: str = "build", title: str = "", parent: str | None = None
    ) -> str:
        """A new session; ``parent``: the session whose subagent works in it."""
        session_id = f"ses_{time.strftime('%Y%m%d')}_{uuid.uuid4().hex[:12]}"
        now = time.time()
        self.db.execute(
            "INSERT INTO sessions (id, root, title, agent, created, updated, parent_id) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (session_id, _path_key(root), title, agent, now, now, parent),
        )
        return session_id

    def session_parent(self, session_id: str) -> str | None:
        """The session whose subagent works in ``session_id``; None for a session of its own."""
        row = self.db.execute("SELECT parent_id FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return row[0] if row else None

    def session_root(self, session_id: str) -> Path | None:
        row = self.db.execute("SELECT root FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return Path(os.fsdecode(row[0])) if row else None

    def session_agent(self, session_id: str) -> str | None:
        """The agent the session's last turn ran with."""
        row = self.db.execute("SELECT agent FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return row[0] if row else None

    def set_root(self, session_id: str, root: Path) -> None:
        self.db.execute("UPDATE sessions SET root = ? WHERE id = ?", (_path_key(root), session_id))

    def set_run(self, session_id: str, root: Path, agent: str) -> None:
        """The project (moved or renamed since, it goes on there) and agent the session's turns
        run with from now on; written by a turn that holds the session (``claim``)."""
        self.db.execute(
            "UPDATE sessions SET root = ?, agent = ? WHERE id = ? AND (root != ? OR agent != ?)",
            (_path_key(root), agent, session_id, _path_key(root), agent),
        )

    def sessions(self, root: Path) -> list[Row]:
        """The sessions of ``root``, the latest first; not its subagents' sessions."""
        rows = self._json_rows(
            "sessions", SESSION_COLUMNS, "root = ? AND parent_id IS NULL", (_path_key(root),)
        )
        return sorted(rows, key=lambda row: row["updated"], reverse=True)

    def touch(self, session_id: str, title: str | None = None) -> None:
        self.db.execute(
            "UPDATE sessions SET updated = ?, "
            "title = CASE WHEN title = '' THEN coalesce(?, '') ELSE title END WHERE id = ?",
            (time.time(), _column(title), session_id),
        )

    def add_message(self, session_id: str, role: str, turn_id: str, model: str | None = None) -> str:
        message_id = f"msg_{uuid.uuid4().hex[:16]}"
        self.db.execute(
            "INSERT INTO messages (id, session_id, seq, role, turn_id, created, model) VALUES "
            "(?, ?, (SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE session_id = ?), ?, ?, ?, ?)",
            (message_id, session_id, session_id, role, turn_id, time.time(), model),
        )
        return message_id

    def finish_message(self, message_id: str, finish: str | None, usage: dict[str, int], cost: float) -> None:
        self.db.execute(
            "UPDATE messages SET finish = ?, usage = ?, cost = cost + ? WHERE id = ?",
            (finish, json.dumps(usage), cost, message_id),
        )

    def add_part(self, message_id: str, kind: str, text: str = "", **fields: Any) -> int:
        columns = ["message_id", "kind", "text", *fields]
        values = [message_id, kind, _column(text), *(_column(v) for v in fields.values())]
        cursor = self.db.execute(
            f"INSERT INTO parts ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", values
        )
        return int(cursor.lastrowid or 0)

    def update_part(self, part_id: int, **fields: Any) -> None:
        assignments = ", ".join(f"{name} = ?" for name in fields)
        self.db.execute(
            f"UPDATE parts SET {assignments} WHERE id = ?", [*(_column(v) for v in fields.values()), part_id]
        )

    def drop_part(self, part_id: int) -> None:
        self.db.execute("DELETE FROM parts WHERE id = ?", (part_id,))

    # What is read often (the history at every step, the session list) is read as one JSON value:
    # sqlite3 gives the interpreter up for every row it fetches, and when the model thread is
    # busy each handover can cost a millisecond.

    def messages(self, session_id: str) -> list[Row]:
        """The session's messages, in order."""
        rows = self._json_rows("messages", MESSAGE_COLUMNS, "session_id = ?", (session_id,))
        return sorted(rows, key=lambda row: row["seq"])

    def session_parts(self, session_id: str) -> dict[str, list[Row]]:
        """Every part of the session's messages, by message id, in order."""
        where = "message_id IN (SELECT id FROM messages WHERE session_id = ?)"
        grouped: dict[str, list[Row]] = {}
        rows = self._json_rows("parts", PART_COLUMNS, where, (session_id,))
        for row in sorted(rows, key=lambda row: row["id"]):
            grouped.setdefault(row["message_id"], []).append(row)
        return grouped

    def _json_rows(
        self, table: str, columns: tuple[str, ...], where: str, args: tuple[Any, ...]
    ) -> list[Row]:
        fields = ", ".join(f"'{name}', {name}" for name in columns)
        sql = f"SELECT json_group_array(json_object({fields})) FROM {table} WHERE {where}"
        return json.loads(self.db.execute(sql, args).fetchone()[0])


def _read_only(path: Path) -> Connection | None:
    """The database at ``path`` opened read-only, if it can be read and is of this lspilot's
    schema: with its WAL when SQLite can read or make its index, else as a file no one writes
    (``immutable``: a read-only or full disk, where no lspilot can be writing it either)."""
    if not path.is_file():
        return None
    for mode in ("mode=ro", "immutable=1"):
        try:
            db = sqlite3.connect(f"{path.absolute().as_uri()}?{mode}", uri=True, factory=Connection)
        except sqlite3.Error:
            continue
        db.path = path
        try:
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
        except StoreError:
            db.close()
            continue
        if version == len(MIGRATIONS):
            return db
        db.close()
        return None
    return None


Row = dict[str, Any]
SESSION_COLUMNS = ("id", "title", "agent", "created", "updated")
MESSAGE_COLUMNS = (
    "id",
    "session_id",
    "seq",
    "role",
    "turn_id",
    "created",
    "model",
    "finish",
    "usage",
    "cost",
)
PART_COLUMNS = (
    *("id", "message_id", "kind", "text", "call_id", "tool", "input", "state", "output", "metadata"),
    *("started", "ended"),
)


def _path_key(path: Path) -> str | bytes:
    """How ``file_reads`` names a file and ``sessions`` its workspace: the path's text, or for a
    path that is not UTF-8 (lone surrogates in ``str``, which SQLite refuses) its bytes, a BLOB
    that equals no text."""
    text = str(path)
    return text if text.isascii() or _SURROGATE.search(text) is None else os.fsencode(text)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _column(value: Any) -> Any:
    """A part's value as stored: a dict or list as JSON; text that holds a lone surrogate (a prompt
    typed in a Latin-1 terminal, a provider's ``\\udce9``), which SQLite refuses, as
    ``jsontext.valid_text`` writes it."""
    if isinstance(value, dict | list):
        return json.dumps(value)
    return jsontext.valid_text(value) if isinstance(value, str) else value


class StoredSession:
    """``tools.SessionState`` backed by the store: written at once, so nothing is lost on a kill."""

    def __init__(self, store: Store, session_id: str) -> None:
        self.store = store
        self.id = session_id

    def record_read(self, path: Path, stamp: FileStamp | None = None) -> None:
        stamp = stamp or FileStamp.take(path)
        seen = (stamp.mtime_ns, stamp.size, stamp.digest) if stamp else (None, None, None)
        self.store.db.execute(
            "INSERT OR REPLACE INTO file_reads (session_id, path, at, mtime_ns, size, digest)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (self.id, _path_key(path), time.time(), *seen),
        )

    def read_stamp(self, path: Path) -> FileStamp | None:
        row = self.store.db.execute(
            "SELECT mtime_ns, size, digest FROM file_reads WHERE session_id = ? AND path = ?",
            (self.id, _path_key(path)),
        ).fetchone()
        return FileStamp(row[0], row[1], row[2]) if row and row[2] is not None else None

    def last_read(self, path: Path) -> float | None:
        row = self.store.db.execute(
            "SELECT at FROM file_reads WHERE session_id = ? AND path = ?", (self.id, _path_key(path))
        ).fetchone()
        return row[0] if row else None

    def todos(self) -> list[Todo]:
        row = self.store.db.execute("SELECT items FROM todos WHERE session_id = ?", (self.id,)).fetchone()
        return [Todo(**item) for item in json.loads(row[0])] if row else []

    def set_todos(self, todos: list[Todo]) -> None:
        items = json.dumps([asdict(t) for t in todos])
        self.store.db.execute(
            "INSERT OR REPLACE INTO todos (session_id, items) VALUES (?, ?)", (self.id, items)
        )
