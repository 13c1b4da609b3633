"""Every change the agent proposes goes to the editor for review before anything is written.

``EditorChanges`` is the edit tools' ``ChangeSink`` under `lspilot serve`. Per file it sends
``lspilot/reviewEdit`` (diff and approval in one message, hunk by hunk) — or, for clients without
lspilot's review, a ``workspace/applyEdit`` whose edits need confirmation — then applies exactly
what the user accepted: through ``workspace/applyEdit`` for buffers open in the editor (their undo
works, the user saves), atomically on disk for the rest. A configured ``edit = "allow"`` skips
the review; ``deny`` refuses.
"""

from __future__ import annotations

import asyncio
import logging
import reprlib
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from lsprotocol import types

from lsp_bridge.documents import BOM
from tools import PermissionDenied, PermissionRejected, PermissionRequest, ToolContext, ToolError
from tools.changes import Applied, FileChange, write_to_disk
from tools.diff import Hunk, apply_hunks, hunks, with_endings

from .buffers import Buffers
from .editor import Editor, field_of
from .follow import Follower
from .review_edits import document_edit, line_edits
from .review_merge import onto_edited

log = logging.getLogger(__name__)


@dataclass
class Proposal:
    id: str
    change: FileChange
    blocks: list[Hunk]
    base_version: int | None
    #: Set by ``lspilot.resolve`` (a CodeLens or keymap) instead of the review request's answer.
    resolved: asyncio.Future[dict[str, Any]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )

    def resolve(self, action: str, hunk_ids: list[str] | None, feedback: str | None) -> None:
        if action == "reject" or (hunk_ids == [] and self.blocks):  # accepting no hunk accepts nothing
            self.resolved.set_result({"decision": "reject", "feedback": feedback})
        elif hunk_ids is None or set(hunk_ids) >= {h.id for h in self.blocks}:
            self.resolved.set_result({"decision": "accept", "feedback": feedback})
        else:
            self.resolved.set_result(
                {"decision": "partial", "acceptedHunkIds": hunk_ids, "feedback": feedback}
            )


