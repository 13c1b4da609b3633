"""The `lspilot` command line as a user meets it: exit codes and one-line messages, no tracebacks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from daemon.config import ConfigError
from daemon.store import Store

LSPILOT = str(Path(sys.executable).with_name("lspilot"))


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LSPILOT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("LSPILOT_CONFIG_DIR", str(tmp_path / "user-config"))
    root = tmp_path / "ws"
    root.mkdir()
    return root


def lspilot(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LSPILOT, *argv], cwd=root, capture_output=True, text=True, timeout=120, check=False, env=os.environ
    )


def test_a_damaged_database_is_named_in_one_line(workspace: Path, tmp_path: Path) -> None:
    database = tmp_path / "data" / "lspilot.db"
    database.parent.mkdir()
    database.write_bytes(b"this is not an SQLite database, it only has its name\n" * 40)
    with pytest.raises(ConfigError, match="cannot be used as lspilot's session database"):
        Store(database)
    for argv in (["sessions", "list"], ["run", "hi", "--model", "openai/x"]):
        ran = lspilot(workspace, *argv)
        assert ran.returncode == 1, ran.stderr
        assert ran.stderr.startswith(f"lspilot: {database} cannot be used as lspilot's session database")
        assert "file is not a database" in ran.stderr and "LSPILOT_DATA_DIR" in ran.stderr
        assert "Traceback" not in ran.stderr


def test_a_config_file_that_is_not_utf8_is_named(workspace: Path) -> None:
    (workspace / "lspilot.toml").write_bytes(b'model = "caf\xe9"\n')  # saved as Latin-1
    ran = lspilot(workspace, "run", "hi")
    assert ran.returncode == 1 and "Traceback" not in ran.stderr
    assert ran.stderr.startswith(f"lspilot: {workspace / 'lspilot.toml'}: invalid TOML: not UTF-8 text")


def test_output_cut_short_by_its_reader_ends_quietly(workspace: Path, tmp_path: Path) -> None:
    store = Store(tmp_path / "data" / "lspilot.db")
    for _ in range(3000):  # more than a pipe holds
        store.create_session(workspace.resolve(), title="a session with a fairly long title")
    store.close()
    ran = subprocess.run(
        f"{LSPILOT} sessions list | head -1; echo exit=${{PIPESTATUS[0]}}",
        shell=True,
        executable="/bin/bash",
        cwd=workspace,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.stdout.splitlines()[0].startswith("ses_")
    assert ran.stdout.splitlines()[1] == "exit=141"
    assert ran.stderr == ""


def test_sessions_show_without_an_id_says_what_is_missing(workspace: Path) -> None:
    ran = lspilot(workspace, "sessions", "show")
    assert (ran.returncode, ran.stderr) == (
        2,
        "lspilot sessions show: name a session (see `lspilot sessions list`)\n",
    )
