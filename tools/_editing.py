"""What edit, multiedit, write and apply_patch share: paths, per-file locks, read-before-write,
and proposing a change (permission with the diff, atomic write, diagnostics) through
``ctx.env.changes``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import weakref
from collections.abc import Coroutine, Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ._diagnose import FileReport, Probe, render
from ._protected import is_protected
from ._protected import request as protected
from ._text import FileText, check_encodes, looks_binary
from .base import ToolError, ToolResult
from .changes import Applied, FileChange, diff_text
from .context import FileStamp, ToolContext, read_file, real_path
from .diff import unified_diff
from .permission import PermissionRequest

log = logging.getLogger(__name__)

_LOCKS: weakref.WeakValueDictionary[Path, asyncio.Lock] = weakref.WeakValueDictionary()


@dataclass(frozen=True)
class Target:
    given: Path  # as the model named it, normalised
    path: Path  # symlinks resolved: what is read, locked and written
    shown: str
    #: The name itself, only its folder resolved: a symlink there is the link, which a delete or
    #: a move acts on (never on the file it points to). ``path`` when the name is no symlink.
    entry: Path


async def target(
    ctx: ToolContext, file_path: str, title: str, *, text: bool = True, entry: bool = False
) -> Target:
    """The file a call names; ``external_directory`` is asked when what the call changes lies
    outside the workspace: its ``text`` (symlinks followed) and/or its ``entry`` (the link itself,
    for a delete or a move). The ``edit`` ask comes later, once, with the diff."""
    if file_path.endswith(("/", os.sep)):  # normalised away below, and a file made of it
        raise ToolError(f"{file_path} names a folder (it ends in /): name the file to change in it.")
    given = ctx.resolve(file_path)
    real = real_path(given)
    link = real_path(given.parent) / given.name if os.path.islink(given) else real
    if text:
        await ctx.ask_outside(real, title)
    if entry and (link != real or not text):
        await ctx.ask_outside(link, title)
    return Target(given, real, ctx.relative(given), link)


class locked:
    """Hold the lock of every path (taken in one global order, so two calls never wait on each
    other). A class rather than a generator-based context manager: it runs on every edit."""

    def __init__(self, paths: Iterable[Path]) -> None:
        self._locks: list[asyncio.Lock] = []
        for path in sorted(set(paths)):
            lock = _LOCKS.get(path)
            if lock is None:
                lock = _LOCKS[path] = asyncio.Lock()
            self._locks.append(lock)

    async def __aenter__(self) -> None:
        taken: list[asyncio.Lock] = []
        try:
            for lock in self._locks:
                await lock.acquire()
                taken.append(lock)
        except BaseException:
            for lock in reversed(taken):
                lock.release()
            raise

    async def __aexit__(self, *exc_info: object) -> None:
        for lock in reversed(self._locks):
            lock.release()


def load(ctx: ToolContext, file: Target) -> FileText | None:
    """The file's text (the editor's buffer when it is open there), None when it does not exist;
    refused when the model has not read it in this session or it changed since."""
    unsaved = ctx.env.changes.unsaved(file.path)
    if unsaved is not None:
        data = unsaved.encode()
        _check_fresh(ctx, file, data, 0, "in the editor")
        return FileText.from_bytes(data)
    try:
        data, stat = read_file(file.path)
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ToolError(f"{file.shown} is a directory, not a file. Name a file inside it.") from None
    except OSError as error:
        raise ToolError(f"Cannot read {file.shown}: {error.strerror or error}") from None
    if looks_binary(data):
        raise ToolError(f"{file.shown} is a binary file; the edit tools only change text files.")
    _check_fresh(ctx, file, data, stat.st_mtime_ns)
    if not stat.st_mode & 0o222 or not os.access(file.path, os.W_OK):
        # The atomic write renames over the file, which its own mode does not stop: the check is
        # ours. (Root may write anything, so a file nobody may write counts as read-only too.)
        raise ToolError(
            f"{file.shown} is read-only (mode {stat.st_mode & 0o777:o}); the edit tools do not change "
            "read-only files. If it is meant to change, ask the user, or make it writable first "
            f"(chmod u+w {file.shown})."
        )
    return FileText.from_bytes(data)


def _check_fresh(ctx: ToolContext, file: Target, data: bytes, mtime_ns: int, where: str = "on disk") -> None:
    session = ctx.env.session
    reads = [(at, p) for p in {file.given, file.path} if (at := session.last_read(p)) is not None]
    if not reads:
        raise ToolError(
            f"{file.shown} exists but you have not read it in this session. Read it first (read tool), "
            "then make the change: files are only changed once you have seen what they hold."
        )
    at, path = max(reads)
    stamp = session.read_stamp(path)
    changed = (
        stamp.digest != FileStamp.of(data, mtime_ns).digest if stamp is not None else mtime_ns / 1e9 > at
    )
    if changed:
        raise ToolError(
            f"{file.shown} has changed {where} since you last read it (by the user, a formatter or "
            "another program). Read it again before changing it, so those changes are not lost."
        )


@dataclass
class Proposal:
    """What came of proposing changes: the sink's answer and the diagnostics of the result."""

    applied: list[Applied]
    reports: list[FileReport] = field(default_factory=list[FileReport])

    def diff(self, ctx: ToolContext) -> str:
        parts: list[str] = []
        for item in self.applied:
            change = item.change
            moved = ctx.relative(change.move_to) if change.move_to else None
            before = item.onto if item.onto is not None else change.before
            after = item.written if item.status != "rejected" else before
            parts.append(unified_diff(before or "", after or "", ctx.relative(change.path), moved))
        return "".join(parts)

    def result(self, ctx: ToolContext, title: str, done: list[str], metadata: dict[str, Any]) -> ToolResult:
        """The tool's result: ``done`` (what the tool did) when anything landed, else "Nothing
        was changed." (a reviewer may reject it all); then the notes."""
        if all(a.status == "rejected" for a in self.applied):
            done = ["Nothing was changed."]
        notes = self.notes(ctx)
        return ToolResult(title, "\n".join([*done, *([notes] if notes else [])]), metadata)

    def notes(self, ctx: ToolContext) -> str:
        """Lines about what the reviewer did differently, then the diagnostics."""
        lines: list[str] = []
        for item in self.applied:
            shown = ctx.relative(item.change.target)
            if item.status == "rejected":
                lines.append(f"{shown} is unchanged: {item.note or 'the user rejected the change.'}")
            elif item.written != item.change.after:
                said = f": {item.note.rstrip('.')}." if item.note else "."
                lines.append(
                    f"The change to {shown} did not land as proposed{said} Read it again before "
                    "changing it further."
                )
        diagnostics = render(self.reports, ctx)
        return "\n".join([*lines, *([diagnostics] if diagnostics else [])])

    def metadata(self, ctx: ToolContext) -> dict[str, Any]:
        return {
            "diff": self.diff(ctx),
            "files": [
                {"path": str(a.change.target), "status": a.status, "note": a.note} for a in self.applied
            ],
            "diagnostics": {
                str(r.path): {"new": r.new, "preexisting": r.old, "note": r.note} for r in self.reports
            },
        }


