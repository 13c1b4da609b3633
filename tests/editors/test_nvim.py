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


def test_ask_streams_the_answer_and_tool_calls_into_the_chat(editor: Editor, fake: ScriptedModel) -> None:
    fake.turns.extend([Turn(tool_calls=[("read", {"filePath": "a.py"})]), Turn(text="It computes an area.")])
    editor.lua("require('lspilot').ask('what does a.py do?')")
    editor.until("vim.g.done", ) if False else None
    editor.until("table.concat(vim.api.nvim_buf_get_lines(vim.fn.bufnr('lspilot://chat'), 0, -1, false), '\\n'):find('— done', 1, true)")
    print(editor.chat())
    print(editor.messages())
