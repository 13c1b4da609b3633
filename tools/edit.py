"""edit: replace one exact (or forgivingly matched, never guessed) piece of a file."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ._editing import Target, load, locked, propose, target
from ._match import Content, Found, MatchError, find
from ._text import BOM, FileText, as_lines, normalize
from .base import Tool, ToolError, ToolResult
from .changes import FileChange
from .context import ToolContext


class EditParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    filePath: str = Field(description="The file to change (absolute, or relative to the workspace root)")
    oldString: str = Field(
        description="The text to replace, copied from the file without the line-number prefix; "
        "empty to create a file that does not exist yet"
    )
    newString: str = Field(description="The text to put in its place (must differ from oldString)")
    replaceAll: bool = Field(
        default=False, description="Replace every occurrence of oldString (default: it must occur once)"
    )


def identical() -> ToolError:
    return ToolError("oldString and newString are identical, so nothing would change. Send the new text.")


def apply_edit(
    file: Target, text: FileText | None, old: str, new: str, replace_all: bool
) -> tuple[FileText, Found | None]:
    """``text`` after one edit (changed in place when given); no ``Found`` when the edit fills a
    missing or empty file."""
    old = as_lines(old)
    if text is None and old:
        raise ToolError(
            f"File not found: {file.shown}. To create it, send an empty oldString (or use write)."
        )
    if text is None or (not text.body and not old):  # missing, empty, or a BOM alone (kept)
        filled = FileText.created(new, text.encoding if text else "utf-8")
        filled.raw = (text.bom if text else "") + filled.raw.removeprefix(BOM)
        return filled, None
    if not old:
        raise ToolError(
            f"{file.shown} already exists and is not empty; an empty oldString only creates new files. "
            "Give the text to replace, or use write to replace the whole file."
        )
    try:
        found = find(Content(text.body), old, normalize(new), replace_all)
    except MatchError as error:
        raise MatchError(f"{file.shown}: {error}") from None
    text.replace(found.replacements)
    return text, found


def describe(found: Found | None) -> str:
    if found is None:
        return "created the file"
    count = len(found.replacements)
    where = ", ".join(map(str, found.lines[:10])) + (" ..." if count > 10 else "")
    return f"replaced {count} occurrence{'s' if count > 1 else ''} (line{'s' if count > 1 else ''} {where})"


def matcher_note(found: Found | None) -> str:
    if found is None or (found.exact and not found.in_words):
        return ""
    if found.exact:  # x = 1 in max = 1: the line meant may not be in the file
        lines = ", ".join(map(str, found.in_words[:10])) + (" ..." if len(found.in_words) > 10 else "")
        return (
            f"Note: oldString matched part of a longer word (line {lines}). Check the diff: is that "
            "the place you meant?"
        )
    return (
        f"Note: oldString did not match exactly; it was matched by {found.matcher} and newString was "
        "fitted to the file's indentation. Check the diff."
    )


def matcher_tag(found: Found | None) -> str:
    """How ``matcher_note`` marks an edit of several: the matcher when it was not exact."""
    if not matcher_note(found):
        return ""
    assert found is not None
    return "part of a longer word" if found.exact else found.matcher


class Edit(Tool[EditParams]):
    id = "edit"
    Params = EditParams
    permission = "edit"

    async def run(self, params: EditParams, ctx: ToolContext) -> ToolResult:
        if params.oldString == params.newString:
            raise identical()
        file = await target(ctx, params.filePath, f"Edit {params.filePath}")
        async with locked([file.path]):
            current = load(ctx, file)
            before = None if current is None else current.raw
            text, found = apply_edit(file, current, params.oldString, params.newString, params.replaceAll)
            if text.raw == before:
                raise ToolError(f"The edit would leave {file.shown} unchanged; nothing was written.")
            change = FileChange(file.path, before, text.raw, encoding=text.encoding)
            proposal = await propose(ctx, [change], f"Edit {file.shown}", named=[file.given])
        lines = [f"Edited {file.shown}: {describe(found)}.", matcher_note(found)]
        metadata = proposal.metadata(ctx)
        if found is not None:
            metadata.update(matcher=found.matcher, lines=found.lines)
        return proposal.result(ctx, file.shown, [line for line in lines if line], metadata)
