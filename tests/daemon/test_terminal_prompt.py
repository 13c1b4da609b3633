"""The terminal's permission prompt (`lspilot run` with a TTY on stdin): what "always" remembers is
shown before the user answers, and a pattern "always" cannot remember says so and why. The
installed command in a real pseudo-terminal; the model is the scripted fake server."""

from __future__ import annotations

import json
import os
import pty
import subprocess
from pathlib import Path

import pytest

from daemon.scripted_model import ScriptedModel, Turn

from .conftest import LSPILOT


def test_the_prompt_shows_what_always_remembers_and_what_counts_as_once(
    empty_workspace: Path, fake: ScriptedModel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # It said "'always' would allow: /home/me/*" for the home folder, whose "always" is refused
    # (and counted as once, a log warning said afterwards).
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    for folder in (home, elsewhere):
        folder.mkdir()
        (folder / "notes.txt").write_text("notes\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    fake.turns.extend(
        [
            Turn(tool_calls=[("read", {"filePath": str(home / "notes.txt")})]),
            Turn(tool_calls=[("read", {"filePath": str(elsewhere / "notes.txt")})]),
            Turn(text="done"),
        ]
    )
    leader, follower = pty.openpty()
    try:
        os.write(leader, b"a\na\n")  # typed ahead: the terminal keeps the lines until they are read
        ran = subprocess.run(
            [LSPILOT, "run", "read my notes", "--model", "openai/scripted", "--api-base", fake.api_base],
            cwd=empty_workspace,
            stdin=follower,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env=os.environ,
        )
    finally:
        os.close(follower)
        os.close(leader)
    assert ran.returncode == 0, ran.stderr
    prompts = ran.stderr.split("\nlspilot asks: ")[1:]
    assert len(prompts) == 2, ran.stderr
    assert prompts[0].splitlines()[1:3] == [
        f"  external_directory: {home}/*",
        f"  'always' counts as 'once' for {home}/*: it would allow everything in the home folder ({home})",
    ], prompts[0]
    assert "'always' remembers" not in prompts[0]
    assert prompts[1].splitlines()[1:3] == [
        f"  external_directory: {elsewhere}/*",
        f"  'always' remembers: {elsewhere}/*",
    ], prompts[1]
    [approvals] = (tmp_path / "data" / "approvals").glob("*.json")
    remembered = json.loads(approvals.read_text())["allow"]
    assert remembered == [{"permission": "external_directory", "pattern": f"{elsewhere}/*"}]