@dataclass
class EditorChanges:
    """The changes of one ``lspilot.ask``: ``ids`` gives its ``{sessionId, turnId}``, which
    reviews carry whoever proposes the change (a subagent's session is not one the editor knows:
    cancelling it would cancel nothing)."""

    editor: Editor
    buffers: Buffers
    pending: dict[str, Proposal]
    follower: Follower
    ids: Callable[[], dict[str, Any]] = dict

    def unsaved(self, path: Path) -> str | None:
        return self.buffers.unsaved(path)

    def not_saved(self) -> list[Path]:
        return self.buffers.not_saved()

    async def apply(self, ctx: ToolContext, changes: list[FileChange], title: str) -> list[Applied]:
        """With lspilot's review, every file is reviewed before any is applied: a cancel at the
        last file applies none."""
        del title
        paths = [
            p for c in changes for p in (c.path, c.move_to) if p is not None
        ]  # a move deletes its source
        actions = {p: ctx.env.permissions.action("edit", p) for p in map(ctx.relative, paths)}
        if "deny" in actions.values():
            denied = next(p for p, a in actions.items() if a == "deny")
            raise PermissionDenied(f"Permission denied: edit {denied} (configured by the user).")
        if all(a == "allow" for a in actions.values()):
            await ctx.approved()
            steps = [(c, partial(self._write, ctx, c, c.after)) for c in changes]
        elif self.editor.review:
            decided = [await self._review(ctx, change) for change in changes]
            steps = [(p.change, partial(self._settle, ctx, p, a)) for p, a in decided]
        else:  # the client applies what it confirms, as it is confirmed: file by file
            steps = [(c, partial(self._review_and_settle, ctx, c)) for c in changes]
        return await _in_turn(steps)

    async def _review_and_settle(self, ctx: ToolContext, change: FileChange) -> Applied:
        return await self._settle(ctx, *await self._review(ctx, change))

    async def _review(self, ctx: ToolContext, change: FileChange) -> tuple[Proposal, dict[str, Any]]:
        proposal = Proposal(
            f"p_{uuid.uuid4().hex[:12]}", change, hunks(_bare(change.before), _bare(change.after)), None
        )
        proposal.base_version = self.buffers.version(change.path)  # the text under review
        self.pending[proposal.id] = proposal
        update = {"kind": "status", "status": "waiting for review", "proposalId": proposal.id}
        self.editor.notify("lspilot/update", self._ids(ctx) | update)
        try:
            async with self.follower.reviewing():
                answer = await self._decision(ctx, proposal)
        finally:
            del self.pending[proposal.id]
        if answer.get("decision") not in ("accept", "reject", "partial"):  # cancelled, or nonsense
            request = PermissionRequest("edit", [ctx.relative(change.target)], [], "review")
            raise PermissionRejected(request, None)
        return proposal, answer

    def _uri(self, path: Path) -> str:
        return self.editor.names.uri(path)

    def _ids(self, ctx: ToolContext) -> dict[str, Any]:
        return {"sessionId": ctx.session_id, "turnId": None} | self.ids()

    async def _decision(self, ctx: ToolContext, proposal: Proposal) -> dict[str, Any]:
        """The review request's answer, or an ``lspilot.resolve`` for the proposal, whichever is first."""
        if self.editor.review:
            asking = asyncio.ensure_future(
                self.editor.request("lspilot/reviewEdit", self._request(ctx, proposal))
            )
        else:
            asking = asyncio.ensure_future(self._confirm_edit(proposal))
        try:
            done, _ = await asyncio.wait({asking, proposal.resolved}, return_when=asyncio.FIRST_COMPLETED)
        finally:  # also when the turn is cancelled: the editor drops the review ($/cancelRequest)
            if not asking.done():
                asking.cancel()
        if proposal.resolved in done:
            return proposal.resolved.result()
        answer = asking.result()
        keys = ("decision", "acceptedHunkIds", "finalText", "feedback", "appliedByClient")
        return {k: field_of(answer, k) for k in keys}

    def _request(self, ctx: ToolContext, proposal: Proposal) -> dict[str, Any]:
        change = proposal.change
        return {
            **self._ids(ctx),
            "toolCallId": ctx.call_id,
            "proposalId": proposal.id,
            "uri": self._uri(change.path),
            "newUri": self._uri(change.move_to) if change.move_to is not None else None,
            "baseVersion": proposal.base_version,
            "isNewFile": change.before is None,
            "isDeletion": change.after is None,
            "oldText": _bare(change.before),  # as editors hold a file: its BOM hidden
            "newText": _bare(change.after),
            "hunks": [
                {
                    "id": h.id,
                    "oldStart": h.old_start,
                    "oldLines": h.old_lines,
                    "newStart": h.new_start,
                    "newLines": h.new_lines,
                    "oldText": h.old_text,
                    "newText": h.new_text,
                }
                for h in proposal.blocks
            ],
        }

    async def _confirm_edit(self, proposal: Proposal) -> dict[str, Any]:
        """Fallback review: the client's own confirmation UI for an edit annotated as needing it.
        The client applies it itself, so an accepted edit is already in its buffer (a deletion or
        a move is the client's own file operation, when it has them)."""
        change = proposal.change
        confirm = types.ChangeAnnotation("lspilot proposal", needs_confirmation=True, description="Review")
        annotations = {ANNOTATION: confirm}
        operations = self.editor.resource_operations()
        deleting = change.after is None and change.before is not None
        if (deleting and "delete" not in operations) or (change.move_to and "rename" not in operations):
            return await self._confirm_file_operation(proposal)
        if deleting:
            deletion = types.DeleteFile(uri=self._uri(change.path), annotation_id=ANNOTATION)
            edit = types.WorkspaceEdit(document_changes=[deletion], change_annotations=annotations)
        elif change.move_to is not None:
            new = self._uri(change.move_to)
            rename = types.RenameFile(old_uri=self._uri(change.path), new_uri=new, annotation_id=ANNOTATION)
            renamed = types.OptionalVersionedTextDocumentIdentifier(new, None)
            text_edit = types.TextDocumentEdit(renamed, list(line_edits(proposal.blocks, ANNOTATION)))
            parts = [rename, text_edit] if proposal.blocks else [rename]
            edit = types.WorkspaceEdit(document_changes=parts, change_annotations=annotations)
        else:
            edits = line_edits(proposal.blocks, ANNOTATION)
            edit = document_edit(self._uri(change.path), proposal.base_version, edits, annotations)
        applied, reason = await self.editor.apply_edit(edit)
        return {"decision": "accept" if applied else "reject", "feedback": reason, "appliedByClient": applied}

    async def _confirm_file_operation(self, proposal: Proposal) -> dict[str, Any]:
        """Fallback review of a deletion or move the client cannot apply itself: a yes/no
        question, then lspilot deletes or moves the file on disk (a buffer still open on the old
        path would bring it back when saved, so the question says to close it)."""
        change = proposal.change
        name = change.path.name
        if change.move_to is None:
            what, yes = f"lspilot proposes to delete {name}.", "Delete"
        else:
            edited = sum(h.new_lines for h in proposal.blocks)
            lines = f", with {edited} changed line{'s' * (edited != 1)}" if proposal.blocks else ""
            what, yes = f"lspilot proposes to move {name} to {change.move_to.name}{lines}.", "Move"
        if self.buffers.version(change.path) is not None:
            what += f" Close {name} without saving afterwards, or saving it brings it back."
        picked = await self.editor.show_message_request(types.MessageType.Warning, what, [yes, "Keep"])
        return {"decision": "accept" if picked == yes else "reject"}

    async def _settle(self, ctx: ToolContext, proposal: Proposal, answer: dict[str, Any]) -> Applied:
        change, decision = proposal.change, answer["decision"]
        if (problem := _unreadable(answer)) is not None:
            log.warning("the editor's review answer could not be read: %s", problem)
            return Applied(
                change,
                None,
                "rejected",
                f"The editor's answer to the review of {ctx.relative(change.target)} could not be read "
                f"({problem}), so nothing of the change was made.",
            )
        feedback = answer.get("feedback")
        if decision == "reject":
            note = f"The user rejected the change to {ctx.relative(change.target)}"
            return Applied(
                change, None, "rejected", f"{note} and said: {feedback}" if feedback else note + "."
            )
        accepted: list[str] = answer.get("acceptedHunkIds") or []
        if decision == "partial" and not accepted and answer.get("finalText") is None:
            return Applied(
                change,
                None,
                "rejected",
                f"The user accepted none of the change to {ctx.relative(change.target)}.",
            )
        final: str | None = answer.get("finalText")
        expected = _expected(proposal, decision, accepted)
        if final is None:  # accepting a deletion deletes the file (None), not its lines
            final = expected
        else:  # the editor's text, in its one line ending (the lines of the file keep their own), no BOM
            bare = with_endings(final.removeprefix(BOM), _bare(expected), _bare(change.before))
            final = _bom(expected) + bare
        by_client = bool(answer.get("appliedByClient"))
        # Refused before anything is approved when the user's typing and the change meet; the
        # file may have been opened meanwhile: fine. ``_write`` merges with the buffer as it is then.
        if not by_client and (landing := self._landing(ctx, change, final)).status == "rejected":
            return landing
        await ctx.approved()
        if by_client:
            written, merged, onto = final, "", None
        elif (result := await self._write(ctx, change, final)).status == "rejected":
            return result
        else:
            written, merged, onto = result.written, result.note, result.onto
        note = " ".join(filter(None, [_note(proposal, decision, accepted, final, feedback), merged]))
        status = "applied" if written == change.after else "partial"
        return Applied(change, written, status, note, onto)

    async def _write(self, ctx: ToolContext, change: FileChange, text: str | None) -> Applied:
        """Into the editor's buffer when the file is open there, else atomically on disk. A file
        open in the editor that the change deletes or moves is deleted or renamed by the editor,
        so its buffer goes or follows (a buffer left on the old path would bring the file back
        when saved)."""
        if self.buffers.version(change.path) is not None:
            operations = self.editor.resource_operations()
            if text is None and change.move_to is None and "delete" in operations:
                return await self._delete_in_editor(ctx, change)
            if text is not None and change.move_to is not None and "rename" in operations:
                return await self._move_in_editor(ctx, change, text)
        version = self.buffers.version(change.target)
        # A buffer that is the file but for line endings (VS Code's of a file with mixed ones) is
        # reloaded by the editor: the lines of the file not changed keep their own endings.
        reloads = version is not None and self.buffers.endings_only(change.target)
        if version is None or text is None or change.move_to is not None or reloads:
            final = FileChange(change.path, change.before, text, change.move_to, change.encoding)
            await write_to_disk(ctx, [final])
            if reloads and text is not None:
                await self.buffers.arrive(change.target, text)
            return Applied(change, text, "applied")
        landing = self._landing(ctx, change, text)  # on the buffer as it is now, in this loop step
        if landing.status == "rejected" or landing.written is None:
            return landing
        edits = line_edits(hunks(_bare(self.buffers.text(change.target)), _bare(landing.written)), None)
        edit = document_edit(self._uri(change.target), version, edits)
        applied, reason = await self.editor.apply_edit(edit)
        if not applied:
            reason = reason or "the editor refused the edit"
            return Applied(change, None, "rejected", f"The editor could not apply the change: {reason}.")
        await self.buffers.settle(change.target, version, landing.written)
        return landing

    def _landing(self, ctx: ToolContext, change: FileChange, text: str | None) -> Applied:
        """What accepting ``text`` (None: deleting) puts in the editor's buffer of ``change.path``:
        ``text`` while the buffer holds what the change was made on (or the file is not open);
        after the user typed there, ``text`` merged with their edits ("partial", not applied yet)
        or, where the two meet, a rejection. A deletion or a move would lose their edits: refused."""
        current = None if self.buffers.endings_only(change.path) else self.buffers.text(change.path)
        if current is None or _holds(current, change.before):
            return Applied(change, text, "applied")
        where = ctx.relative(change.path)
        if text is None or change.move_to is not None:
            note = f"{where} changed in the editor since the change was proposed; nothing was applied."
            return Applied(change, None, "rejected", note + " Read it again.")
        return onto_edited(change, text, current, where)

    async def _move_in_editor(self, ctx: ToolContext, change: FileChange, text: str) -> Applied:
        """The editor renames the file and its buffer, then the new text goes into that buffer
        (unsaved, like every change to an open buffer)."""
        assert change.move_to is not None
        if (stale := self._landing(ctx, change, text)).status == "rejected":
            return stale
        old, new = self._uri(change.path), self._uri(change.move_to)
        parts: list[types.TextDocumentEdit | types.RenameFile] = [types.RenameFile(old_uri=old, new_uri=new)]
        if text != change.before:
            blind = self.buffers.endings_only(change.path)  # edits of lines, not of their endings
            edits = line_edits(hunks(_bare(self.buffers.text(change.path)), _bare(text), blind), None)
            renamed = types.OptionalVersionedTextDocumentIdentifier(new, None)  # its version is the editor's
            parts.append(types.TextDocumentEdit(renamed, edits))
        applied, reason = await self.editor.apply_edit(types.WorkspaceEdit(document_changes=parts))
        if not applied:
            reason = reason or "the editor refused the edit"
            return Applied(change, None, "rejected", f"The editor could not move the file: {reason}.")
        await self.buffers.arrive(change.move_to, text)
        return Applied(change, text, "applied")

    async def _delete_in_editor(self, ctx: ToolContext, change: FileChange) -> Applied:
        if (stale := self._landing(ctx, change, None)).status == "rejected":  # unsaved work would be lost
            return stale
        edit = types.WorkspaceEdit(document_changes=[types.DeleteFile(uri=self._uri(change.path))])
        applied, reason = await self.editor.apply_edit(edit)
        if not applied:
            reason = reason or "the editor refused the edit"
            return Applied(change, None, "rejected", f"The editor could not delete the file: {reason}.")
        if change.path.exists():  # applied, but the file is still there: delete it ourselves
            await write_to_disk(ctx, [change])
        return Applied(change, None, "applied")


