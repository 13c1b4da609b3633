"""What the daemon's tests share: the installed ``lspilot`` command, and an empty workspace whose
data and user-config folders are the test's own, trusted by its user."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from daemon import trust

LSPILOT = str(Path(sys.executable).with_name("lspilot"))

# The helpers the test_serve_* and test_loop_* files share: their asserts report as the tests' own.
pytest.register_assert_rewrite("tests.daemon.serving", "tests.daemon.looping")


@pytest.fixture
def empty_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Trusted by its user (the record `lspilot trust` writes, in the test's data dir): the tests
    that write a project config or tools into it mean them to count."""
    monkeypatch.setenv("LSPILOT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("LSPILOT_CONFIG_DIR", str(tmp_path / "user-config"))
    root = tmp_path / "ws"
    root.mkdir()
    trust.grant(root)
    return root
