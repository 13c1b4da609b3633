"""multiedit: several edits to one file, applied in order, all or nothing."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ._editing import load, locked, propose, target
from ._match import Found
from .base import Tool, ToolError, ToolResult
from .changes import FileChange
from .context import ToolContext
from .edit import apply_edit, describe, matcher_tag


class EditItem(BaseModel):
    model_config = ConfigDict(extra="forbid")
    oldString: str = Field(description="The text to replace (as the file reads after the earlier edits)")
    newString: str = Field(description="The text to put in its place")
    replaceAll: bool = Field(default=False, description="Replace every occurrence of oldString")


class MultiEditParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    filePath: str = Field(description="The file to change (absolute, or relative to the workspace root)")
    edits: list[EditItem] = Field(min_length=1, description="Edits applied one after another")


class MultiEdit(Tool[MultiEditParams]):
    id = "multiedit"
    Params = MultiEditParams
    permission = "edit"

    async def run(self, params: MultiEditParams, ctx: ToolContext) -> ToolResult:
        file = await target(ctx, params.filePath, f"Edit {params.filePath}")
        total = len(params.edits)
        async with locked([file.path]):
            text = load(ctx, file)
            before = None if text is None else text.raw
            done: list[Found | None] = []
            for number, item in enumerate(params.edits, 1):
                try:
                    if item.oldString == item.newString:
                        raise ToolError("oldString and newString are identical")
                    text, found = apply_edit(file, text, item.oldString, item.newString, item.replaceAll)
                except ToolError as error:
                    earlier = (
                        "edit 1 matched; edit 2 sees its"
                        if number == 2
                        else f"edits 1-{number - 1} matched; edit {number} sees their"
                    )
                    raise ToolError(
                        f"Edit {number} of {total} failed, so none was applied: {error}"
                        + (f" ({earlier} result)" if done else "")
                    ) from None
                done.append(found)
            assert text is not None
            if text.raw == before:
                raise ToolError(f"The edits would leave {file.shown} unchanged; nothing was written.")
            change = FileChange(file.path, before, text.raw, encoding=text.encoding)
            proposal = await propose(ctx, [change], f"Edit {file.shown} ({total} edits)", named=[file.given])
        lines = [f"Applied {total} edit{'s' if total > 1 else ''} to {file.shown}:"]
        tags = [matcher_tag(found) for found in done]
        for number, (found, tag) in enumerate(zip(done, tags, strict=True), 1):
            lines.append(f"  {number}. {describe(found)}" + (f" [{tag}]" if tag else ""))
        if any(found and not found.exact and tag for found, tag in zip(done, tags, strict=True)):
            lines.append("Note: some oldStrings did not match exactly (matcher in brackets). Check the diff.")
        if any(found and found.exact and tag for found, tag in zip(done, tags, strict=True)):
            lines.append("Note: some oldStrings matched part of a longer word (in brackets). Check the diff.")
        metadata = proposal.metadata(ctx)
        metadata["matchers"] = [found.matcher if found else "create" for found in done]
        return proposal.result(ctx, file.shown, lines, metadata)
