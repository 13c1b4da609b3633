"""write: create a file or replace all of it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from lsp_bridge.documents import lsp_lines

from ._editing import load, locked, propose, target
from ._text import FileText
from .base import Tool, ToolError, ToolResult
from .changes import FileChange
from .context import ToolContext


class WriteParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    filePath: str = Field(description="The file to write (absolute, or relative to the workspace root)")
    content: str = Field(description="The whole new content of the file")


class Write(Tool[WriteParams]):
    id = "write"
    Params = WriteParams
    permission = "edit"

    async def run(self, params: WriteParams, ctx: ToolContext) -> ToolResult:
        file = await target(ctx, params.filePath, f"Write {params.filePath}")
        async with locked([file.path]):
            current = load(ctx, file)
            if current and current.raw:
                text = FileText(current.raw, current.encoding)
                text.set_body(params.content)
            else:
                text = FileText.created(params.content, current.encoding if current else "utf-8")
            before = current.raw if current else None
            if text.raw == before:
                raise ToolError(f"{file.shown} already holds exactly this content; nothing was written.")
            change = FileChange(file.path, before, text.raw, encoding=text.encoding)
            verb = "Overwrite" if current else "Create"
            proposal = await propose(ctx, [change], f"{verb} {file.shown}", others=True, named=[file.given])
        lines = len(lsp_lines(params.content))
        done = "Replaced" if current else "Created"
        output = f"{done} {file.shown} ({lines} line{'s' if lines != 1 else ''})."
        return proposal.result(ctx, file.shown, [output], proposal.metadata(ctx))
