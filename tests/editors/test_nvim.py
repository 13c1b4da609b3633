"""The Neovim plugin (editors/nvim) in a real headless Neovim, driven over msgpack-RPC by pynvim.

The plugin starts the real daemon (`lspilot serve`) through ``vim.lsp.start``; the daemon runs
real litellm against the scripted model server and a real language server (basedpyright). The only
stand-ins are for the human: ``vim.ui.select`` / ``vim.ui.input`` answer as a user would.
Every wait is on a condition (``vim.wait`` inside Neovim), never a fixed sleep.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pynvim
import pytest

from daemon.scripted_model import ScriptedModel, ToolCallScript, Turn
from tests.conftest import REPO, data_dir

BIN = Path(sys.executable).parent
PLUGIN = REPO / "editors" / "nvim"
WAIT_MS = 90_000
TWO_FUNCTIONS = (
    "def area(r: float) -> float:\n    return 3.14 * r * r\n\n\ndef name() -> str:\n    return 'circle'\n"
)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / ".git").mkdir()  # a root marker
    (root / "a.py").write_text(TWO_FUNCTIONS)
    (root / "b.py").write_text("from a import area\n\nprint(area(2))\n")
    (root / ".env").write_text("TOKEN=not-for-models\n")
    return root


class Editor:
    """A headless Neovim with the plugin loaded, and helpers to drive it like a user."""

    def __init__(self, nvim: pynvim.Nvim) -> None:
        self.nvim = nvim

    def lua(self, code: str, *args: Any) -> Any:
        return self.nvim.exec_lua(code, *args)

    def until(self, condition: str, *args: Any) -> None:
        """Wait (processing events) until the Lua expression ``condition`` is true."""
        code = (
            f"local args = {{...}}; local function ok() return {condition} end;"
            f" vim.wait({WAIT_MS}, function() return _G.errors[1] ~= nil or ok() end, 20);"
            " return _G.errors[1] == nil and ok() and true or false"
        )
        if not self.lua(code, *args):
            pytest.fail(f"waiting for: {condition}\nerrors: {self.errors()}\n{self.chat()}")

    def errors(self) -> list[str]:
        """Error notifications so far (every one is also shown, as usual)."""
        return cast(list[str], self.lua("return _G.errors"))

    def buffer(self, name: str = "") -> list[str]:
        code = "return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1, false)"
        return cast(list[str], self.lua(code, name))

    def ask(self, prompt: str) -> None:
        """Ask as a user would (from the current buffer); ``finished()`` waits for the answer."""
        self.lua(
            "_G.result = nil; require('lspilot').ask(..., {on_done = function(_, r) _G.result = r end})",
            prompt,
        )

    def pending(self, hunks: int) -> None:
        """Wait until the first pending proposal has ``hunks`` hunks (failing early if the turn ends)."""
        self.until(f"#{PENDING_HUNKS} == {hunks} or _G.result ~= nil")
        if self.lua(f"return #{PENDING_HUNKS}") != hunks:
            pytest.fail(f"the turn ended without the review: {self.chat()}")

    def finished(self) -> str:
        """Wait for the turn asked last to end; its stop reason."""
        self.until("_G.result ~= nil")
        return cast(str, self.lua("return _G.result.stopReason"))

    def chat(self) -> str:
        return "\n".join(self.buffer("lspilot://chat"))

    def messages(self) -> str:
        return cast(str, self.lua("return vim.api.nvim_exec2('messages', {output = true}).output"))


RECORD_ERRORS = """
_G.errors = {}
local notify = vim.notify
vim.notify = function(msg, level, opts)
  if level == vim.log.levels.ERROR then table.insert(_G.errors, msg) end
  return notify(msg, level, opts)
