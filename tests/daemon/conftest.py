"""What the daemon's tests share: the installed ``lspilot`` command run to its end or at a terminal,
and an empty workspace whose data and user-config folders are the test's own, trusted by its user."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from daemon import trust

LSPILOT = str(Path(sys.executable).with_name("lspilot"))


def lspilot(*argv: str, check: bool = False, **options: Any) -> subprocess.CompletedProcess[str]:
    """``lspilot ARGV`` run to its end, its output captured as text; ``options`` go to
    :func:`subprocess.run` (``cwd``, ``input``, ``stdin``, ``env``)."""
    return subprocess.run(
        [LSPILOT, *argv], capture_output=True, text=True, timeout=120, check=check, **options
    )


def at_a_terminal(*argv: str, until: bytes) -> tuple[subprocess.Popen[bytes], int, bytes]:
    """``lspilot ARGV`` with a terminal on its stdin and stderr (stdout piped), once the terminal
    shows ``until``: the process, the terminal's leader end (the test closes it), and what it showed."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([LSPILOT, *argv], stdin=follower, stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    seen = b""
    while until not in seen:
        ready, _, _ = select.select([leader], [], [], 60)
        assert ready, f"no {until!r} on the terminal; saw {seen!r}"
        seen += os.read(leader, 1024)
    return proc, leader, seen


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
