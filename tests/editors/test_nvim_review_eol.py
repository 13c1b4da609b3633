"""A file with mixed line endings (some lines CRLF, some LF) reviewed in a real headless Neovim
against the real daemon: Neovim reads it as 'fileformat' unix with the CRs kept on their lines,
so its buffer is the disk's text and, saved after a review, only the accepted line changed.
"""

from __future__ import annotations

from pathlib import Path

from daemon.scripted_model import ScriptedModel
from tests.editors.nvim_editor import Editor, read_then, tool_results

CHUNKS = [f"def f{n}():\n    return {n}\n\n\n" for n in range(1, 6)]  # `return N` on line 4N - 2
# f3's four lines (9-12) end in LF, the others in CRLF.
MIXED = "".join(chunk if n == 3 else chunk.replace("\n", "\r\n") for n, chunk in enumerate(CHUNKS, 1))


def test_accepting_one_hunk_and_saving_changes_only_that_line_of_a_mixed_file(
    editor: Editor, fake: ScriptedModel, workspace: Path
) -> None:
    source = workspace / "c.py"
    source.write_bytes(MIXED.encode())
    editor.lua("vim.cmd.edit(...)", str(source))
    assert editor.lua("return vim.bo.fileformat") == "unix"
    assert editor.buffer("c.py")[0] == "def f1():\r"  # the CR kept on its line
    edits = [
        {"oldString": "return 2", "newString": "return 20"},
        {"oldString": "return 4", "newString": "return 40"},
    ]
    read_then(fake, "c.py", ("multiedit", {"filePath": "c.py", "edits": edits}))
    editor.ask("bigger")
    editor.pending(2)
    editor.lua("vim.cmd('Lspilot reject h1'); vim.cmd('Lspilot accept h2')")
    assert editor.finished() == "end"
    read, told = tool_results(fake)
    assert "unsaved" not in read and "also edited" not in told, (read, told)
    editor.lua("vim.cmd('buffer c.py'); vim.cmd('write')")
    assert source.read_bytes() == MIXED.replace("return 4\r\n", "return 40\r\n").encode()


BOM_TEXT = "\ufeffimport os\nx = 1\n\n\ny = 2\n"


def test_a_file_with_a_bom_is_reviewed_and_saved_as_editors_hold_it(
    editor: Editor, fake: ScriptedModel, workspace: Path
) -> None:
    """Neovim hides the BOM (and writes it back): the review's texts have none, and the buffer the
    review opens is not taken for a user's edit of line 1 (the change was refused as clashing)."""
    source = workspace / "bom.py"
    source.write_bytes(BOM_TEXT.encode())
    editor.lua("""
        local c = require('lspilot.client')
        c.ensure()
    """)
    editor.until("#vim.lsp.get_clients({name = 'lspilot'}) == 1")
    editor.lua("""
        local client = vim.lsp.get_clients({name = 'lspilot'})[1]
        local show = client.handlers['lspilot/reviewEdit']
        client.handlers['lspilot/reviewEdit'] = function(err, params, ctx, config)
          _G.sent = {params.oldText, params.newText, params.hunks[1].oldText}
          return show(err, params, ctx, config)
        end
    """)
    read_then(fake, "bom.py", ("edit", {"filePath": "bom.py", "oldString": "x = 1", "newString": "x = 10"}))
    editor.ask("bigger")
    editor.pending(1)
    assert editor.lua("return _G.sent") == [BOM_TEXT[1:], BOM_TEXT[1:].replace("x = 1", "x = 10"), "x = 1\n"]
    editor.lua("vim.cmd('Lspilot accept-all')")
    assert editor.finished() == "end"
    _read, told = tool_results(fake)
    assert told.startswith("Edited bom.py") and "changed in the editor" not in told, told
    assert "also edited" not in told, told
    assert editor.buffer("bom.py") == ["import os", "x = 10", "", "", "y = 2"]
    editor.lua("vim.cmd('buffer bom.py'); vim.cmd('write')")
    assert source.read_bytes() == BOM_TEXT.replace("x = 1", "x = 10").encode()
