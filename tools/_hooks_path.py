"""The folders git runs a workspace's hooks from, as its repository's own configuration sets them
(``core.hooksPath``, ``_protected.is_protected``). The configuration files are read here, not by
running git, and what they say is kept until one of them changes: the check runs on every edit
and every path a command names.

The repository is the one holding the workspace: the nearest ``.git`` folder at or above it, or a
``.git`` file naming the git folder of a worktree or submodule (whose ``commondir`` names the
shared one). Its ``config``, its ``config.worktree`` when ``extensions.worktreeConfig`` is set,
and the files they include (``include.path``, ``includeIf.*.path``, whatever the condition) are
read; every ``core.hooksPath`` they set counts,
not only the one git would use last. A relative path is taken from the working tree's top, as git
takes it. The user's and the system's configuration files are not read.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path

MAX_INCLUDES = 10  # nested includes followed, as git's own limit
_DIR = (0, 0, 0)
#: A path and what it was when read: None when missing, ``_DIR`` for a folder, else its
#: modification time, size and inode (git writes its configuration to a new file and renames it).
Seen = list[tuple[str, tuple[int, int, int] | None]]
_SECTION = re.compile(r'\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"(?:[^"\\]|\\.)*")?\s*\]')
_KEY = re.compile(r"\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=|(?=[#;]|$))")  # a bare key is true
HOOKS_PATH = "core.hookspath"
WORKTREE_CONFIG = "extensions.worktreeconfig"  # config.worktree is read
_ESCAPES = {"n": "\n", "t": "\t", "b": "\b", '"': '"', "\\": "\\"}
_known: dict[str, tuple[Seen, tuple[str, ...]]] = {}


def hooks_folders(root: Path) -> tuple[str, ...]:
    """The folders (absolute, normalised; each also as its symlinks resolve) that a
    ``core.hooksPath`` of the configuration of the repository holding ``root`` names."""
    key = str(root)
    known = _known.get(key)
    if known is not None and all(_state(path) == state for path, state in known[0]):
        return known[1]
    seen: Seen = []
    folders = _read(key, seen)
    _known[key] = (seen, folders)
    return folders


def _state(path: str) -> tuple[int, int, int] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return _DIR if stat.S_ISDIR(found.st_mode) else (found.st_mtime_ns, found.st_size, found.st_ino)


def _read(root: str, seen: Seen) -> tuple[str, ...]:
    top = root
    while True:
        dotgit = os.path.join(top, ".git")
        state = _state(dotgit)
        seen.append((dotgit, state))
        if state is not None:
            break
        parent = os.path.dirname(top)
        if parent == top:
            return ()
        top = parent
    gitdir, common = dotgit, dotgit
    if state != _DIR:  # a worktree's or submodule's: its git folder, and the shared one
        gitdir = _pointer(dotgit, "gitdir:")
        if gitdir is None:
            return ()
        commondir = os.path.join(gitdir, "commondir")
        seen.append((commondir, _state(commondir)))
        common = _pointer(commondir, "") or gitdir
    found: dict[str, list[str]] = {HOOKS_PATH: [], WORKTREE_CONFIG: []}
    _values(os.path.join(common, "config"), seen, found, 0)
    if any(v.lower() in ("", "true", "yes", "on", "1") for v in found[WORKTREE_CONFIG]):
        _values(os.path.join(gitdir, "config.worktree"), seen, found, 0)
    folders = [os.path.normpath(os.path.join(top, os.path.expanduser(v))) for v in found[HOOKS_PATH] if v]
    return tuple(dict.fromkeys([*folders, *map(os.path.realpath, folders)]))


def _pointer(path: str, prefix: str) -> str | None:
    """The folder the file ``path`` names after ``prefix`` (relative to the file's folder)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            text = file.readline().strip()
    except OSError:
        return None
    if not text.startswith(prefix) or not text[len(prefix) :].strip():
        return None
    return os.path.normpath(os.path.join(os.path.dirname(path), text[len(prefix) :].strip()))


def _values(config: str, seen: Seen, found: dict[str, list[str]], depth: int) -> None:
    """Add the values ``found`` asks for (by ``section.key``) in ``config`` and the files it
    includes."""
    seen.append((config, _state(config)))
    try:
        with open(config, encoding="utf-8", errors="replace") as file:
            text = file.read()
    except OSError:
        return
    for section, key, value in _entries(text):
        found.get(f"{section}.{key}", []).append(value)
        if section in ("include", "includeif") and key == "path" and value and depth < MAX_INCLUDES:
            included = os.path.join(os.path.dirname(config), os.path.expanduser(value))
            _values(os.path.normpath(included), seen, found, depth + 1)


def _entries(text: str) -> Iterator[tuple[str, str, str]]:
    """(section, key, value) of each setting (a bare key's value is ""), names in lower case; a
    subsection is not told apart (``[includeIf "gitdir:x"]`` is ``includeif``)."""
    section = ""
    lines = iter(text.splitlines())
    for line in lines:
        header = _SECTION.match(line)
        if header:  # a setting may follow on the same line
            section = header.group(1).lower().split(".")[0]
        rest = line[header.end() :] if header else line
        setting = _KEY.match(rest)
        if setting:
            yield section, setting.group(1).lower(), _value(rest[setting.end() :], lines)


def _value(rest: str, lines: Iterator[str]) -> str:
    """A value as git reads it: quotes removed, escapes replaced, a comment (``#``, ``;``) outside
    quotes ended, a line ending in ``\\`` continued, the whitespace around it dropped."""
    chars: list[str] = []
    kept = 0  # the length without trailing whitespace outside quotes
    quoted = False
    i = 0
    while i < len(rest):
        char = rest[i]
        i += 1
        if char == "\\" and i == len(rest):
            rest, i = next(lines, ""), 0
            continue
        if char == "\\":
            chars.append(_ESCAPES.get(rest[i], rest[i]))
            i, kept = i + 1, len(chars)
            continue
        if char == '"':
            quoted = not quoted
            kept = len(chars)
            continue
        if char in "#;" and not quoted:
            break
        if char.isspace() and not quoted and not chars:
            continue
        chars.append(char)
        if quoted or not char.isspace():
            kept = len(chars)
    return "".join(chars[:kept])