end
"""


@pytest.fixture
def editor(tmp_path: Path, workspace: Path, fake: ScriptedModel) -> Iterator[Editor]:
    env = {
        "PATH": f"{BIN}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "TMPDIR": str(tmp_path),  # Neovim's own temp dir and server socket
        "LSPILOT_DATA_DIR": str(data_dir()),
        "LSPILOT_CONFIG_DIR": str(tmp_path / "user-config"),
        "LSPILOT_MODEL": "openai/scripted",
        "LSPILOT_API_BASE": fake.api_base,
        "OPENAI_API_KEY": "sk-fake",
    }
    argv = ["env", "-i", *(f"{k}={v}" for k, v in env.items())]
    argv += [str(BIN / "nvim"), "--embed", "--headless", "--clean", "--cmd", f"set rtp^={PLUGIN}"]
    nvim = pynvim.attach("child", argv=argv)
    nvim.command(f"cd {workspace}")
    nvim.exec_lua("require('lspilot').setup({ cmd = { ... } })", str(BIN / "lspilot"), "serve")
    nvim.command("edit a.py")
    nvim.exec_lua(RECORD_ERRORS)
    try:
        yield (editor := Editor(nvim))
        assert editor.errors() == []
    finally:
        nvim.exec_lua("for _, c in ipairs(vim.lsp.get_clients()) do c:stop() end")
        nvim.exec_lua("return vim.wait(10000, function() return #vim.lsp.get_clients() == 0 end, 20)")
        with contextlib.suppress(EOFError, OSError):
            nvim.quit()  # a clean exit: Neovim removes its temp dir
        with contextlib.suppress(EOFError, OSError):
            nvim.close()


def tool_results(fake: ScriptedModel) -> list[str]:
    """The tool results the model was sent in its last request."""
    return [m["content"] for m in fake.requests[-1]["messages"] if m["role"] == "tool"]


def read_then(fake: ScriptedModel, path: str, call: tuple[str, dict[str, Any]], answer: str = "done") -> None:
    """The model reads ``path``, makes ``call`` (a change to it), then answers ``answer``."""
    fake.turns.extend(
        [Turn(tool_calls=[("read", {"filePath": path})]), Turn(tool_calls=[call]), Turn(text=answer)]
    )


CHAT_HAS = (
    "table.concat(vim.api.nvim_buf_get_lines(vim.fn.bufnr('lspilot://chat'), 0, -1, false), '\\n')"
    ":find(args[1], 1, true)"
)
MESSAGES_HAS = "vim.api.nvim_exec2('messages', {output = true}).output:find(args[1], 1, true)"
PENDING_HUNKS = "(require('lspilot').pending()[1] or {hunks = {}}).hunks"
EXTMARKS = """
local buf = vim.fn.bufnr(...)
local ns = require('lspilot.review').namespace
local out = {}
for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, {details = true})) do
  local d = m[4]
  local virt = {}
  for _, l in ipairs(d.virt_lines or {}) do table.insert(virt, vim.trim(l[1][1])) end
  table.insert(out, {row = m[2], hl = d.line_hl_group or '', sign = vim.trim(d.sign_text or ''), virt = virt})
