"""The Neovim plugin's navigation (`:Lspilot refs`, `:Lspilot callers` into the quickfix
list) and following the agent (window/showDocument), in a real headless Neovim against the
real daemon and basedpyright.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from daemon.scripted_model import ScriptedModel, Turn
from tests.editors.nvim_editor import (
    Editor,
)

QUICKFIX = (
    "return vim.tbl_map(function(e) local name = vim.fn.bufname(e.bufnr) return {"
    " path = vim.fn.fnamemodify(name, ':.'), lnum = e.lnum, col = e.col, text = e.text,"
    " at = (vim.fn.readfile(name)[e.lnum] or ''):sub(e.col, e.col + 3)} end, vim.fn.getqflist())"
)


def navigate_from_area(editor: Editor, command: str) -> list[dict[str, Any]]:
    """`:Lspilot command` on `area` in a.py; the quickfix entries (`at`: the text at the column)."""
    editor.lua("vim.api.nvim_win_set_cursor(0, {1, 5})")
    editor.lua(f"vim.cmd('Lspilot {command}')")
    editor.until("#vim.fn.getqflist() > 0")
    return cast(list[dict[str, Any]], editor.lua(QUICKFIX))


def test_refs_fill_the_quickfix_list(editor: Editor, workspace: Path) -> None:
    # After multibyte characters a column in characters is not a byte column.
    label = 'label = "h\u00e9 \u2713 \U0001f600"'
    (workspace / "c.py").write_text(f"from a import area\n\n{label}; n = area(1)\n")
    found = {(e["path"], e["lnum"]): e["at"] for e in navigate_from_area(editor, "refs")}
    assert found[("a.py", 1)] == found[("b.py", 1)] == found[("b.py", 3)] == "area", found
    assert found[("c.py", 3)] == "area", found
    # ...and the positions the plugin sends count UTF-16 units, as LSP does.
    assert editor.lua("return require('lspilot.util').utf16(...)", "\u00e9\u2713\U0001f600") == 4
    assert editor.lua("return require('lspilot.util').utf16(...)", "a\u00e9 b", 3) == 2
    assert editor.lua("return vim.fn.getqflist({title = 1}).title").startswith("lspilot")


def test_refs_read_columns_from_the_buffer_of_that_exact_name(editor: Editor, workspace: Path) -> None:
    # To bufnr(), "[id].py" is a pattern, which matches d.py: the lines of [id].py come from its
    # own buffer, unsaved, not from d.py's buffer (nor from the disk).
    (workspace / "[id].py").write_text("from a import area\n\nn = area(1)\n")
    (workspace / "d.py").write_text("d = 1\n\nprint(d)\n")
    editor.lua("vim.cmd.edit('d.py'); vim.cmd.edit(vim.fn.fnameescape('[id].py'))")
    editor.lua("vim.api.nvim_buf_set_lines(0, 2, 3, false, {'s = \"\u00e9\u00e9\u00e9\"; n = area(1)'})")
    editor.lua("vim.api.nvim_win_set_cursor(0, {1, 14}); vim.cmd('Lspilot refs')")  # on its import of area
    editor.until("#vim.fn.getqflist() > 0")
    found = cast(
        list[list[Any]],
        editor.lua(
            "return vim.tbl_map(function(e)"
            " local line = vim.api.nvim_buf_get_lines(e.bufnr, e.lnum - 1, e.lnum, false)[1] or ''"
            " return {vim.fn.fnamemodify(vim.fn.bufname(e.bufnr), ':t'), e.lnum, line:sub(e.col, e.col + 3)}"
            " end, vim.fn.getqflist())"
        ),
    )
    assert ["[id].py", 3, "area"] in found, found


def test_callers_list_each_call_site(editor: Editor) -> None:
    [entry] = navigate_from_area(editor, "callers")
    # the call, not the caller
    assert (entry["path"], entry["lnum"], entry["at"]) == ("b.py", 3, "area"), entry
    assert entry["text"].endswith(": print(area(2))"), entry
    editor.until("vim.fn.fnamemodify(vim.fn.bufname(), ':.') == 'b.py'")  # the one place: gone there
    assert editor.lua("return vim.api.nvim_win_get_cursor(0)") == [3, 6]


RECORD_FOLLOWING = """
local follow = require('lspilot.follow')
local show = follow.show
_G.shown = {}
follow.show = function(buf, selection)
  local win = show(buf, selection)
  local name = vim.fs.basename(vim.api.nvim_buf_get_name(buf))
  table.insert(_G.shown, {name, win, vim.api.nvim_win_get_cursor(win), vim.api.nvim_get_current_win()})
  return win
end
"""


def test_following_shows_each_place_in_one_window_and_the_cursor_stays(
    editor: Editor, fake: ScriptedModel, workspace: Path
) -> None:
    (workspace / "e.py").write_text("s = '\U0001f600'; y = 1\nprint(y)\n")
    references = {"operation": "findReferences", "filePath": "e.py", "symbol": "y"}
    fake.turns.extend(
        [
            Turn(tool_calls=[("read", {"filePath": "b.py", "offset": 3})]),
            Turn(tool_calls=[("lsp", references)]),
            Turn(text="done"),
            Turn(tool_calls=[("read", {"filePath": "a.py"})]),
            Turn(text="done again"),
        ]
    )
    code_window = editor.lua("return vim.api.nvim_get_current_win()")
    editor.lua(RECORD_FOLLOWING)
    editor.lua("vim.cmd('Lspilot follow on')")  # before the daemon starts: it starts following
    editor.lua("require('lspilot').chat()")  # the user is in the chat window
    chat_window = editor.lua("return vim.api.nvim_get_current_win()")
    editor.ask("where is y used?")
    assert editor.finished() == "end"
    editor.until("#_G.shown == 2")
    assert editor.lua("return _G.shown") == [
        ["b.py", code_window, [3, 0], chat_window],  # read from line 3, in the code window
        ["e.py", code_window, [1, 12], chat_window],  # y after 😀: UTF-16 column 10, byte 12
    ]
    assert len(editor.lua("return vim.api.nvim_tabpage_list_wins(0)")) == 2  # no window was added
    marks = editor.lua(
        "return vim.api.nvim_buf_get_extmarks(vim.fn.bufnr('e.py'), require('lspilot.follow').namespace,"
        " 0, -1, {details = true})"
    )
    assert [(m[1], m[2], m[3]["end_row"], m[3]["end_col"]) for m in marks] == [(0, 12, 0, 13)]

    editor.lua("_G.following = nil; require('lspilot').follow(false, function(on) _G.following = on end)")
    editor.until("_G.following == false")
    editor.ask("and a.py?")
    assert editor.finished() == "end"
    assert len(editor.lua("return _G.shown")) == 2  # the read of a.py was not shown
    assert "not following the agent" in editor.messages()