ANNOTATION = "lspilot"


def _holds(buffer: str | None, before: str | None) -> bool:
    """Whether the editor's buffer holds the text a change was made on. Neovim sends an empty
    buffer as "\n" (its one empty line, with 'eol'): that is how it holds an empty file. Edits
    to a buffer are computed from the buffer's own text."""
    return buffer == (before or "") or (not before and buffer == "\n")


async def _in_turn(steps: Sequence[tuple[FileChange, Callable[[], Awaitable[Applied]]]]) -> list[Applied]:
    """Apply each file in turn. Once one has landed, a later one that fails (changed on disk
    meanwhile, say) is reported as not applied instead of failing the call, which would tell
    the model that nothing changed."""
    done: list[Applied] = []
    for change, step in steps:
        try:
            done.append(await step())
        except ToolError as error:
            if all(a.status == "rejected" for a in done):
                raise
            done.append(Applied(change, None, "rejected", str(error)))
    return done


def _expected(proposal: Proposal, decision: str, accepted: list[str]) -> str | None:
    """What the file holds after ``decision`` on the proposal's hunks (None: deleted)."""
    change = proposal.change
    if decision == "accept":
        return change.after
    return _bom(change.after) + apply_hunks(_bare(change.before), proposal.blocks, accepted)


def _bare(text: str | None) -> str:
    """A file's text as editors show it: a BOM is hidden (and written back when they save)."""
    return (text or "").removeprefix(BOM)


