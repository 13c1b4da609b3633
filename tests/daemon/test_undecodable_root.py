"""A workspace whose own path is not UTF-8 (``caf\\xe9`` from a Latin-1 system): its sessions are
stored, listed, continued, used by ``lspilot tool`` and exported, with the path shown as the tools
show such names (``\\xe9``)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from daemon.scripted_model import ScriptedModel, Turn

from .conftest import LSPILOT


def lspilot(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LSPILOT, *argv], cwd=cwd, capture_output=True, text=True, timeout=120, check=False, env=os.environ
    )


def test_a_workspace_whose_path_is_not_utf8_keeps_its_sessions(
    empty_workspace: Path, fake: ScriptedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its path was bound as text and SQLite refused it: `lspilot run` and `sessions list` failed
    # with a UnicodeEncodeError traceback, and the system prompt could not be sent.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    monkeypatch.setenv("PYTHONIOENCODING", "utf-8:strict")  # as under en_US.UTF-8, not C
    root = empty_workspace / "caf\udce9"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    shown = str(empty_workspace) + "/caf\\xe9"
    model = ("--model", "openai/scripted", "--api-base", fake.api_base)
    read = Turn(tool_calls=[("read", {"filePath": "a.py"})])
    fake.turns.extend([read, Turn(text="Done."), read, Turn(text="Again.")])

    first = lspilot(root, "run", "read a.py", *model)
    assert (first.returncode, first.stdout) == (0, "✓ read a.py\nDone.\n"), first.stderr
    assert f"Workspace root: {shown}\n" in fake.requests[0]["messages"][0]["content"]
    listed = lspilot(root, "sessions", "list")
    assert listed.returncode == 0 and listed.stdout.endswith(" build    read a.py\n"), listed.stderr
    session = listed.stdout.split()[0]
    assert lspilot(empty_workspace, "sessions", "list").stdout == ""  # another workspace's

    again = lspilot(root, "run", "again", "--session", session, *model)
    assert (again.returncode, again.stdout) == (0, "✓ read a.py\nAgain.\n"), again.stderr
    tool = lspilot(root, "tool", "read", '{"filePath": "a.py"}', "--session", session)
    assert (tool.returncode, tool.stdout) == (0, "     1\tx = 1\n\n(End of file: 1 lines.)\n"), tool.stderr

    exported = lspilot(root, "sessions", "export", session)
    assert exported.returncode == 0, exported.stderr
    assert json.loads(exported.stdout)["root"] == shown
    assert len(json.loads(exported.stdout)["messages"]) == 6
    show = lspilot(root, "sessions", "show", session)
    assert show.returncode == 0 and f"Workspace: `{shown}`\n" in show.stdout, show.stderr

    elsewhere = lspilot(empty_workspace, "run", "hi", "--session", session, *model)
    assert (elsewhere.returncode, elsewhere.stderr) == (
        1,
        f"lspilot: session {session} belongs to {shown}; continue it there (--root {shown})\n",
    )
