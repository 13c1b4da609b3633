"""A turn that ends short of an answer says why: the model's output limit, the provider's content
filter, the agent's step limit.

Through the real ``lspilot run`` (real litellm, the scripted model over HTTP): the reason goes to
stderr, the answer so far to stdout, and the exit status is 1.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from daemon.loop import CUT_OFF, FILTERED
from daemon.scripted_model import ScriptedModel, Turn

from .conftest import LSPILOT


@pytest.fixture
def workspace(empty_workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    (empty_workspace / "a.py").write_text("def area(r):\n    return 3.14 * r * r\n")
    return empty_workspace


def run(root: Path, fake: ScriptedModel) -> subprocess.CompletedProcess[str]:
    command = [LSPILOT, "run", "what is area?", "--root", str(root), "--model", "openai/scripted"]
    command += ["--api-base", fake.api_base]
    return subprocess.run(command, check=False, capture_output=True, text=True, env=os.environ, timeout=120)


def test_an_answer_cut_off_at_the_output_limit_says_so(workspace: Path, fake: ScriptedModel) -> None:
    fake.push(Turn(text="area(r) returns", finish_reason="length"))
    ran = run(workspace, fake)
    assert (ran.returncode, ran.stdout) == (1, "area(r) returns\n")
    assert CUT_OFF in ran.stderr


def test_an_answer_stopped_by_the_content_filter_says_so(workspace: Path, fake: ScriptedModel) -> None:
    fake.push(Turn(finish_reason="content_filter"))
    ran = run(workspace, fake)
    assert (ran.returncode, ran.stdout) == (1, "")
    assert FILTERED in ran.stderr


def test_an_answer_that_ends_is_not_called_cut_off(workspace: Path, fake: ScriptedModel) -> None:
    fake.push(Turn(text="area(r) returns 3.14 * r * r."))
    ran = run(workspace, fake)
    assert (ran.returncode, ran.stdout) == (0, "area(r) returns 3.14 * r * r.\n")
    assert CUT_OFF not in ran.stderr and FILTERED not in ran.stderr


def test_the_step_limit_says_so(workspace: Path, fake: ScriptedModel) -> None:
    (workspace / "lspilot.toml").write_text("[agents.build]\nmax_steps = 2\n")
    fake.push(*[Turn(tool_calls=[("read", {"filePath": "a.py"})]) for _ in range(2)])
    ran = run(workspace, fake)
    assert ran.returncode == 1 and ran.stdout.count("read a.py") == 2
    assert "Stopped after 2 steps (the agent's step limit, max_steps)." in ran.stderr
    fake.assert_done()


def test_a_call_cut_off_at_the_output_limit_is_not_run_and_the_model_is_told_why(
    workspace: Path, fake: ScriptedModel
) -> None:
    # A long write cut off mid-content: "not valid JSON" would send the model to repeat it.
    cut = '{"filePath": "big.py", "content": "x = 1\\nprint('
    fake.push(
        Turn(tool_calls=[("read", {"filePath": "a.py"}), ("write", cut)], finish_reason="length"),
        Turn(text="I will write it in parts."),
    )
    ran = run(workspace, fake)
    assert (ran.returncode, ran.stdout.splitlines()[-1]) == (0, "I will write it in parts."), ran.stderr
    results = [m["content"] for m in fake.requests[1]["messages"] if m["role"] == "tool"]
    assert "return 3.14 * r * r" in results[0]  # the whole call before it ran
    assert results[1].startswith("Error: your answer reached the output limit in the middle of this call")
    assert f"({len(cut)} characters of arguments came)" in results[1]
    assert not (workspace / "big.py").exists()
