"""Fixtures of the Neovim plugin tests: a workspace and a headless Neovim (``editor``) with
the plugin loaded, started with only the environment it needs (see nvim_editor.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pynvim
import pytest

from daemon.scripted_model import ScriptedModel
from tests.conftest import data_dir
from tests.editors.nvim_editor import BIN, PLUGIN, RECORD_ERRORS, TWO_FUNCTIONS, Editor


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / ".git").mkdir()  # a root marker
    (root / "a.py").write_text(TWO_FUNCTIONS)
    (root / "b.py").write_text("from a import area\n\nprint(area(2))\n")
    (root / ".env").write_text("TOKEN=not-for-models\n")
    return root


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