@dataclass
class _AskThenSettle(ToolContext):
    """The call's context for the sink: its permission ask also waits for the "before"
    diagnostics, which run meanwhile and must have read the files before anything is written;
    once approved, the "after" diagnostics start while the sink writes."""

    probe: Probe | None = None
    #: The "before" diagnostics being asked (None when the bridge already knew them).
    pending: asyncio.Future[None] | None = None
    settled: bool = False

    async def ask(self, request: PermissionRequest) -> None:
        try:
            await super().ask(request)
        except BaseException:
            pending, self.pending = self.pending, None
            if pending is not None:
                pending.cancel()
                await asyncio.gather(pending, return_exceptions=True)
            raise
        await self.approved()

    async def approved(self) -> None:
        if self.settled:
            return
        self.settled = True
        pending, self.pending = self.pending, None
        if pending is not None:
            await pending
        if self.probe is not None and self.probe.active:
            if typed := self.probe.typed_meanwhile():  # the user typed in them during the review
                await _quietly(self.probe, self.probe.before_again(typed))
            await _start_after(self.probe)


_CONTEXT_FIELDS = tuple(f.name for f in fields(ToolContext))


async def _start_after(probe: Probe) -> None:
    if probe.start_after():
        # One loop turn: the pulls send their requests now, so the server works while the sink
        # writes (its thread and fsync would otherwise delay the sending).
        await asyncio.sleep(0)


