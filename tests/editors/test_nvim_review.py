"""The Neovim plugin's inline review of changes to a file's lines (editors/nvim/lua/lspilot/
review.lua) in a real headless Neovim against the real daemon: hunks drawn, accepted and
rejected, files opened for review, buffers closed, typed in or renamed meanwhile.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from daemon.scripted_model import ScriptedModel, Turn
from tests.editors.nvim_editor import (
    EXTMARKS,
    MESSAGES_HAS,
    PENDING_HUNKS,
    TWO_FUNCTIONS,
    Editor,
    read_then,
    tool_results,
)


def test_two_hunks_render_inline_and_accept_one_reject_the_other(
    editor: Editor, fake: ScriptedModel, workspace: Path
) -> None:
    proposal = TWO_FUNCTIONS.replace("3.14 * r * r", "undefined_pi * r * r").replace("'circle'", "'disc'")
    read_then(fake, "a.py", ("write", {"filePath": "a.py", "content": proposal}))
    editor.ask("rename things")
    editor.pending(2)
    # Nothing is applied yet: removed lines are marked in place, proposed lines are virtual lines.
    assert editor.buffer("a.py") == TWO_FUNCTIONS.splitlines()
    assert editor.lua("return vim.bo[vim.fn.bufnr('a.py')].modified") is False
    marks = cast(list[dict[str, Any]], editor.lua(EXTMARKS, "a.py"))
    removed = [(m["row"], m["hl"], m["sign"]) for m in marks if m["hl"]]
    assert removed == [(1, "DiffDelete", "-"), (5, "DiffDelete", "-")]
    proposed = [m["virt"] for m in marks if m["virt"]]
    assert proposed[0][0] == "return undefined_pi * r * r" and proposed[1][0] == "return 'disc'"
    assert all("accept" in virt[-1] for virt in proposed)  # the key hint
    keys = editor.lua("return vim.fn.maparg(']h', 'n', false, true).buffer")
    assert keys == 1

    # The first hunk with the default keys (typed), the second with the commands.
    editor.lua("vim.cmd('normal! gg'); vim.api.nvim_feedkeys(vim.keycode(']h<localleader>a'), 'xt', false)")
    assert editor.lua("return vim.api.nvim_win_get_cursor(0)[1]") == 2
    assert [h["state"] for h in editor.lua(f"return {PENDING_HUNKS}")] == ["accepted", "pending"]
    editor.lua("vim.cmd('Lspilot next'); vim.cmd('Lspilot reject')")
    assert editor.finished() == "end"
    text = editor.buffer("a.py")
    assert text == TWO_FUNCTIONS.replace("3.14 * r * r", "undefined_pi * r * r").splitlines()
    assert editor.lua("return vim.bo[vim.fn.bufnr('a.py')].modified") is True
    assert (workspace / "a.py").read_text() == TWO_FUNCTIONS  # unsaved: the user saves
    assert editor.lua(EXTMARKS, "a.py") == [] and editor.lua("return #require('lspilot').pending()") == 0
    assert editor.lua("return vim.fn.maparg(']h', 'n', false, true).buffer") is None
    told = tool_results(fake)[-1]
    assert "h1" in told and "rejected h2" in told
    # The chat shows the write with its diff, folded.
    assert "⚙ write" in editor.chat() and "undefined_pi" in editor.chat()
    folded = """
        local buf = vim.fn.bufnr('lspilot://chat')
        local row = vim.fn.match(vim.api.nvim_buf_get_lines(buf, 0, -1, false), 'undefined_pi') + 1
        return vim.api.nvim_win_call(vim.fn.bufwinid(buf), function() return vim.fn.foldclosed(row) end)
    """
    assert editor.lua(folded) > 0
    editor.lua("vim.cmd('undo')")
    assert editor.buffer("a.py") == TWO_FUNCTIONS.splitlines()


def test_accept_all_on_a_file_not_open_opens_it_in_a_split_and_changes_its_buffer(
    editor: Editor, fake: ScriptedModel, workspace: Path
) -> None:
    edit = {"filePath": "b.py", "oldString": "area(2)", "newString": "area(3)"}
    read_then(fake, "b.py", ("edit", edit))
    original = "from a import area\n\nprint(area(2))\n"
    editor.ask("bigger")
    editor.pending(1)
    assert editor.lua("return vim.fn.bufwinid(vim.fn.bufnr('b.py')) ~= -1") is True  # shown in a split
    assert editor.lua("return vim.fn.winnr('$')") == 3  # a.py, b.py, the chat
    attached = "#vim.lsp.get_clients({name = 'lspilot', bufnr = vim.fn.bufnr('b.py')}) == 1"
    assert editor.lua(f"return {attached}") is True  # the daemon sees it open
    editor.lua("vim.cmd('Lspilot accept-all')")
    assert editor.finished() == "end"
    # Applied in the buffer (workspace/applyEdit), as for a file that was open: unsaved, undoable.
    assert editor.buffer("b.py") == ["from a import area", "", "print(area(3))"]
    assert editor.lua("return vim.bo[vim.fn.bufnr('b.py')].modified") is True
    assert (workspace / "b.py").read_text() == original  # the user saves
    assert "b.py changed in the editor" not in tool_results(fake)[-1]
    editor.lua("vim.api.nvim_buf_call(vim.fn.bufnr('b.py'), function() vim.cmd('undo') end)")
    assert editor.buffer("b.py") == original.splitlines()
    assert editor.lua("return vim.bo[vim.fn.bufnr('b.py')].modified") is False


def test_a_crlf_file_is_reviewed_without_carriage_returns_and_keeps_its_line_ends(
    editor: Editor, fake: ScriptedModel, workspace: Path
) -> None:
    (workspace / "c.py").write_bytes("x = 1\r\ny = '\u00e9'\r\n".encode())
    edit = {"filePath": "c.py", "oldString": "x = 1", "newString": "x = 2  # \u00e9"}
    read_then(fake, "c.py", ("edit", edit))
    editor.ask("two")
    editor.pending(1)
    [mark] = cast(list[dict[str, Any]], editor.lua(EXTMARKS, "c.py"))
    assert mark["virt"][0] == "x = 2  # \u00e9"  # not "x = 2  # \u00e9^M"
    editor.lua("vim.cmd('Lspilot accept-all')")
    assert editor.finished() == "end"
    assert editor.buffer("c.py") == ["x = 2  # \u00e9", "y = '\u00e9'"]
    assert editor.lua("return vim.bo[vim.fn.bufnr('c.py')].fileformat") == "dos"


PROPOSED_ROWS = """
local buf = vim.fn.bufnr(...)
local info = vim.fn.getwininfo(vim.fn.bufwinid(buf))[1]
local ns = require('lspilot.review').namespace
local mark = vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, {details = true})[1]
local rows = {}
for _, chunks in ipairs(mark[4].virt_lines) do
  local text = table.concat(vim.tbl_map(function(c) return c[1] end, chunks))
  table.insert(rows, {text, vim.fn.strdisplaywidth(text)})
