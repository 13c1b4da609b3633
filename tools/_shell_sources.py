"""Script files that programs run, read so that what they run is analyzed like the inline form.

``sed -f FILE``, ``awk -f FILE`` (``-i``, ``@include``), ``vim -S FILE`` (``-u``, ``:source``),
``sqlite3 -init FILE`` (``.read``), ``psql -f FILE`` (``\\i``), mysql's ``source FILE``, ``gdb -x
FILE`` (``source``, and the ``.gdbinit`` of the folder gdb starts in) and ``lldb -s FILE``
(``command source``) run a file of the program's own language. ``read`` reads one when it is in
the workspace, a regular file, UTF-8 and at most ``MAX_BYTES``, and returns what that language's
reader finds in it (``READERS``: the ``*_file`` readers of ``_shell_dialects``, ``_shell_sed_awk``,
``_shell_sqlite`` and ``_shell_dbclients``); otherwise the reason it was not read, and the file
counts as unknown code named by it. A file read is kept with the SHA-256 of its bytes: ``stale``
tells which changed since, so that the bash tool does not start a command whose scripts changed
while the user was asked.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from ._shell_dbclients import mysql_file, psql_file
from ._shell_dialects import NOT_FOLLOWED, Finding, debugger_file, unknown, vim_file
from ._shell_paths import State, resolve
from ._shell_sed_awk import awk_file, sed_file
from ._shell_sqlite import sqlite_file
from ._shell_words import Word
from .context import is_within

MAX_BYTES = 256 * 1024
READERS: dict[str, Callable[[str], list[Finding]]] = {
    "sed": sed_file,
    "awk": awk_file,
    "vim": vim_file,
    "sqlite": sqlite_file,
    "gdb": partial(debugger_file, "gdb"),
    "lldb": partial(debugger_file, "lldb"),
    "psql": psql_file,
    "mysql": mysql_file,
    "tmux": lambda _: [],  # its commands are read by _shell_sessions, from ``Read.text``
}
#: Files a program runs in another language than its own commands, by their suffix (gdb runs
#: ``-x FILE.py`` as Python; nvim ``-S FILE.lua`` as Lua).
_OTHER_LANGUAGES = {("gdb", ".py"): "Python", ("gdb", ".scm"): "Guile", ("vim", ".lua"): "Lua"}


@dataclass(frozen=True)
class Read:
    #: The file, when it is the workspace's (read or not: whether it changes matters).
    real: Path | None = None
    #: The SHA-256 of its bytes when it was read; None otherwise (or when there is no such file).
    digest: str | None = None
    #: What it runs and names, its unknown code named by the file; None when it was not read...
    findings: list[Finding] | None = None
    #: ...and why ("" when nothing runs: an optional file that is not there).
    reason: str = ""
    #: The text read.
    text: str | None = None


def read(kind: str, path: Word, state: State, trusted: Sequence[Path], *, optional: bool = False) -> Read:
    """The file ``path`` names, run by a program as ``kind``'s language, read. ``optional``: a file
    the program runs only when it is there (``.gdbinit``)."""
    if path.value in ("-", "/dev/stdin"):
        return Read(reason="read from stdin, not read")
    if path.value == "/dev/null":
        return Read(findings=[])  # an empty script (gdb PROG < /dev/null)
    real = resolve(path, state)
    if real is None:
        return Read(reason="only known at run time, not read")
    if not any(is_within(real, folder) for folder in trusted):
        return Read() if optional and not real.exists() else Read(reason="outside the workspace, not read")
    language = _OTHER_LANGUAGES.get((kind, real.suffix.lower()))
    if language:
        return Read(real, reason=f"{language} code, not read")
    try:
        data = _load(real)
    except FileNotFoundError:
        library = kind == "awk" and "/" not in (path.value or "/") and "AWKPATH" not in os.environ
        return Read(real) if optional or library else Read(real, reason="not found, not read")
    except OSError as error:
        return Read(real, reason=f"not readable ({error.strerror}), not read")
    if isinstance(data, str):
        return Read(real, reason=data)
    try:
        text = data.decode()
    except UnicodeDecodeError:
        return Read(real, reason="not UTF-8, not read")
    sha = hashlib.sha256(data).hexdigest()
    return Read(real, sha, [_named(f, path.raw, sha) for f in READERS[kind](text)], text=text)


def text(kind: str, label: str, script: str) -> list[Finding]:
    """What a script of ``kind``'s language given as text (a heredoc on stdin) runs and names, its
    unknown code named by ``label``; "" as the kind: code not followed, unknown as a whole."""
    sha = hashlib.sha256(script.encode(errors="surrogateescape")).hexdigest()
    found = READERS[kind](script) if kind else [unknown(NOT_FOLLOWED)]
    return [_named(f, label, sha) for f in found]


def _named(finding: Finding, name: str, sha: str) -> Finding:
    """Unknown code found in the file ``name``, named by the file and its line (``(c.gdb:3:
    python ...)``), or by the file's digest when the whole of it is unknown."""
    kind, item = finding
    if kind != "unknown":
        return finding
    if item.raw == NOT_FOLLOWED:
        return unknown(f"({name}: {NOT_FOLLOWED}, sha256 {sha[:16]})")
    return unknown(f"({name}:{item.raw})")


def _load(path: Path) -> bytes | str:
    """The bytes of a regular file of at most ``MAX_BYTES``, or why it is not read. Opened
    without blocking, so that a FIFO put in its place does not hold the analysis."""
    with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            return "not a regular file, not read"
        data = file.read(MAX_BYTES + 1)
    return f"larger than {MAX_BYTES // 1024} KiB, not read" if len(data) > MAX_BYTES else data


def digest(path: Path) -> str | None:
    """The SHA-256 of a regular file's bytes; None when there is none or it cannot be read."""
    try:
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                return None
            return hashlib.file_digest(file, "sha256").hexdigest()
    except OSError:
        return None


def stale(sources: Mapping[str, str | None]) -> list[str]:
    """The files among ``sources`` (path -> digest when read) that changed since."""
    return [path for path, sha in sources.items() if digest(Path(path)) != sha]