async def propose(
    ctx: ToolContext, changes: list[FileChange], title: str, others: bool = False, named: Iterable[Path] = ()
) -> Proposal:
    """Hand ``changes`` to the sink, record what was written as seen, and diagnose the result.

    When the "before" diagnostics are known already and no one has to approve the change (the
    ``edit`` rules allow every file), the "after" diagnostics are asked at once: the server
    checks the new text while the sink prepares, asks and writes.

    A change in a git folder (a hook, ``.git/config``) or to lspilot's own project files
    (``lspilot.toml``, ``.lspilot/``) is first asked as ``protected``, which a broad ``edit``
    allow does not cover: later git commands and sessions run what it holds (unless the ``edit``
    rules deny it, which the sink says). These checks run once the server has the new text:
    they are fixed costs of every edit, paid while it works, and nothing is written before them
    (a refused change only sends the server the disk's text again). ``named``: the paths as the
    call named them, protected too when a symlink makes them another file (a hook that git runs
    by its own name, linked to a script in the workspace)."""
    probe = Probe(ctx, changes, others)
    sink_ctx = ctx
    pending: asyncio.Future[None] | None = None
    try:
        if probe.active:
            if not probe.before_known():
                pending = asyncio.ensure_future(_quietly(probe, probe.before()))
            elif _allowed(ctx, changes):
                await _start_after(probe)
        await _check(ctx, changes, title, probe, named)
        if probe.active:
            values = {name: getattr(ctx, name) for name in _CONTEXT_FIELDS}
            sink_ctx = _AskThenSettle(**values, probe=probe, pending=pending)
        applied = await ctx.env.changes.apply(sink_ctx, changes, title)
    except BaseException:
        if pending is not None and sink_ctx is ctx:  # refused before the sink had it
            pending.cancel()
            await asyncio.gather(pending, return_exceptions=True)
        await probe.discard()
        raise
    finally:
        if isinstance(sink_ctx, _AskThenSettle) and not sink_ctx.settled:
            if sink_ctx.pending is not None:
                sink_ctx.pending.cancel()
            probe.changes = []  # the sink never asked: its diagnostics would be unreliable
    for item in applied:
        if item.written is not None and item.written == item.change.after:
            _record(ctx, item)
    if ctx.abort.is_set():  # stopped while the change was written: no waiting for diagnostics
        await probe.discard()
        return Proposal(applied, _unchecked(applied))
    try:
        return Proposal(applied, await probe.after(applied))
    except asyncio.CancelledError:
        if not ctx.abort.is_set():
            raise
        return Proposal(applied, _unchecked(applied))


async def _check(
    ctx: ToolContext, changes: list[FileChange], title: str, probe: Probe, given: Iterable[Path]
) -> None:
    """Refuse new text the file's encoding cannot hold; ask ``protected`` for protected files
    (the servers get the disk's text back meanwhile: the early pull starts again once approved)."""
    for change in changes:
        if change.after is not None:
            check_encodes(change.after, change.encoding, ctx.relative(change.target))
    named = [p for c in changes for p in (c.path, c.move_to) if p]
    guarded = [ctx.relative(p) for p in dict.fromkeys([*named, *given]) if is_protected(p, ctx.root)]
    if guarded and all(ctx.env.permissions.action("edit", ctx.relative(p)) != "deny" for p in named):
        what = f"{title}: files whose hooks, configuration or tools later commands or sessions run"
        await probe.discard()
        await ctx.ask(protected(guarded, what, {"diff": diff_text(ctx, changes)}))


def _unchecked(applied: list[Applied]) -> list[FileReport]:
    note = "diagnostics not checked: the call was stopped"
    return [FileReport(a.change.target, note=note) for a in applied if a.written is not None]


def _allowed(ctx: ToolContext, changes: list[FileChange]) -> bool:
    """The ``edit`` rules allow every file of ``changes`` without asking anyone."""
    action = ctx.env.permissions.action
    return all(action("edit", ctx.relative(p)) == "allow" for c in changes for p in (c.path, c.move_to) if p)


async def _quietly(probe: Probe, before: Coroutine[Any, Any, None]) -> None:
    try:
        await before
    except Exception:  # diagnostics never fail an edit
        log.exception("diagnostics before the change failed")
        probe.changes = []


def _record(ctx: ToolContext, item: Applied) -> None:
    """The written text counts as read, so the next edit needs no read (until someone else writes)."""
    assert item.written is not None
    target = item.change.target
    try:
        mtime_ns = target.stat().st_mtime_ns
    except OSError:  # written into an editor's buffer, not (yet) on disk
        mtime_ns = 0
    stamp = FileStamp.of(item.written.encode(item.change.encoding), mtime_ns)
    ctx.env.session.record_read(target, stamp)
