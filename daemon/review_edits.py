"""The LSP edits that put a review's accepted blocks of lines into an editor's buffer."""

from __future__ import annotations

from lsprotocol import types

from lsp_bridge.documents import utf16_length
from tools.diff import Hunk, split_lines


def line_edits(blocks: list[Hunk], annotation: str | None) -> list[types.TextEdit | types.AnnotatedTextEdit]:
    """TextEdits for ``blocks``, of whole lines (character 0 on both ends: no position encoding
    issues), except a block whose last line ends in ``\\r\\n`` before and after: its edit stops
    before that line's ending, which stays. Neovim applies an edit with every ``\\r`` taken out
    of its text, and holds a file with mixed endings with the ``\\r`` on the lines that have it:
    a line it replaced whole would lose its own (VS Code gives the line the document's ending
    either way)."""
    edits: list[types.TextEdit | types.AnnotatedTextEdit] = []
    for block in blocks:
        start, new_text = block.old_start - 1, block.new_text
        end = types.Position(start + block.old_lines, 0)
        if block.old_lines and block.old_text.endswith("\r\n") and new_text.endswith("\r\n"):
            end = types.Position(end.line - 1, utf16_length(split_lines(block.old_text)[-1][:-2]))
            new_text = new_text[:-2]
        span = types.Range(types.Position(start, 0), end)
        if annotation:
            edits.append(types.AnnotatedTextEdit(annotation_id=annotation, range=span, new_text=new_text))
        else:
            edits.append(types.TextEdit(span, new_text))
    return edits


def document_edit(
    uri: str,
    version: int | None,
    edits: list[types.TextEdit | types.AnnotatedTextEdit],
    annotations: dict[str, types.ChangeAnnotation] | None = None,
) -> types.WorkspaceEdit:
    document = types.OptionalVersionedTextDocumentIdentifier(uri, version)
    return types.WorkspaceEdit(
        document_changes=[types.TextDocumentEdit(document, list(edits))], change_annotations=annotations
    )