end
return out
"""


def test_ask_streams_the_answer_and_tool_calls_into_the_chat(editor: Editor, fake: ScriptedModel) -> None:
    fake.turns.extend([Turn(tool_calls=[("read", {"filePath": "a.py"})]), Turn(text="It computes an area.")])
    assert editor.lua("return vim.fn.getcompletion('Lspilot acc', 'cmdline')") == ["accept", "accept-all"]
    editor.lua("vim.cmd('1,2Lspilot ask what does a.py do?')")  # a range is sent as context
    editor.until(CHAT_HAS, "— done")
    chat = editor.chat()
    assert "what does a.py do?" in chat and "It computes an area." in chat
    assert "The user selected a.py:1-2" in chat and "return 3.14 * r * r" in chat
    assert "⚙ read a.py — completed" in chat
    assert chat.index("⚙ read a.py") < chat.index("It computes an area.")
    assert editor.lua("return require('lspilot').status()") == ""
    # The session can be picked again (the stubbed vim.ui.select is the user) and is redrawn.
    editor.lua("""
        vim.ui.select = function(items, opts, on_choice)
          _G.picked = {#items, opts.format_item(items[1])}
          on_choice(items[1])
        end
        local buf = vim.fn.bufnr('lspilot://chat')
        vim.bo[buf].modifiable = true
        vim.api.nvim_buf_set_lines(buf, 0, -1, false, {})
        vim.cmd('Lspilot sessions')
    """)
    editor.until(CHAT_HAS, "It computes an area.")
    assert editor.lua("return _G.picked[1]") == 1
    assert "⚙ read a.py — completed" in editor.chat() and "what does a.py do?" in editor.chat()


def test_a_tool_title_of_several_lines_is_one_chat_line(editor: Editor, fake: ScriptedModel) -> None:
    # A buffer line cannot hold a newline: the update failed and the call stayed "running".
    call = ("bash", {"command": "echo one", "description": "say\none"})
    fake.turns.extend([Turn(tool_calls=[call]), Turn(text="said it")])
    editor.lua("vim.ui.select = function(items, _, on_choice) on_choice(items[1]) end")  # allow once
    editor.ask("say one")
    assert editor.finished() == "end"
    assert "  ⚙ bash say one — completed" in editor.chat().splitlines(), editor.chat()


def test_a_retry_after_a_broken_stream_drops_the_broken_off_text(editor: Editor, fake: ScriptedModel) -> None:
    fake.turns.extend(
        [
            Turn(reasoning="Thinking about areas.", text="The area is computed by", cut_after_chunks=5),
            Turn(text="It computes an area."),
        ]
    )
    editor.ask("what does a.py do?")
    editor.until(CHAT_HAS, "— done")
    chat = editor.chat()
    assert "It computes an area." in chat and "_retrying_" in chat
    assert "Thinking about" not in chat and "The area" not in chat, chat
    assert chat.index("_retrying_") < chat.index("It computes an area.")


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


def accept_patch_taking_a_away(editor: Editor, fake: ScriptedModel, workspace: Path, patch: str) -> None:
    """The model reads a.py and applies ``patch`` (which deletes or moves it); the user accepts
    it all; a.py is gone from the disk and from Neovim's buffers."""
    read_then(fake, "a.py", ("apply_patch", {"patchText": patch}))
    editor.ask("change a.py")
    editor.pending(1)
    editor.lua("vim.cmd('Lspilot accept-all')")
    assert editor.finished() == "end"
    assert not (workspace / "a.py").exists()
    assert editor.lua("return vim.fn.bufloaded(vim.fn.fnamemodify('a.py', ':p'))") == 0


def test_an_accepted_deletion_deletes_the_file_and_its_buffer(
    editor: Editor, fake: ScriptedModel, workspace: Path
) -> None:
    # Neovim deletes it (workspace/applyEdit with a DeleteFile): no buffer left to save it back.
    patch = "*** Begin Patch\n*** Delete File: a.py\n*** End Patch"
    accept_patch_taking_a_away(editor, fake, workspace, patch)
    told = tool_results(fake)[-1]  # and basedpyright says what the deletion broke
    assert told.startswith("Applied the patch:\n  D a.py\nNew problems in b.py"), told
    assert 'Import "a" could not be resolved' in told


def test_an_accepted_move_renames_the_file_and_its_buffer(
    editor: Editor, fake: ScriptedModel, workspace: Path
) -> None:
    patch = (
        "*** Begin Patch\n*** Update File: a.py\n*** Move to: shapes.py\n@@\n"
        "-    return 'circle'\n+    return 'disc'\n*** End Patch"
    )
    accept_patch_taking_a_away(editor, fake, workspace, patch)
    assert editor.buffer("shapes.py") == TWO_FUNCTIONS.replace("circle", "disc").splitlines()
    assert tool_results(fake)[-1].startswith("Applied the patch:\n  R a.py -> shapes.py")


def test_a_move_without_line_changes_waits_for_the_user(
    editor: Editor, fake: ScriptedModel, workspace: Path
) -> None:
    move = {"patchText": "*** Begin Patch\n*** Update File: b.py\n*** Move to: c.py\n*** End Patch"}
    read_then(fake, "b.py", ("apply_patch", move), "kept b.py")
    editor.ask("rename b.py")
    editor.pending(1)  # not accepted on the user's behalf because no line differs
    [mark] = cast(list[dict[str, Any]], editor.lua(EXTMARKS, "b.py"))
    assert mark["virt"][0] == "lspilot moves this file to c.py"
    editor.lua("vim.cmd('Lspilot reject-all not now')")
    assert editor.finished() == "end"
    assert (workspace / "b.py").exists() and not (workspace / "c.py").exists()
    assert "not now" in tool_results(fake)[-1]


def test_deleting_an_empty_file_says_so_and_waits_for_the_user(
    editor: Editor, fake: ScriptedModel, workspace: Path
) -> None:
    (workspace / "empty.py").write_text("")
    delete = {"patchText": "*** Begin Patch\n*** Delete File: empty.py\n*** End Patch"}
    read_then(fake, "empty.py", ("apply_patch", delete), "deleted")
    editor.ask("remove empty.py")
    editor.pending(1)
    [mark] = cast(list[dict[str, Any]], editor.lua(EXTMARKS, "empty.py"))
    assert mark["virt"][0] == "lspilot deletes this empty file"
    editor.lua("vim.cmd('Lspilot accept-all')")
    assert editor.finished() == "end"
    assert not (workspace / "empty.py").exists(), tool_results(fake)


def test_an_empty_file_not_open_gets_the_accepted_text(
    editor: Editor, fake: ScriptedModel, workspace: Path
) -> None:
    # Neovim sends an empty buffer as "\n" (one empty line, 'eol'): that is the file's "" on disk.
    (workspace / "empty.py").write_text("")
    read_then(fake, "empty.py", ("write", {"filePath": "empty.py", "content": "X = 1\n"}))
    editor.ask("fill empty.py")
    editor.pending(1)
    editor.lua("vim.cmd('Lspilot accept-all')")
    assert editor.finished() == "end"
    assert tool_results(fake)[-1] == "Replaced empty.py (1 line).", tool_results(fake)
    assert editor.buffer("empty.py") == ["X = 1"]


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


def test_an_answer_right_after_typing_is_judged_on_the_typed_text(
    editor: Editor, fake: ScriptedModel
) -> None:
    # Neovim debounces didChange (150 ms) and flushes before requests, not before replies: the
    # daemon must see the line typed just before the accept (it refuses), not the older text.
    read_then(fake, "a.py", ("edit", {"filePath": "a.py", "oldString": "3.14", "newString": "22 / 7"}))
    editor.ask("approximate pi")
    editor.pending(1)
    editor.lua("""
        vim.api.nvim_buf_set_lines(vim.fn.bufnr('a.py'), 5, 6, false, {"    return 'typed'"})
        vim.cmd('Lspilot accept-all')
    """)
    assert editor.finished() == "end"
    told = tool_results(fake)[-1]
    assert "a.py changed in the editor during the review; nothing was applied" in told, told
    assert editor.buffer("a.py") == TWO_FUNCTIONS.replace("'circle'", "'typed'").splitlines()
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


def test_a_permission_prompt_is_answered_through_vim_ui_select(editor: Editor, fake: ScriptedModel) -> None:
    read_env = Turn(tool_calls=[("read", {"filePath": ".env"})])
    fake.turns.extend([read_env, Turn(text="read it"), read_env, Turn(text="understood")])
    editor.lua("""
        _G.asked = {}
        _G.answers = {'allow_once', 'reject_once'}
        vim.ui.select = function(items, opts, on_choice)
          table.insert(_G.asked, {prompt = opts.prompt, names = vim.tbl_map(opts.format_item, items)})
          local want = table.remove(_G.answers, 1)
          for _, item in ipairs(items) do if item.optionId == want then return on_choice(item) end end
        end
        vim.ui.input = function(opts, on_confirm) on_confirm('secrets stay private') end
    """)
    editor.ask("read .env")
    assert editor.finished() == "end"
    assert "TOKEN=not-for-models" in tool_results(fake)[-1]
    asked = cast(list[dict[str, Any]], editor.lua("return _G.asked"))
    assert ".env" in asked[0]["prompt"] and len(asked[0]["names"]) == 4
    editor.ask("again")
    assert editor.finished() == "end"
    assert "secrets stay private" in tool_results(fake)[-1]
    assert editor.lua("return #_G.asked") == 2


def test_two_permission_prompts_at_once_are_asked_one_after_the_other(
    editor: Editor, fake: ScriptedModel, workspace: Path
) -> None:
    # The two reads run at once. A picker opened over another closes it without a choice
    # (telescope, snacks...), which stopped the turn; this vim.ui.select does the same.
    (workspace / "prod.env").write_text("TOKEN=two\n")
    reads: list[ToolCallScript] = [("read", {"filePath": ".env"}), ("read", {"filePath": "prod.env"})]
    fake.turns.extend([Turn(tool_calls=reads), Turn(text="read both")])
    editor.lua("""
        _G.asked = {}
        local close
        vim.ui.select = function(items, opts, on_choice)
          if close then close() end
          local done = false
          local function choose(choice) if not done then done = true; on_choice(choice) end end
          close = function() choose(nil) end
          table.insert(_G.asked, opts.prompt)
          vim.defer_fn(function() choose(items[1]) end, 500)  -- the user reads it, then allows
        end
    """)
    editor.ask("read the env files")
    assert editor.finished() == "end"
    told = "\n".join(tool_results(fake))
    assert "TOKEN=not-for-models" in told and "TOKEN=two" in told, told
    assert sorted(editor.lua("return _G.asked")) == [
        "lspilot asks: Read .env (read .env)",
        "lspilot asks: Read prod.env (read prod.env)",
    ]


def test_a_turn_streams_on_after_the_chat_buffer_is_wiped(editor: Editor, fake: ScriptedModel) -> None:
    fake.turns.extend([Turn(tool_calls=[("read", {"filePath": ".env"})]), Turn(text="read it")])
    editor.lua("""
        _G.allow = nil
        vim.ui.select = function(items, opts, on_choice) _G.allow = function() on_choice(items[1]) end end
    """)
    editor.ask("read .env")
    editor.until("_G.allow ~= nil")  # the permission prompt is up; the read is pending
    editor.lua("vim.cmd('bwipeout! lspilot://chat')")
    editor.lua("_G.allow()")
    assert editor.finished() == "end"
    chat = editor.chat()
    assert "⚙ read .env — completed" in chat and "read it" in chat, chat


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


def test_checkhealth_reports_ok(editor: Editor) -> None:
    editor.lua("vim.cmd('checkhealth lspilot')")
    report = "\n".join(cast(list[str], editor.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)")))
    assert "ERROR" not in report, report
    expected_lines = (
        "OK Neovim 0.",
        "OK executable:",
        "OK daemon reachable: lspilot",
        "OK model: openai/scripted",
    )
    for expected in expected_lines:
        assert expected in report, report
    assert "OK basedpyright: available" in report and "log:" in report
    editor.lua("vim.cmd('Lspilot log')")
    assert editor.lua("return vim.api.nvim_buf_get_name(0)") == str(data_dir() / "logs" / "lspilot.log")


def test_cancel_during_a_turn_stops_it_and_clears_pending_reviews(
    editor: Editor, fake: ScriptedModel
) -> None:
    edit = {"filePath": "a.py", "oldString": "3.14", "newString": "3.14159"}
    fake.turns.extend(
        [
            Turn(tool_calls=[("read", {"filePath": "a.py"})]),
            Turn(tool_calls=[("edit", edit)]),
        ]
    )
    editor.ask("more digits")
    editor.pending(1)
    assert editor.lua("return require('lspilot').status()") == "lspilot: waiting for review"
    editor.lua("vim.cmd('Lspilot cancel')")
    assert editor.finished() == "cancelled"
    assert editor.lua("return #require('lspilot').pending()") == 0
    assert editor.lua(EXTMARKS, "a.py") == []
    assert editor.buffer("a.py") == TWO_FUNCTIONS.splitlines()
    editor.until(CHAT_HAS, "— cancelled")
    assert editor.lua("return require('lspilot').status()") == ""

    # A turn stalled while streaming stops too.
    fake.turns.append(Turn(text="thinking it over", stall_after_chunks=2))
    editor.ask("take your time")
    editor.until(CHAT_HAS, "think")
    assert editor.lua("return require('lspilot').status()").startswith("lspilot: ")  # for a statusline
    editor.lua("require('lspilot').cancel()")
    assert editor.finished() == "cancelled"


def test_cancel_with_nothing_running_says_so(editor: Editor, fake: ScriptedModel) -> None:
    fake.turns.append(Turn(text="done"))
    editor.ask("hello")
    assert editor.finished() == "end"
    editor.lua("vim.cmd('Lspilot cancel')")
    editor.until(MESSAGES_HAS, "nothing is running")
    assert "lspilot: nothing is running in this chat's session" in editor.messages()


def test_a_second_ask_while_a_turn_runs_is_told_to_wait_or_cancel(
    editor: Editor, fake: ScriptedModel
) -> None:
    fake.turns.extend([Turn(text="thinking it over", stall_after_chunks=2), Turn(text="done")])
    editor.ask("take your time")
    editor.until(CHAT_HAS, "think")
    session = cast(str, editor.lua("return vim.tbl_values(require('lspilot.client').session)[1]"))
    editor.lua("require('lspilot').ask('and now?', {on_done = function(err) _G.refused = err end})")
    editor.until(MESSAGES_HAS, "still running")
    editor.until("_G.refused ~= nil")
    # The daemon refuses too (when the plugin did not know the turn runs): the same words.
    editor.lua("vim.cmd('messages clear'); require('lspilot.client').running = {}; _G.refused = nil")
    editor.lua("require('lspilot').ask('and now?', {on_done = function(err) _G.refused = err end})")
    editor.until("_G.refused ~= nil")
    editor.until(MESSAGES_HAS, "still running")
    messages = editor.messages()
    assert "a turn is still running in this chat; wait for it or :Lspilot cancel it" in messages
    assert session not in messages, messages
    editor.lua("vim.cmd('Lspilot cancel')")  # the first turn still answers to cancel
    assert editor.finished() == "cancelled"


def test_a_turn_of_another_session_runs_on_outside_the_chat_and_cancel_reaches_it(
    editor: Editor, fake: ScriptedModel
) -> None:
    fake.turns.extend(
        [
            Turn(text="an older answer"),
            Turn(tool_calls=[("read", {"filePath": ".env"})]),
            Turn(text="back in the older session"),
        ]
    )
    editor.ask("an older question")
    assert editor.finished() == "end"
    older = editor.lua("return _G.result.sessionId")
    editor.lua(
        """
        _G.older, _G.prompted = ..., false
        vim.ui.select = function(items, opts, on_choice)
          if opts.kind ~= 'lspilot_session' then _G.prompted = true return end  -- left open
          for _, s in ipairs(items) do if s.sessionId == _G.older then return on_choice(s) end end
        end
        """,
        older,
    )
    editor.lua(
        "require('lspilot').ask('read .env', {new_session = true, on_done = function(_, r) _G.other = r end})"
    )
    editor.until("_G.prompted")  # the new session's turn waits for the user
    editor.lua("_G.picked = nil; require('lspilot').sessions(function(id) _G.picked = id end)")
    editor.until("_G.picked ~= nil")  # ...who looks at the older session meanwhile
    editor.lua("vim.cmd('Lspilot cancel')")  # the chat's session runs nothing: the running turn stops
    editor.until("_G.other ~= nil")
    assert editor.lua("return _G.other.stopReason") == "cancelled"
    chat = editor.chat()
    assert "an older answer" in chat and "read .env" not in chat and "cancelled" not in chat, chat
    editor.ask("and now?")  # the session the chat shows, not the one that updated last
    assert editor.finished() == "end"
    assert editor.lua("return _G.result.sessionId") == older
    assert "back in the older session" in editor.chat()


def test_a_daemon_dying_mid_turn_ends_the_turn_and_the_next_ask_continues_the_session(
    editor: Editor, fake: ScriptedModel
) -> None:
    fake.turns.extend([Turn(text="thinking it over", stall_after_chunks=2), Turn(text="back again")])
    editor.lua("require('lspilot').ask('take your time', {on_done = function(err) _G.failed = err end})")
    editor.until(CHAT_HAS, "think")
    session = editor.lua("return vim.tbl_values(require('lspilot.client').session)[1]")
    [pid] = editor.lua("return vim.api.nvim_get_proc_children(vim.fn.getpid())")
    os.kill(pid, signal.SIGKILL)
    editor.until("_G.failed ~= nil")  # the ask is answered (with an error), not left waiting
    assert editor.lua("return _G.failed.exited") is True
    editor.until(CHAT_HAS, "— error: the daemon exited (signal 9)")
    assert editor.lua("return require('lspilot').status()") == ""
    editor.until("#vim.lsp.get_clients({name = 'lspilot'}) == 0")
    assert "the daemon exited with signal 9" in editor.messages()
    editor.ask("are you there?")  # a new daemon, the same conversation
    assert editor.finished() == "end"
    assert editor.lua("return _G.result.sessionId") == session
    prompts = [m["content"] for m in fake.requests[-1]["messages"] if m["role"] == "user"]
    assert "take your time" in prompts[0] and "are you there?" in prompts[-1], prompts


def test_old_neovim_is_told_the_plugin_needs_0_10(editor: Editor) -> None:
    message = editor.lua(f"""
        local has = vim.fn.has
        vim.fn.has = function(feature) if feature == 'nvim-0.10' then return 0 end return has(feature) end
        vim.g.loaded_lspilot = nil
        vim.api.nvim_del_user_command('Lspilot')
        local ok, err = pcall(dofile, '{PLUGIN}/plugin/lspilot.lua')
        vim.fn.has = has
        return vim.fn.exists(':Lspilot')
    """)
    assert message == 0
    assert "requires Neovim >= 0.10" in editor.messages()
