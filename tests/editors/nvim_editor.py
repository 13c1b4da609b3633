"""The headless Neovim the plugin tests drive (``Editor``) and what they share: the
workspace's files, Lua snippets to wait on and inspect, and the model's side of a turn.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, cast

import pynvim
import pytest

from daemon.scripted_model import ScriptedModel, Turn
from tests.conftest import REPO

BIN = Path(sys.executable).parent
PLUGIN = REPO / "editors" / "nvim"
WAIT_MS = 90_000
TWO_FUNCTIONS = (
    "def area(r: float) -> float:\n    return 3.14 * r * r\n\n\ndef name() -> str:\n    return 'circle'\n"
)


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
  for _, l in ipairs(d.virt_lines or {}) do  -- a line cut to the window's width, joined again
    if l[1][1] == '\u21aa ' then virt[#virt] = virt[#virt] .. l[2][1]
    else table.insert(virt, l[1][1]) end
  end
  virt = vim.tbl_map(vim.trim, virt)
  table.insert(out, {row = m[2], hl = d.line_hl_group or '', sign = vim.trim(d.sign_text or ''), virt = virt})
end
return out
"""
