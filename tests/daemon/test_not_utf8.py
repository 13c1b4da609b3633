"""Text that is not UTF-8 through the command line: a workspace whose own path is not (``caf\\xe9``
from a Latin-1 system) keeps its sessions, and a prompt typed in a Latin-1 terminal or a lone
surrogate from the provider is stored, sent and printed, as the tools show such names (``\\xe9``)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import pytest

from daemon.scripted_model import ScriptedModel, Turn

from .conftest import LSPILOT
from .serving import RawEditor


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
    assert (tool.returncode, tool.stdout) == (0, "     1\tx = 1\n\n(End of file: 1 line.)\n"), tool.stderr

    exported = lspilot(root, "sessions", "export", session)
    assert exported.returncode == 0, exported.stderr
    assert json.loads(exported.stdout)["root"] == shown
    assert len(json.loads(exported.stdout)["messages"]) == 6
    show = lspilot(root, "sessions", "show", session)
    assert show.returncode == 0 and f"Workspace: `{shown}`\n" in show.stdout, show.stderr

    elsewhere = lspilot(empty_workspace, "run", "hi", "--session", session, *model)
    assert (elsewhere.returncode, elsewhere.stderr) == (
        2,
        f"lspilot: session {session} belongs to {shown}; continue it there (--root {shown})\n",
    )


def test_a_prompt_and_an_answer_that_are_not_utf8_are_kept(
    empty_workspace: Path, fake: ScriptedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SQLite refused the prompt's lone surrogate (a traceback, the turn lost), and the terminal
    # dropped a text delta holding one ("listener failed on text" on stderr).
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    monkeypatch.setenv("PYTHONIOENCODING", "utf-8:strict")
    fake.turns.extend([Turn(text="Done caf\udce9 \ud83d x."), Turn(text="Again.")])
    model = (b"--model", b"openai/scripted", b"--api-base", fake.api_base.encode())
    ran = subprocess.run(
        [LSPILOT.encode(), b"run", b"caf\xe9 please", *model],  # as a Latin-1 terminal passes it
        cwd=empty_workspace,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert (ran.returncode, ran.stdout.decode()) == (0, "Done caf\\xe9 \ufffd x.\n"), ran.stderr
    assert ran.stderr.decode().startswith("session ses_")
    assert fake.requests[0]["messages"][-1] == {"role": "user", "content": "caf\\xe9 please"}
    listed = lspilot(empty_workspace, "sessions", "list")
    assert listed.stdout.endswith(" build    caf\\xe9 please\n"), listed.stderr
    session = listed.stdout.split()[0]
    again = lspilot(empty_workspace, "run", "more", "--session", session, *(a.decode() for a in model))
    assert (again.returncode, again.stdout) == (0, "Again.\n"), again.stderr
    said = [m["content"] for m in fake.requests[1]["messages"][1:]]
    assert said == ["caf\\xe9 please", "Done caf\\xe9 \ufffd x.", "more"]


async def test_serve_in_a_workspace_whose_path_is_not_utf8(tmp_path: Path, fake: ScriptedModel) -> None:
    workspace = tmp_path / "caf\udce9"  # the editor sends it as file:///.../caf%E9
    workspace.mkdir()
    (workspace / "a.py").write_text("x = 1\n")
    fake.turns.extend([Turn(tool_calls=[("read", {"filePath": "a.py"})]), Turn(text="ok")])
    editor = await RawEditor.start(tmp_path, fake, "serve")
    async with asyncio.timeout(120):
        await editor.initialize(workspace)
        answer = (await editor.ask("read a.py"))["result"]
        assert answer["stopReason"] == "end"
        sessions = {"command": "lspilot.sessions", "arguments": []}
        editor.send({"id": 4, "method": "workspace/executeCommand", "params": sessions})
        assert [s["sessionId"] for s in (await editor.answer(4))["result"]] == [answer["sessionId"]]
        history = {"command": "lspilot.history", "arguments": [{"sessionId": answer["sessionId"]}]}
        editor.send({"id": 5, "method": "workspace/executeCommand", "params": history})
        transcript = (await editor.answer(5))["result"]
        assert await editor.stop() == 0
    assert transcript["root"] == f"{tmp_path}/caf\\xe9"
    tool = next(p for m in transcript["messages"] for p in m["parts"] if p["kind"] == "tool")
    assert (tool["state"], tool["output"]) == ("completed", "     1\tx = 1\n\n(End of file: 1 line.)")
    assert f"Workspace root: {tmp_path}/caf\\xe9\n" in fake.requests[0]["messages"][0]["content"]


def test_a_logged_name_that_is_not_utf8_reaches_the_log_file(empty_workspace: Path, tmp_path: Path) -> None:
    # The log file's handler was strict UTF-8: the warning naming a project tool that failed to
    # load was dropped from the log, and a "--- Logging error ---" traceback went to stderr.
    tools = empty_workspace / ".lspilot" / "tools"
    tools.mkdir(parents=True)
    (tools / "caf\udce9.py").write_text("this is not python\n")
    (empty_workspace / "a.py").write_text("x = 1\n")
    ran = lspilot(empty_workspace, "tool", "read", '{"filePath": "a.py"}')
    assert ran.returncode == 0 and "Logging error" not in ran.stderr, ran.stderr
    problem = f"{tools}/caf\\xe9.py: NameError: name 'this' is not defined"
    assert f"lspilot: {problem}\n" in ran.stderr
    log = (tmp_path / "data" / "logs" / "lspilot.log").read_text(encoding="utf-8")
    assert f" WARNING tools.registry: {problem}\n" in log
