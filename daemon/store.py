"""SQLite persistence (stdlib ``sqlite3``, WAL) in lspilot's data dir.

Schema changes are numbered migrations applied in order; ``PRAGMA user_version`` records the
last one applied. Sessions belong to a workspace root. Tool state (files read and when, the todo
list) is stored per session so a resumed session keeps its read-before-write guarantees.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from dataclasses import asdict
from pathlib import Path

from tools import Todo

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
]


class Store:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.execute("PRAGMA busy_timeout=5000")
        self._migrate()

    def _migrate(self) -> None:
        version: int = self.db.execute("PRAGMA user_version").fetchone()[0]
        for number, script in enumerate(MIGRATIONS[version:], version + 1):
            self.db.executescript(f"BEGIN; {script}; PRAGMA user_version = {number}; COMMIT;")

    def close(self) -> None:
        self.db.close()

    def create_session(self, root: Path, agent: str = "build", title: str = "") -> str:
        session_id = f"ses_{time.strftime('%Y%m%d')}_{uuid.uuid4().hex[:12]}"
        now = time.time()
        self.db.execute(
            "INSERT INTO sessions (id, root, title, agent, created, updated) VALUES (?, ?, ?, ?, ?, ?)",
            (session_id, str(root), title, agent, now, now),
        )
        return session_id

    def session_root(self, session_id: str) -> Path | None:
        row = self.db.execute("SELECT root FROM sessions WHERE id = ?", (session_id,)).fetchone()
        return Path(row[0]) if row else None


class StoredSession:
    """``tools.SessionState`` backed by the store: written at once, so nothing is lost on a kill."""

    def __init__(self, store: Store, session_id: str) -> None:
        self.store = store
        self.id = session_id

    def record_read(self, path: Path) -> None:
        self.store.db.execute(
            "INSERT OR REPLACE INTO file_reads (session_id, path, at) VALUES (?, ?, ?)",
            (self.id, str(path), time.time()),
        )

    def last_read(self, path: Path) -> float | None:
        row = self.store.db.execute(
            "SELECT at FROM file_reads WHERE session_id = ? AND path = ?", (self.id, str(path))
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
