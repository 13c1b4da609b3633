"""What the daemon's tests share: the installed ``lspilot`` command, and an empty workspace whose
data and user-config folders are the test's own."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

LSPILOT = str(Path(sys.executable).with_name("lspilot"))

# The helpers the test_serve_* and test_loop_* files share: their asserts report as the tests' own.
pytest.register_assert_rewrite("tests.daemon.serving", "tests.daemon.looping")


@pytest.fixture
def empty_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LSPILOT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("LSPILOT_CONFIG_DIR", str(tmp_path / "user-config"))
    root = tmp_path / "ws"
    root.mkdir()
    return root
