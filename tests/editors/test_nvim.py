"""The Neovim plugin (editors/nvim) in a real headless Neovim, driven over msgpack-RPC by pynvim.

The plugin starts the real daemon (`lspilot serve`) through ``vim.lsp.start``; the daemon runs
real litellm against the scripted model server and a real language server (basedpyright). The only
stand-ins are for the human: ``vim.ui.select`` / ``vim.ui.input`` answer as a user would.
Every wait is on a condition (``vim.wait`` inside Neovim), never a fixed sleep.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pynvim
import pytest

from daemon.scripted_model import ScriptedModel, Turn
from tests.conftest import REPO, data_dir

BIN = Path(sys.executable).parent
PLUGIN = REPO / "editors" / "nvim"
WAIT_MS = 90_000
TWO_FUNCTIONS = (
    "def area(r: float) -> float:\n    return 3.14 * r * r\n\n\ndef name() -> str:\n    return 'circle'\n"
)


@pytest.fixture
def fake() -> Iterator[ScriptedModel]:
    with ScriptedModel() as model:
        yield model


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
        code = f"local args = {{...}}; return vim.wait({WAIT_MS}, function() return {condition} end, 20)"
        assert self.lua(code, *args), f"timed out waiting for: {condition}"

    def buffer(self, name: str = "") -> list[str]:
        return cast(list[str], self.lua("return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1, false)", name))

    def chat(self) -> str:
        return "\n".join(self.buffer("lspilot://chat"))

    def messages(self) -> str:
        return cast(str, self.lua("return vim.api.nvim_exec2('messages', {output = true}).output"))


@pytest.fixture
def editor(tmp_path: Path, workspace: Path, fake: ScriptedModel) -> Iterator[Editor]:
    env = {
        "PATH": f"{BIN}:/usr/bin:/bin",
        "HOME": str(tmp_path),
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
    try:
        yield Editor(nvim)
    finally:
        nvim.exec_lua("for _, c in ipairs(vim.lsp.get_clients()) do c:stop() end")
        nvim.exec_lua("return vim.wait(10000, function() return #vim.lsp.get_clients() == 0 end, 20)")
        nvim.close()


def tool_results(fake: ScriptedModel) -> list[str]:
    """The tool results the model was sent in its last request."""
    return [m["content"] for m in fake.requests[-1]["messages"] if m["role"] == "tool"]


CHAT_HAS = "table.concat(vim.api.nvim_buf_get_lines(vim.fn.bufnr('lspilot://chat'), 0, -1, false), '\\n'):find(args[1], 1, true)"
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
    editor.lua("require('lspilot').ask('what does a.py do?')")
    editor.until(CHAT_HAS, "— done")
    chat = editor.chat()
    assert "what does a.py do?" in chat and "It computes an area." in chat
    assert "⚙ read a.py — completed" in chat
    assert chat.index("⚙ read a.py") < chat.index("It computes an area.")
    assert editor.lua("return require('lspilot').status()") == ""
    # The session can be picked again (the stubbed vim.ui.select is the user) and is redrawn.
    editor.lua("""
        vim.ui.select = function(items, opts, on_choice) _G.picked = {#items, opts.format_item(items[1])}; on_choice(items[1]) end
        local buf = vim.fn.bufnr('lspilot://chat')
        vim.bo[buf].modifiable = true
        vim.api.nvim_buf_set_lines(buf, 0, -1, false, {})
        vim.cmd('Lspilot sessions')
    """)
    editor.until(CHAT_HAS, "It computes an area.")
    assert editor.lua("return _G.picked[1]") == 1
    assert "⚙ read a.py — completed" in editor.chat() and "what does a.py do?" in editor.chat()


def test_two_hunks_render_inline_and_accept_one_reject_the_other(
    editor: Editor, fake: ScriptedModel, workspace: Path
) -> None:
    proposal = TWO_FUNCTIONS.replace("3.14 * r * r", "undefined_pi * r * r").replace("'circle'", "'disc'")
    fake.turns.extend(
        [
            Turn(tool_calls=[("read", {"filePath": "a.py"})]),
            Turn(tool_calls=[("write", {"filePath": "a.py", "content": proposal})]),
            Turn(text="done"),
        ]
    )
    editor.lua("require('lspilot').ask('rename things', {on_done = function(err, r) _G.result = r end})")
    editor.until(f"#{PENDING_HUNKS} == 2")
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

    editor.lua("vim.cmd('normal! gg'); vim.cmd('Lspilot next'); vim.cmd('Lspilot accept')")
    editor.lua("vim.cmd('Lspilot next'); vim.cmd('Lspilot reject')")
    editor.until("_G.result ~= nil")
    assert editor.lua("return _G.result.stopReason") == "end"
    text = editor.buffer("a.py")
    assert text == TWO_FUNCTIONS.replace("3.14 * r * r", "undefined_pi * r * r").splitlines()
    assert editor.lua("return vim.bo[vim.fn.bufnr('a.py')].modified") is True
    assert (workspace / "a.py").read_text() == TWO_FUNCTIONS  # unsaved: the user saves
    assert editor.lua(EXTMARKS, "a.py") == [] and editor.lua("return #require('lspilot').pending()") == 0
    assert editor.lua("return vim.fn.maparg(']h', 'n', false, true).buffer") is None
    told = tool_results(fake)[-1]
    assert "h1" in told and "rejected h2" in told
    editor.lua("vim.cmd('undo')")
    assert editor.buffer("a.py") == TWO_FUNCTIONS.splitlines()


