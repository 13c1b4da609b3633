"""apply_patch: add, change, move and delete files with one patch, atomically across files."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ._editing import Target, load, locked, propose, target
from ._patch import FilePatch, PatchError, parse, replacements
from ._text import FileText
from .base import Tool, ToolError, ToolResult
from .changes import FileChange
from .context import ToolContext


class ApplyPatchParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    patchText: str = Field(description="The patch: '*** Begin Patch' ... '*** End Patch' (or a unified diff)")


def _change(
    ctx: ToolContext, patch: FilePatch, file: Target, moved: Target | None
) -> list[tuple[FileChange, str]]:
    """The changes one file section asks for, each with a line saying what it does."""
    current = load(ctx, file)
    if moved is not None and file.entry in (moved.path, moved.entry):  # "Move to" the file's own name
        moved = None
    if patch.kind == "add":
        if current is not None:
            raise PatchError(
                f"Add File {file.shown}: it already exists. Use '*** Update File:' to change it."
            )
        return [(FileChange(file.path, None, FileText.created(patch.content).raw), f"A {file.shown}")]
    if current is None:
        if file.entry.is_symlink():
            raise PatchError(
                f"{patch.kind.title()} File {file.shown}: it is a symlink to {os.readlink(file.entry)}, "
                f"which does not exist. To remove the link, run rm {file.shown} (bash)."
            )
        raise PatchError(f"{patch.kind.title()} File {file.shown}: no such file.")
    if patch.kind == "delete":  # a symlink: the link goes, not the file it points to
        return [(FileChange(file.entry, current.raw, None, encoding=current.encoding), f"D {file.shown}")]
    before = current.raw
    current.replace(replacements(current.body, patch.chunks, file.shown))
    if moved is not None:
        if moved.path.exists() and moved.path != file.entry:
            if moved.path.is_dir():
                raise PatchError(f"Move to {moved.shown}: that is a folder; name the file's new path in it.")
            raise PatchError(f"Move to {moved.shown}: a file already exists there.")
        if file.entry == file.path:
            change = FileChange(file.path, before, current.raw, moved.path, current.encoding)
            return [(change, f"R {file.shown} -> {moved.shown}")]
        # A symlink: the link moves, and the new text goes to the file it points to, as a change
        # of that file's own, which the rules and the protected check see by its own name.
        link = FileChange(file.entry, before, before, moved.path, current.encoding)
        if current.raw == before:
            return [(link, f"R {file.shown} -> {moved.shown}")]
        pointed = FileChange(file.path, before, current.raw, encoding=current.encoding)
        return [(pointed, f"M {ctx.relative(file.path)}"), (link, f"R {file.shown} -> {moved.shown}")]
    if current.raw == before:
        raise PatchError(f"Update File {file.shown}: the patch changes nothing in it.")
    return [(FileChange(file.path, before, current.raw, encoding=current.encoding), f"M {file.shown}")]


def _touches(patch: FilePatch, file: Target, moved: Target | None) -> set[Path]:
    """What one section changes on disk. Deleting a symlink removes the link, not the file it
    points to (as ``git apply`` does), so the same patch may still change that file; a move
    changes the link's name, the file it points to and the new name."""
    if patch.kind == "delete":
        return {file.entry}
    return {file.path, file.entry, *([moved.path] if moved else [])}


def _mode_note(patch: FilePatch) -> str:
    executable = " (chmod +x with bash, if it should run)" if patch.mode == "100755" else ""
    return f"the mode {patch.mode} of {patch.move_to or patch.path}{executable}"


class ApplyPatch(Tool[ApplyPatchParams]):
    id = "apply_patch"
    Params = ApplyPatchParams
    permission = "edit"

    async def run(self, params: ApplyPatchParams, ctx: ToolContext) -> ToolResult:
        patches = parse(params.patchText)
        if links := [p.move_to or p.path for p in patches if p.mode == "120000"]:
            raise PatchError(
                f"The patch makes {links[0]} a symlink (mode 120000), which apply_patch does not do; "
                "make the link with ln -s (bash)."
            )
        modes = [_mode_note(p) for p in patches if p.mode]
        patches = [
            p for p in patches if not (p.mode and p.kind == "update" and not p.chunks and not p.move_to)
        ]
        if not patches:
            raise PatchError(
                f"The patch only changes file modes, which apply_patch does not do: {'; '.join(modes)}."
            )
        files = [
            await target(
                ctx, p.path, "Patch", text=p.kind != "delete", entry=p.kind == "delete" or bool(p.move_to)
            )
            for p in patches
        ]
        moves = [await target(ctx, p.move_to, "Patch") if p.move_to else None for p in patches]
        touched = [_touches(p, f, m) for p, f, m in zip(patches, files, moves, strict=True)]
        paths = [path for section in touched for path in section]
        if len(set(paths)) != len(paths):
            raise ToolError(
                "The patch names a file more than once; put all changes to a file in one section."
            )
        async with locked([*paths, *(f.path for f in files)]):
            built = [
                pair for p, f, m in zip(patches, files, moves, strict=True) for pair in _change(ctx, p, f, m)
            ]
            changes = [change for change, _line in built]
            summary = [line for _change, line in built]
            given = [t.given for t in [*files, *moves] if t is not None]
            proposal = await propose(
                ctx, changes, f"Apply patch ({len(changes)} files)", others=True, named=given
            )
        landed = [line for line, a in zip(summary, proposal.applied, strict=True) if a.status != "rejected"]
        done = ["Applied the patch:", *(f"  {line}" for line in landed)]
        if modes:
            done.append(f"Not applied: {'; '.join(modes)} (apply_patch does not change file modes).")
        return proposal.result(ctx, ", ".join(f.shown for f in files), done, proposal.metadata(ctx))
