"""`lspilot tool NAME ARGS`: one tool through the same wrapper and permissions, as a subprocess."""

from __future__ import annotations

import asyncio
import json
import os
import select
import signal
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest

from daemon.store import Store

from .conftest import at_a_terminal, lspilot


@pytest.fixture
def workspace(empty_workspace: Path, tmp_path: Path) -> Path:
    (empty_workspace / "notes.txt").write_text("first\nsecond\n")
    (tmp_path / "outside.txt").write_text("out there\n")
    return empty_workspace


def run(root: Path, *argv: str, stdin: str = "") -> tuple[int, dict[str, Any]]:
    done = lspilot("tool", *argv, "--root", str(root), "--json", input=stdin)
    assert done.stdout, done.stderr
    return done.returncode, json.loads(done.stdout)


def test_json_result_and_exit_codes(workspace: Path) -> None:
    code, out = run(workspace, "read", '{"filePath": "notes.txt", "offset": 2}')
    assert code == 0
    assert out == {
        "title": "notes.txt",
        "output": "     2\tsecond\n\n(End of file: 2 lines.)",
        "metadata": {
            "path": str((workspace / "notes.txt").resolve()),
            "lines": 2,
            "from": 2,
            "to": 2,
            "truncated": False,
        },
        "error": None,
    }
    code, out = run(workspace, "read", '{"file": "notes.txt"}')
    assert code == 1 and out["error"].startswith("The read tool was called with invalid arguments: filePath")


def test_asks_are_refused_without_yes_and_approved_with_it(workspace: Path) -> None:
    code, out = run(workspace, "read", '{"filePath": "../outside.txt"}')
    assert code == 1 and "needs approval and there is no terminal to ask" in out["error"]
    code, out = run(workspace, "read", '{"filePath": "../outside.txt"}', "--yes")
    assert code == 0 and "out there" in out["output"]


def test_configured_deny_holds_even_with_yes(workspace: Path) -> None:
    (workspace / "lspilot.toml").write_text('[permission.read]\n"notes.txt" = "deny"\n')
    code, out = run(workspace, "read", '{"filePath": "notes.txt"}', "--yes")
    assert code == 1 and "Permission denied: read notes.txt" in out["error"]
    assert "lspilot.toml" in out["error"]


def test_user_config_wins_over_project_config(workspace: Path, tmp_path: Path) -> None:
    (workspace / ".lspilot").mkdir()
    (workspace / ".lspilot" / "config.toml").write_text('[permission]\nexternal_directory = "allow"\n')
    (tmp_path / "user-config").mkdir()
    (tmp_path / "user-config" / "config.toml").write_text('[permission]\nexternal_directory = "ask"\n')
    code, out = run(workspace, "read", '{"filePath": "../outside.txt"}')
    assert code == 1 and "needs approval" in out["error"]


def test_bad_config_is_named(workspace: Path) -> None:
    (workspace / "lspilot.toml").write_text('[permission]\nbash = "sometimes"\n')
    done = lspilot("tool", "read", "{}", "--root", str(workspace))
    assert done.returncode == 1
    assert "lspilot.toml: permission.bash: '*' = 'sometimes'" in done.stderr


def test_session_state_persists_across_processes(workspace: Path, tmp_path: Path) -> None:
    store = Store(tmp_path / "data" / "lspilot.db")
    session = store.create_session(workspace)
    store.close()
    todos = '{"todos": [{"id": "a", "content": "ship it", "status": "in_progress"}]}'
    assert run(workspace, "todowrite", todos, "--session", session)[0] == 0
    code, out = run(workspace, "todoread", "{}", "--session", session)
    assert code == 0 and out["output"] == "[~] ship it (medium, id a)"
    missing = lspilot("tool", "todoread", "--session", "ses_missing", "--root", str(workspace))
    assert missing.returncode == 2 and "no session 'ses_missing'" in missing.stderr


async def test_a_tool_in_a_session_that_another_process_runs_is_refused(
    workspace: Path, tmp_path: Path
) -> None:
    # Its read times and todos would be written while another process's turn writes them.
    store = Store(tmp_path / "data" / "lspilot.db")
    session = store.create_session(workspace)
    todos = '{"todos": [{"id": "a", "content": "ship it", "status": "in_progress"}]}'
    argv = ["tool", "todowrite", todos, "--session", session, "--root", str(workspace)]
    async with store.claim(session):  # a turn of this process
        busy = await asyncio.to_thread(lspilot, *argv)
    assert busy.returncode == 1 and not busy.stdout
    assert busy.stderr.startswith(f"lspilot tool: session {session} is in use by pid {os.getpid()}, ")
    assert not store.db.execute("SELECT * FROM todos").fetchall()
    assert run(workspace, "todowrite", todos, "--session", session)[0] == 0  # released: it runs
    store.close()