end
return {info.width - info.textoff, rows}
"""


def test_a_proposed_line_longer_than_the_window_is_shown_whole(
    editor: Editor, fake: ScriptedModel, workspace: Path
) -> None:
    # Virtual lines neither wrap nor scroll sideways: the end of a long line was never seen.
    long = "print(" + ", ".join(f"'\u00e9l\u00e9ment {n}'" for n in range(20)) + ")  # END"
    read_then(fake, "b.py", ("edit", {"filePath": "b.py", "oldString": "print(area(2))", "newString": long}))
    editor.ask("print more")
    editor.pending(1)
    for narrower in (False, True):  # drawn for the window's width, and again when it changes
        if narrower:
            editor.lua("vim.api.nvim_win_set_width(vim.fn.bufwinid('b.py'), 16)")
        width, rows = cast(tuple[int, list[tuple[str, int]]], editor.lua(PROPOSED_ROWS, "b.py"))
        *pieces, _hint = rows
        assert len(pieces) > 1 and all(cells <= width for _, cells in pieces), (width, pieces)
        assert all(text.startswith("\u21aa ") for text, _ in pieces[1:])
        joined = "".join(text.removeprefix("\u21aa ") for text, _ in pieces)
        assert joined.replace(" ", "") == long.replace(" ", ""), pieces  # padded to the width
    assert width < 16
    editor.lua("vim.cmd('Lspilot accept-all')")
    assert editor.finished() == "end"
    assert editor.buffer("b.py")[2] == long


def test_a_change_far_down_a_long_file_is_shown_in_the_windows_the_user_is_not_in(
    editor: Editor, fake: ScriptedModel, workspace: Path
) -> None:
    # The split opened for the review showed the top of the file, thousands of lines above it.
    (workspace / "long.py").write_text("".join(f"x{i} = {i}\n" for i in range(5000)))
    edit = {"filePath": "long.py", "oldString": "x4000 = 4000", "newString": "x4000 = 0"}
    read_then(fake, "long.py", ("edit", edit))
    editor.ask("zero x4000")
    editor.pending(1)
    shown = "local w = vim.fn.bufwinid('long.py'); return {vim.fn.line('w0', w), vim.fn.line('w$', w)}"
    top, bottom = cast(list[int], editor.lua(shown))
    assert top <= 4001 <= bottom, (top, bottom)
    assert editor.lua("return vim.fn.fnamemodify(vim.api.nvim_buf_get_name(0), ':t')") == "a.py"  # not moved
    editor.lua("vim.cmd('Lspilot accept-all')")
    assert editor.finished() == "end"
    assert editor.buffer("long.py")[4000] == "x4000 = 0"


@pytest.mark.parametrize("close", ["bdelete", "bwipeout"])
def test_a_review_whose_buffer_was_closed_is_shown_again_by_next(
    editor: Editor, fake: ScriptedModel, workspace: Path, close: str
) -> None:
    edit = {"filePath": "b.py", "oldString": "area(2)", "newString": "area(3)"}
    read_then(fake, "b.py", ("edit", edit))
    editor.ask("bigger")
    editor.pending(1)
    editor.lua(f"vim.cmd('{close} ' .. vim.fn.bufnr('b.py'))")
    assert editor.lua("return vim.fn.bufloaded('b.py')") == 0
    editor.lua("vim.cmd('Lspilot next')")  # opens b.py again, at the hunk, drawn as before
    assert editor.lua("return vim.fn.fnamemodify(vim.api.nvim_buf_get_name(0), ':t')") == "b.py"
    assert editor.lua("return vim.api.nvim_win_get_cursor(0)[1]") == 3
    marks = cast(list[dict[str, Any]], editor.lua(EXTMARKS, "b.py"))
    assert [(m["row"], m["hl"], m["virt"][0]) for m in marks] == [(2, "DiffDelete", "print(area(3))")]
    editor.lua("require('lspilot').accept()")
    assert editor.finished() == "end"
    assert editor.buffer("b.py") == ["from a import area", "", "print(area(3))"]


def test_reject_with_feedback_reaches_the_model(editor: Editor, fake: ScriptedModel, workspace: Path) -> None:
    edit = {"filePath": "a.py", "oldString": "3.14", "newString": "22 / 7"}
    read_then(fake, "a.py", ("edit", edit), "ok, keeping 3.14")
    editor.ask("approximate pi")
    editor.pending(1)
    editor.lua("""
        vim.ui.input = function(opts, on_confirm) on_confirm('use math.pi instead') end
        vim.cmd('normal! gg')
        require('lspilot').next()
        require('lspilot').reject_with_feedback()
    """)
    assert editor.finished() == "end"
    assert "use math.pi instead" in tool_results(fake)[-1]
    assert editor.buffer("a.py") == TWO_FUNCTIONS.splitlines()
    assert editor.lua("return vim.bo.modified") is False


def test_reject_command_takes_a_hunk_id_then_a_reason_and_completes_the_ids(
    editor: Editor, fake: ScriptedModel
) -> None:
    proposal = TWO_FUNCTIONS.replace("3.14", "22 / 7").replace("'circle'", "'disc'")
    read_then(fake, "a.py", ("write", {"filePath": "a.py", "content": proposal}))
    editor.ask("rename things")
    editor.pending(2)
    complete = "return vim.fn.getcompletion(..., 'cmdline')"
    assert editor.lua(complete, "Lspilot reject ") == ["h1", "h2"]
    assert editor.lua(complete, "Lspilot accept h") == ["h1", "h2"]
    assert editor.lua(complete, "Lspilot reject h2 ") == []  # the reason is free text
    # With the cursor on h1 (line 2), a hunk id names the hunk; the words after it are the reason.
    editor.lua("vim.cmd('normal! 2G'); vim.cmd('Lspilot reject h2 keep the old name')")
    assert [h["state"] for h in editor.lua(f"return {PENDING_HUNKS}")] == ["pending", "rejected"]
    assert editor.lua(complete, "Lspilot reject ") == ["h1"]
    # An id of no pending hunk is refused, never taken for a reason for the hunk at the cursor.
    editor.lua("vim.cmd('Lspilot reject h9 nope')")
    editor.until(MESSAGES_HAS, "no pending hunk h9")
    assert [h["state"] for h in editor.lua(f"return {PENDING_HUNKS}")] == ["pending", "rejected"]
    # Without an id, every word is the reason for the hunk under the cursor.
    editor.lua("vim.cmd('Lspilot reject use math.pi')")
    assert editor.finished() == "end"
    told = tool_results(fake)[-1]
    assert "h1: use math.pi" in told and "h2: keep the old name" in told, told
    assert editor.buffer("a.py") == TWO_FUNCTIONS.splitlines()


def test_an_answer_right_after_typing_is_judged_on_the_typed_text(
    editor: Editor, fake: ScriptedModel
) -> None:
    # Neovim debounces didChange (150 ms) and flushes before requests, not before replies: the
    # daemon must see the line typed just before the accept, not the older text. Typed far from
    # the change (line 6; the change is on line 2), both land.
    read_then(fake, "a.py", ("edit", {"filePath": "a.py", "oldString": "3.14", "newString": "22 / 7"}))
    editor.ask("approximate pi")
    editor.pending(1)
    editor.lua("""
        vim.api.nvim_buf_set_lines(vim.fn.bufnr('a.py'), 5, 6, false, {"    return 'typed'"})
        vim.cmd('Lspilot accept-all')
    """)
    assert editor.finished() == "end"
    told = tool_results(fake)[-1]
    assert "The user also edited a.py since the change was proposed (line 6 of the text" in told, told
    typed = TWO_FUNCTIONS.replace("'circle'", "'typed'")
    assert editor.buffer("a.py") == typed.replace("3.14", "22 / 7").splitlines()
    # Typed on the line next to the change (line 1), nothing lands and the lines are named.
    read_then(fake, "a.py", ("edit", {"filePath": "a.py", "oldString": "22 / 7", "newString": "3.1416"}))
    editor.ask("more digits")
    editor.pending(1)
    editor.lua("""
        vim.api.nvim_buf_set_lines(vim.fn.bufnr('a.py'), 0, 1, false, {"def area(r):  # typed"})
        vim.cmd('Lspilot accept-all')
    """)
    assert editor.finished() == "end"
    refused = (
        "a.py changed in the editor since the change was proposed, on or next to the lines the "
        "accepted change edits: the user edited line 1, next to the change of line 2 (line numbers "
        "of the text the change was made on); nothing was applied. Read it again."
    )
    assert refused in tool_results(fake)[-1], tool_results(fake)
    assert editor.buffer("a.py")[:2] == ["def area(r):  # typed", "    return 22 / 7 * r * r"]
    # The user, who accepted, reads why nothing changed (the call itself completed).
    assert f"    ✗ {refused}" in editor.chat(), editor.chat()
    # An ask right after editing another buffer reads that buffer's newest text.
    fake.turns.extend([Turn(tool_calls=[("read", {"filePath": "b.py"})]), Turn(text="ok")])
    editor.lua("vim.cmd('split b.py'); vim.cmd('wincmd p')")
    editor.until("#vim.lsp.get_clients({name = 'lspilot', bufnr = vim.fn.bufnr('b.py')}) == 1")
    editor.lua(
        "vim.api.nvim_buf_set_lines(vim.fn.bufnr('b.py'), 0, 1, false, {'from a import area  # typed'})"
    )
    editor.ask("what does b.py import?")
    assert editor.finished() == "end"
    assert "from a import area  # typed" in tool_results(fake)[-1], tool_results(fake)


@pytest.mark.parametrize("rename", ["saveas", "file"])
def test_renaming_a_reviewed_buffer_ends_its_review_and_tells_the_model(
    editor: Editor, fake: ScriptedModel, workspace: Path, rename: str
) -> None:
    # The review is about a.py; the buffer now shows shapes.py (written by :saveas, or only named
    # by :file). Nothing is applied to either, the marks and keys go, and both user and model hear.
    read_then(fake, "a.py", ("edit", {"filePath": "a.py", "oldString": "3.14", "newString": "22 / 7"}), "ok")
    editor.ask("approximate pi")
    editor.pending(1)
    editor.lua(f"vim.cmd('{rename} shapes.py')")
    assert editor.finished() == "end"
    told = tool_results(fake)[-1]
    assert "a.py was renamed to shapes.py in the editor during the review" in told, told
    assert "nothing was applied" in told
    assert editor.lua("return #require('lspilot').pending()") == 0
    assert editor.lua(EXTMARKS, "shapes.py") == []
    assert editor.lua("return vim.fn.maparg(']h', 'n', false, true).buffer") is None
    assert editor.buffer("shapes.py") == TWO_FUNCTIONS.splitlines()
    assert editor.lua("return vim.fn.bufloaded('a.py')") == 0  # not loaded again by an applied edit
    assert (workspace / "a.py").read_text() == TWO_FUNCTIONS
    editor.until(MESSAGES_HAS, "a.py is now shapes.py: its review ended")