def _bom(text: str | None) -> str:
    return BOM if text and text.startswith(BOM) else ""


def _note(
    proposal: Proposal, decision: str, accepted: list[str], final: str | None, feedback: str | None
) -> str:
    ids = [h.id for h in proposal.blocks]
    parts: list[str] = []
    if decision == "partial":
        rejected = [i for i in ids if i not in accepted]
        parts.append(
            f"The user applied hunks {', '.join(accepted) or 'none'} and rejected {', '.join(rejected)}."
        )
    if final != _expected(proposal, decision, accepted):
        parts.append("The user modified the proposal before accepting it; the file now has their version.")
    if feedback:
        parts.append(f"The user said: {feedback}")
    return " ".join(parts)


def _unreadable(answer: dict[str, Any]) -> str | None:
    """What in an editor's reviewEdit answer does not follow docs/protocol.md, if anything: a
    string of hunk ids was read as one id per character. (An unknown decision is a rejection.)"""
    accepted = answer.get("acceptedHunkIds")
    ids = isinstance(accepted, list) and all(isinstance(h, str) for h in accepted)
    if accepted is not None and not ids:
        return f"acceptedHunkIds {reprlib.repr(accepted)} is no list of hunk ids"
    for key in ("finalText", "feedback"):
        if answer.get(key) is not None and not isinstance(answer[key], str):
            return f"{key} {reprlib.repr(answer[key])} is no string"
    return None