def prompted(workspace: Path) -> tuple[subprocess.Popen[bytes], int, bytes]:
    """``lspilot tool read`` of a file outside the workspace, on a terminal, once it asks: the
    process, the terminal's leader end, and what it showed."""
    argv = ["tool", "read", '{"filePath": "../outside.txt"}', "--root", str(workspace), "--json"]
    return at_a_terminal(*argv, until=b"[r]eject?")


def test_a_terminal_answers_the_ask(workspace: Path) -> None:
    """With a TTY on stdin the user is prompted; "o" approves once."""
    proc, leader, seen = prompted(workspace)
    assert b"external_directory" in seen
    os.write(leader, b"o\n")
    stdout, _ = proc.communicate(timeout=60)
    os.close(leader)
    assert proc.returncode == 0
    assert "out there" in json.loads(stdout)["output"]


def test_ctrl_c_at_the_prompt_exits_at_once(workspace: Path) -> None:
    """Ctrl-C while the terminal waits for an answer ends the process (it used to wait for Enter)."""
    proc, leader, _seen = prompted(workspace)
    proc.send_signal(signal.SIGINT)
    try:
        assert proc.wait(timeout=20) == 130
    finally:
        proc.kill()
        proc.communicate()
        os.close(leader)


def test_ctrl_d_at_the_prompt_rejects(workspace: Path) -> None:
    """End of input (Ctrl-D, or a terminal that went away) is no: the prompt was written again
    and again, forever once the terminal was gone (each read ends at once at its end)."""
    proc, leader, _seen = prompted(workspace)
    os.write(leader, b"\x04")  # the terminal's end-of-file character
    try:
        stdout, _ = proc.communicate(timeout=30)
        shown = b""
        while select.select([leader], [], [], 0)[0]:
            try:
                shown += os.read(leader, 4096)
            except OSError:  # the other end closed
                break
    finally:
        proc.kill()
        os.close(leader)
    assert json.loads(stdout)["error"].startswith("The user rejected")
    assert shown.count(b"[r]eject?") == 0 and b"tell the agent why" not in shown


def test_a_tool_file_that_fails_to_import_is_named_once(workspace: Path) -> None:
    # It was told twice on stderr: a traceback, then the line lspilot tool printed itself.
    (workspace / ".lspilot/tools").mkdir(parents=True)
    (workspace / ".lspilot/tools/broken.py").write_text("import no_such_module_here\n")
    done = lspilot("tool", "read", '{"filePath": "notes.txt"}', "--root", str(workspace), "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["error"] is None
    assert done.stderr.splitlines() == [
        f"lspilot: {workspace / '.lspilot/tools/broken.py'}: ModuleNotFoundError: "
        "No module named 'no_such_module_here'"
    ]


def test_version_is_the_distributions() -> None:
    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]
    shown = lspilot("--version", check=True).stdout
    assert shown == f"lspilot {project['version']}\n"


def test_a_patch_typed_on_the_command_line_counts_its_files_as_read(workspace: Path) -> None:
    patch = "*** Begin Patch\n*** Update File: notes.txt\n@@\n-second\n+2nd\n*** End Patch"
    code, out = run(workspace, "apply_patch", json.dumps({"patchText": patch}), "--yes")
    assert (code, out["error"]) == (0, None)
    assert (workspace / "notes.txt").read_text().splitlines()[1] == "2nd"
    diff = "--- a/notes.txt\n+++ b/notes.txt\n@@ -2 +2 @@\n-2nd\n+second\n"
    code, out = run(workspace, "apply_patch", json.dumps({"patchText": diff}), "--yes")
    assert (code, out["error"]) == (0, None)
    assert (workspace / "notes.txt").read_text().splitlines()[1] == "second"


def test_a_session_of_another_workspace_is_refused(workspace: Path, tmp_path: Path) -> None:
    # Its todos and read times were written from wherever the command ran.
    store = Store(tmp_path / "data" / "lspilot.db")
    session = store.create_session(workspace.resolve())
    other = tmp_path / "other"
    other.mkdir()
    todos = '{"todos": [{"id": "a", "content": "ship it", "status": "pending"}]}'
    refused = lspilot("tool", "todowrite", todos, "--session", session, "--root", str(other))
    home = workspace.resolve()
    assert (refused.returncode, refused.stderr) == (
        2,
        f"lspilot tool: session {session} belongs to {home}; use it there (--root {home})\n",
    )
    assert not store.db.execute("SELECT * FROM todos").fetchall()
    store.close()
