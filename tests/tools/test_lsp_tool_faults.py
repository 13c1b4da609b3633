"""The lsp tool when its server fails: a crash during the request and a request that is never
answered (the scripted server of tests/lsp_bridge acts them out; no real server does on demand),
in words that say what to do next."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from lsp_bridge import Bridge
from tests.lsp_bridge.test_protocol import SCRIPTED
from tests.tools.conftest import make_harness
from tests.tools.test_lsp_tool import error


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ("--crash", "scripted exited with code 3 during textDocument/definition"),
        ("--hang", "scripted did not answer textDocument/definition within 2s"),
    ],
)
async def test_a_failed_request_says_what_to_do_next(
    tmp_path: Path, bridge_factory: Callable[..., Bridge], fault: str, said: str
) -> None:
    # The model read only the bridge's words ("exited with code 3 during ..."), not that the
    # server is started again on the next call, nor what to do instead.
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    servers = {
        "basedpyright": {"enabled": False},
        "scripted": {"command": [sys.executable, str(SCRIPTED), fault], "extensions": [".py"]},
    }
    h = make_harness(root, tmp_path / "data")
    h.env.bridge_factory = lambda: bridge_factory(root, servers=servers, request_timeout=2.0)
    message = await error(h, operation="goToDefinition", filePath="a.py", line=1, character=1)
    assert message.startswith(f"The language server could not answer goToDefinition: {said}")
    if fault == "--crash":
        assert message.endswith(
            "\nIt is started again on the next call: ask again. If it keeps crashing, use grep and read."
        )
    else:
        assert message.endswith(
            "\nThe request was cancelled. Ask again (the server may have been busy), or use grep and read."
        )
