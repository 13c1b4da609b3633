"""Remembered "always" approvals of one project: ``<data dir>/approvals/<name>-<hash>.json``.

An approval never covers more than was asked about:

- A path approval that would reach everything in the filesystem root, the home folder or the
  workspace (an ``external_directory`` "always" for ``/``, ``~``, or a folder holding ``~`` or the
  workspace) is not remembered: the reply counts as "once" and a warning says so (``too_broad``).
  Such an approval in a file is ignored, with the same warning.
- A file without ``"version": 2`` was written before patterns took ``\\*`` and ``\\?`` as the
  characters themselves, when a file called ``*.txt`` was approved as ``*.txt``. Its patterns
  are read as this version would have written them (``legacy_pattern``), and the file is written
  back in the new form with the next approval.

A file that cannot be read is left as it is (a warning names it): its approvals are not in force
and new ones last until lspilot stops. Before writing, the store reads the file again, so two
sessions of a project keep each other's approvals, and it does that read and the write holding an
exclusive ``flock`` on ``<file>.lock`` beside the file (not on the file, which a rename replaces),
so sessions in several processes saving at once (the editor's ``serve``, a terminal's ``run``) lose
none. The lock is held for the read and the write only, never while someone is asked; when it
cannot be taken (a read-only or full data dir) the save goes on without it, and a write that fails
says so as any other.

On the event loop (``remember``) an approval is in force at once and saved in a thread, one save
of a store at a time; the loop never waits for the lock. While another process holds it (stopped
with Ctrl-Z in the middle of its save, or on a slow disk) the save tries again, and after
``LOCK_PATIENCE`` seconds it also writes without the lock, with a warning, so a crash of this
process loses nothing; the save with the lock still follows, and writes the approval again if the
holder's own write dropped it. When lspilot stops before the lock is free, what is not written yet
is written without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from ._arity import always_prefix
from .permission import NAMED, PATHS, Rule, wildcard_match

log = logging.getLogger(__name__)

VERSION = 2

#: Seconds a save on the event loop waits for another process's lock before it also writes without it.
LOCK_PATIENCE = 5.0

#: An escaped wildcard (kept) or a bare one (escaped by ``_escape``).
_WILDCARD = re.compile(r"\\[*?]|[*?]")


def _escape(text: str) -> str:
    """``text`` with its bare ``*`` and ``?`` escaped; ``\\*`` and ``\\?`` stay as they are."""
    return _WILDCARD.sub(lambda m: m.group() if len(m.group()) == 2 else "\\" + m.group(), text)


def legacy_pattern(permission: str, pattern: str) -> str:
    """``pattern`` of a file written before ``\\*`` meant a star, as this version would write it:
    a file's name wholly literal; an outside folder's name literal with its ``/*`` kept (a value
    known only at run time, ``$HOME/*``, literal); a command literal, its trailing `` *`` kept only
    after a prefix the arity table gives; a site's trailing ``/*`` kept. Other tools' patterns
    are left alone: their meaning did not change."""
    tail = ""
    if permission == "external_directory":
        folder = pattern.removesuffix("/*")
        if folder != pattern and pattern.startswith("/") and not re.search(r"[$`]", folder):
            tail = "/*"
    elif permission == "bash":
        words = pattern.removesuffix(" *").split(" ")
        if pattern.endswith(" *") and always_prefix(words) == len(words):
            tail = " *"
    elif permission == "webfetch":
        tail = "/*" if pattern.endswith("/*") else ""
    elif permission not in NAMED:
        return pattern
    return _escape(pattern.removesuffix(tail) if tail else pattern) + tail


class ApprovalsUnreadable(ValueError):
    pass


class ApprovalStore:
    """ "Always" approvals of one project (``root``), kept in the data dir so they survive a
    restart; ``path`` None keeps them in memory."""

    def __init__(self, path: Path | None, root: Path | None = None) -> None:
        self.path = path
        self._root = root
        self._broken = False  # the file could not be read: it is never written
        self._rules: list[Rule] = self._load() if path else []
        self._memory = threading.Lock()  # a save in a thread replaces _rules while the loop adds
        self._one_save = asyncio.Lock()  # this store's saves on the loop, one at a time
        self._changes = self._saved = self._written = 0  # approvals added; saved with the lock; written
        self._retrying: asyncio.Task[None] | None = None

    @classmethod
    def for_project(cls, data_dir: Path, root: Path) -> ApprovalStore:
        digest = hashlib.sha256(os.fsencode(root)).hexdigest()[:16]  # also a root that is not UTF-8
        return cls(data_dir / "approvals" / f"{root.name}-{digest}.json", root)

    @property
    def rules(self) -> list[Rule]:
        return list(self._rules)

    def too_broad(self, permission: str, pattern: str) -> str | None:
        """The folder ``pattern`` would approve everything in (the filesystem root, the home folder,
        the workspace) when it is a path approval reaching that far; None otherwise. An outside
        folder is asked as ``FOLDER/*``: ``/home/me/*`` reaches everything under the home folder,
        ``/home/me/\\*`` every file directly in it."""
        if permission not in PATHS:
            return None
        guarded = [("the filesystem root", Path("/"))]
        with contextlib.suppress(RuntimeError, KeyError):  # no home folder known
            guarded.append(("the home folder", Path.home()))
        if self._root is not None:
            guarded.append(("the workspace", self._root))
        for name, folder in guarded:
            for place in {str(folder), os.path.realpath(folder)}:
                probes = [os.path.join(place, "\0")]  # no name holds NUL: only a wildcard reaches it
                if permission == "external_directory":
                    probes.append(os.path.join(place, "*"))  # what is asked for a file in it
                if any(wildcard_match(probe, pattern) for probe in probes):
                    return f"{name} ({folder})"
        return None

    def add(self, permission: str, patterns: Iterable[str]) -> None:
        """Remember ``patterns`` and save them, waiting for the lock (a script's or a thread's way;
        on the event loop, ``remember``)."""
        if self._remember(permission, patterns):
            assert self.path is not None
            self._save(self.path)

    async def remember(self, permission: str, patterns: Iterable[str]) -> None:
        """Remember ``patterns`` (in force at once) and save them in a thread. Returns once saved, or
        once another process holds the lock: the save then goes on in the background (``saved``)."""
        if not self._remember(permission, patterns):
            return
        assert self.path is not None
        self._changes += 1
        async with self._one_save:
            if self._saved >= self._changes or (self._retrying and not self._retrying.done()):
                return  # an earlier save wrote it, or the one in the background will
            change = self._changes
            try:
                if await asyncio.to_thread(self._save_if_free, self.path):
                    self._saved = self._written = change
            finally:
                if self._saved < change:  # another process holds the lock, or the ask was cancelled
                    self._retrying = asyncio.get_running_loop().create_task(self._save_when_free(self.path))

    async def saved(self) -> None:
        """Wait for the save going on in the background, if any."""
        if self._retrying is not None:
            await asyncio.shield(self._retrying)

    def _remember(self, permission: str, patterns: Iterable[str]) -> bool:
        """Add ``patterns`` but those ``too_broad`` (the reply then counts as "once", and a warning
        says so); True when one is new and is to be saved."""
        added = False
        for pattern in patterns:
            if reach := self.too_broad(permission, pattern):
                log.warning(
                    "'always' for %s %s counts as 'once': it would allow everything in %s. "
                    "Answer 'always' for a folder inside it, or allow it in the config.",
                    permission,
                    pattern,
                    reach,
                )
                continue
            rule = Rule(permission, pattern, "allow", "always")
            with self._memory:
                if rule not in self._rules:
                    self._rules.append(rule)
                    added = True
        return added and self.path is not None and not self._broken

    async def _save_when_free(self, path: Path) -> None:
        """Try again until the lock is free, meanwhile writing without it once ``LOCK_PATIENCE`` is
        over; when lspilot stops first (the task is cancelled), write without it."""
        pause = waited = 0.0
        warned = False
        try:
            while self._saved < self._changes and not self._broken:
                await asyncio.sleep(pause)
                waited, pause = waited + pause, min(max(pause * 2, 0.01), 0.5)
                change = self._changes
                if await asyncio.to_thread(self._save_if_free, path):
                    self._saved = self._written = change
                elif waited >= LOCK_PATIENCE and self._written < change:
                    await asyncio.to_thread(self._merge_and_write, path)
                    self._written = change
                    if not warned:
                        log.warning(
                            "another process has held %s.lock for %.0f s (an lspilot stopped with "
                            "Ctrl-Z?): the approvals are saved without it, and again when it is free",
                            path,
                            waited,
                        )
                        warned = True
        except asyncio.CancelledError:
            if self._written < self._changes and not self._broken:
                self._merge_and_write(path)  # stopping: written without the lock rather than not at all
            raise

    def _load(self) -> list[Rule]:
        try:
            found = self._read()
        except (OSError, ApprovalsUnreadable) as error:
            self._broken = True
            log.warning(
                "the approvals file %s cannot be read (%s): its 'always' approvals are not in force "
                "and new ones last until lspilot stops. It is left as it is; mend or remove it.",
                self.path,
                error.strerror if isinstance(error, OSError) else error,
            )
            return []
        return [rule for rule in found if not self._ignored(rule)]

    def _ignored(self, rule: Rule) -> bool:
        reach = self.too_broad(rule.permission, rule.pattern)
        if reach:
            log.warning(
                "ignoring the approval %s %s in %s: it would allow everything in %s",
                rule.permission,
                rule.pattern,
                self.path,
                reach,
            )
        return reach is not None

    def _read(self) -> list[Rule]:
        """The approvals in the file (none without one), old patterns read as ``legacy_pattern``."""
        assert self.path is not None
        try:
            data = json.loads(self.path.read_bytes())
        except FileNotFoundError:
            return []
        except ValueError as error:  # not JSON, or not UTF-8
            raise ApprovalsUnreadable(f"not JSON: {error}") from None
        items = data.get("allow") if isinstance(data, dict) else None
        version = data.get("version", 1) if isinstance(data, dict) else None
        if not isinstance(items, list) or version not in (1, VERSION):
            raise ApprovalsUnreadable(f'expected {{"version": {VERSION}, "allow": [...]}}')
        rules: list[Rule] = []
        for item in items:  # pyright: ignore[reportUnknownVariableType]
            permission = item.get("permission") if isinstance(item, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            pattern = item.get("pattern") if isinstance(item, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            if not isinstance(permission, str) or not isinstance(pattern, str):
                raise ApprovalsUnreadable(f"an entry without a permission and a pattern: {item!r}")
            if version == 1:
                pattern = legacy_pattern(permission, pattern)
            rules.append(Rule(permission, pattern, "allow", "always"))
        return rules

    def _save(self, path: Path) -> None:
        """Write this store's approvals with those another session saved since, atomically."""
        with _locked(path):
            self._merge_and_write(path)

    def _save_if_free(self, path: Path) -> bool:
        """``_save`` unless another process holds the lock (False then, nothing written)."""
        with _locked(path, wait=False) as free:
            if free:
                self._merge_and_write(path)
            return free

    def _merge_and_write(self, path: Path) -> None:
        try:
            saved = [rule for rule in self._read() if not self._ignored(rule)]
        except (OSError, ApprovalsUnreadable):
            self._broken = True
            log.warning("the approvals file %s changed and cannot be read: it is left as it is", path)
            return
        with self._memory:
            self._rules = [*saved, *(rule for rule in self._rules if rule not in saved)]
            items = [{"permission": r.permission, "pattern": r.pattern} for r in self._rules]
        tmp = None
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump({"version": VERSION, "allow": items}, out, indent=1)
            os.replace(tmp, path)
        except OSError as error:
            log.warning("cannot save the approvals in %s (%s): they last until lspilot stops", path, error)
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)


@contextlib.contextmanager
def _locked(path: Path, *, wait: bool = True) -> Iterator[bool]:
    """An exclusive ``flock`` on ``<path>.lock`` for the block, waited for unless ``wait`` is False:
    its holders hold it for a read and a write only. Yields False, without the lock, when not waiting
    and another process holds it. The lock file stays (removing it would let a process lock a file no
    longer at that path). No lock when the folder or the lock file cannot be made or locked (a
    read-only or full data dir): the block runs unlocked, as saves did before, and its write says
    what failed."""
    descriptor = None
    free = True
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(f"{path}.lock", os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(descriptor, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        free = False
    except OSError as error:
        log.debug("saving the approvals in %s unlocked: %s", path, error)
    try:
        yield free
    finally:
        if descriptor is not None:
            os.close(descriptor)  # drops the lock with it
