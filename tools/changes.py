"""Where the edit tools' changes go: the seam between deciding a change and making it.

The tools compute ``FileChange``s and hand them to ``ctx.env.changes``; they never write files.
``DiskChanges`` asks the ``edit`` permission once for the whole set, with the diff, and writes
every file atomically, all or nothing. An editor's review (a later sink) may instead let the user
accept some hunks or edit the proposal; the ``Applied`` list says what really landed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from lsp_bridge.watch import TEMP_SUFFIX

from .base import ToolError
from .diff import unified_diff
from .permission import PermissionRequest

if TYPE_CHECKING:
    from .context import ToolContext

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FileChange:
    """One file's proposed change. ``before`` None: the file does not exist yet; ``after`` None:
    delete it. ``encoding`` is how the text is written (a BOM, if kept, is U+FEFF in the text).
    A ``path`` that is a symlink is deleted or moved as a link: a moved link keeps pointing at
    its file, which takes ``after``."""

    path: Path
    before: str | None
    after: str | None
    move_to: Path | None = None
    encoding: str = "utf-8"

    @property
    def target(self) -> Path:
        return self.move_to or self.path


@dataclass
class Applied:
    """What happened to one change: ``written`` is the text now in the file (which differs from
    ``change.after`` when the reviewer edited it or accepted part of it), None if nothing was
    written or the file was deleted."""

    change: FileChange
    written: str | None
    status: Literal["applied", "partial", "rejected"]
    note: str = ""
    #: The text ``written`` replaced when it was not ``change.before``: the user typed in the file
    #: during the review, and the change was merged with their edits. What the change did is
    #: the difference from this text (their own lines are not part of it).
    onto: str | None = None


class ChangeSink(Protocol):
    """Where the edit tools' changes go: the disk, or the user's editor for review."""

    async def apply(self, ctx: ToolContext, changes: list[FileChange], title: str) -> list[Applied]: ...

    def unsaved(self, path: Path) -> str | None:
        """The text of ``path`` in the user's editor when it is open there (maybe unsaved, so not
        what the disk holds); None when the disk speaks for it. The tools read and change this."""
        ...

    def not_saved(self) -> list[Path]:
        """The files open in the user's editor whose text is not what the disk holds: commands
        (bash) see the disk."""
        ...


def diff_text(ctx: ToolContext, changes: list[FileChange]) -> str:
    """The unified diff of every change, workspace-relative labels."""
    parts: list[str] = []
    for change in changes:
        label = ctx.relative(change.path)
        moved = ctx.relative(change.move_to) if change.move_to else None
        parts.append(unified_diff(change.before or "", change.after or "", label, moved))
    return "".join(parts)


class DiskChanges:
    """The default sink: one ``edit`` ask for the set, then atomic writes, all or nothing."""

    def unsaved(self, path: Path) -> str | None:
        return None

    def not_saved(self) -> list[Path]:
        return []

    async def apply(self, ctx: ToolContext, changes: list[FileChange], title: str) -> list[Applied]:
        patterns = list(
            dict.fromkeys(ctx.relative(p) for c in changes for p in (c.path, c.move_to) if p is not None)
        )
        files = [
            {"path": str(c.target), "before": c.before, "after": c.after}
            for c in changes
            if c.before is not None or c.after is not None
        ]
        metadata = {"diff": diff_text(ctx, changes), "files": files}
        await ctx.ask(PermissionRequest("edit", patterns, patterns, title, metadata))
        await write_to_disk(ctx, changes)
        return [Applied(c, c.after, "applied") for c in changes]


async def write_to_disk(ctx: ToolContext, changes: list[FileChange]) -> None:
    """``commit`` the approved ``changes`` in a worker thread, then sync their folders.

    Once under way the write always ends. Stopped by the user (``ctx.abort``), the call returns
    normally so the tool reports what was written (the model must know the files changed);
    cancelled from above, the cancellation goes on once the files are settled."""
    write = asyncio.get_running_loop().run_in_executor(None, _commit_durably, changes)
    try:
        await asyncio.shield(write)
    except asyncio.CancelledError:
        await asyncio.wait([write])
        write.result()
        if not ctx.abort.is_set():
            raise


def _commit_durably(changes: list[FileChange]) -> None:
    """``commit``, then sync the folders whose entries changed, so the renames are on disk too
    before the change is reported done (in the same worker thread: the language server's "after"
    diagnostics run meanwhile; a second thread finishing later used to cut into them)."""
    _sync_dirs(commit(changes))


_UMASK = os.umask(0o022)
os.umask(_UMASK)


@dataclass
class _Step:
    """One committed file operation and how to undo it."""

    path: Path
    original: bytes | None  # None: the file did not exist
    mode: int = 0
    link: str | None = None  # the path was a symlink with this text


def commit(changes: list[FileChange]) -> set[Path]:
    """Write every change or none: temp files first, then renames; undo on the first failure.
    Returns the folders whose entries changed (to be synced)."""
    changes = _with_link_targets(changes)
    for change in changes:
        _check_unchanged(change)
    staged: list[tuple[FileChange, Path | None]] = []
    done: list[_Step] = []
    made: list[Path] = []  # folders created for new files
    # One file written in place is one rename, which happens or not: nothing to undo, so its
    # old bytes need not be read again.
    lone = len(changes) == 1 and changes[0].after is not None and changes[0].move_to is None
    try:
        for change in changes:
            staged.append((change, _stage(change, made) if change.after is not None else None))
        for change, temp in staged:
            if temp is not None:
                step = None if lone else _step(change.target)
                os.replace(temp, change.target)
                done += [step] if step else []  # once done: a failed rename changed nothing
            if change.before is not None and (change.after is None or change.move_to is not None):
                step = _step(change.path)
                change.path.unlink()
                done.append(step)
    except BaseException as error:  # whatever it was, no file is left half changed
        left = [step.path for step in reversed(done) if not _undo(step)]
        _drop(staged)  # before the folders, which must be empty to go
        for folder in reversed(made):
            with contextlib.suppress(OSError):
                folder.rmdir()
        outcome = (
            "No file was changed (every file of this change was put back)."
            if not left
            else "Putting the files back failed too, so these keep the change: "
            f"{', '.join(map(str, left))}. Read them before going on."
        )
        if isinstance(error, OSError):
            raise ToolError(
                f"Could not write {error.filename or 'the change'}: {error.strerror or error}. {outcome}"
            ) from None
        if isinstance(error, UnicodeEncodeError):  # a sink's text the file's encoding cannot hold
            raise ToolError(f"Could not write the change: {error}. {outcome}") from None
        raise
    finally:
        _drop(staged)
    return {c.target.parent for c in changes} | {c.path.parent for c in changes}


def _drop(staged: list[tuple[FileChange, Path | None]]) -> None:
    """Remove the temp files not renamed into place (the others are gone already)."""
    for _change, temp in staged:
        if temp is not None:
            with contextlib.suppress(OSError):
                temp.unlink()


def _with_link_targets(changes: list[FileChange]) -> list[FileChange]:
    """A moved symlink's new text, as a change of the file it points to (the link itself is
    moved by ``_stage``)."""
    out: list[FileChange] = []
    for change in changes:
        if change.move_to is not None and change.after != change.before and change.path.is_symlink():
            pointed = Path(os.path.realpath(change.path))
            out.append(FileChange(pointed, change.before, change.after, encoding=change.encoding))
        out.append(change)
    return out


def _step(path: Path) -> _Step:
    if path.is_symlink():
        return _Step(path, b"", link=os.readlink(path))
    try:
        return _Step(path, path.read_bytes(), path.stat().st_mode & 0o7777)
    except FileNotFoundError:
        return _Step(path, None)


def _check_unchanged(change: FileChange) -> None:
    """The approval may have taken minutes: refuse if a file changed on disk meanwhile."""
    expected = None if change.before is None else change.before.encode(change.encoding)
    try:
        current: bytes | None = change.path.read_bytes()
    except FileNotFoundError:
        current = None
    except OSError:
        current = b"\0unreadable"
    appeared = change.move_to is not None and change.move_to.exists()
    if current != expected or appeared:
        what = change.move_to if appeared else change.path
        raise ToolError(
            f"{what} changed on disk while the change waited for approval; nothing was written. "
            "Look at it again and redo the change."
        )


def _stage(change: FileChange, made: list[Path]) -> Path:
    """The new content in a temp file beside the target (same file system), synced to disk; for
    a moved symlink, the link to put there."""
    assert change.after is not None
    target = change.target
    if not target.parent.is_dir():
        missing = [folder for folder in target.parents if not folder.exists()]
        target.parent.mkdir(parents=True, exist_ok=True)
        made += reversed(missing)
    if change.move_to is not None and change.path.is_symlink():
        return _stage_link(change.path, target)
    source = change.path.stat() if change.before is not None else None
    mode = source.st_mode & 0o7777 if source is not None else 0o666 & ~_UMASK
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=TEMP_SUFFIX, dir=target.parent)
    try:
        if source is not None:
            _keep_owner(fd, source)
        os.fchmod(fd, mode)  # after the owner: a change of owner clears set-id bits
        with os.fdopen(fd, "wb") as handle:
            handle.write(change.after.encode(change.encoding))
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise
    return Path(name)


def _stage_link(link: Path, target: Path) -> Path:
    """A symlink beside ``target`` that points where ``link`` does: a relative link moved to
    another folder is rewritten so that it still reaches its file."""
    text = os.readlink(link)
    folder, new_folder = os.path.realpath(link.parent), os.path.realpath(target.parent)
    if not os.path.isabs(text) and folder != new_folder:
        text = os.path.relpath(os.path.normpath(os.path.join(folder, text)), new_folder)
    return _temp_link(text, target)


def _temp_link(text: str, beside: Path) -> Path:
    name = beside.parent / f".{beside.name}.{secrets.token_hex(6)}{TEMP_SUFFIX}"
    os.symlink(text, name)
    return name


def _keep_owner(fd: int, source: os.stat_result) -> None:
    """Give the new file the old one's owner and group, as far as we may (only root gives a file
    away; a group we belong to is allowed)."""
    new = os.fstat(fd)
    if (new.st_uid, new.st_gid) == (source.st_uid, source.st_gid):
        return
    for uid in (source.st_uid, -1):
        try:
            os.fchown(fd, uid, source.st_gid)
            return
        except PermissionError:
            continue


def _undo(step: _Step) -> bool:
    """Put one file back as it was; False when that failed too (the disk full, say)."""
    try:
        if step.link is not None:
            os.replace(_temp_link(step.link, step.path), step.path)
        elif step.original is None:
            step.path.unlink(missing_ok=True)
        else:
            fd, name = tempfile.mkstemp(
                prefix=f".{step.path.name}.", suffix=TEMP_SUFFIX, dir=step.path.parent
            )
            with os.fdopen(fd, "wb") as handle:
                handle.write(step.original)
            os.chmod(name, step.mode)
            os.replace(name, step.path)
    except OSError:
        log.exception("could not put %s back", step.path)
        return False
    return True


def _sync_dirs(folders: set[Path]) -> None:
    for folder in folders:
        with contextlib.suppress(OSError):
            fd = os.open(folder, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
