"""`lspilot demo` end to end, and how `lspilot run` shows a turn in the terminal."""

from __future__ import annotations

import io
import os
import re
import subprocess
from pathlib import Path

from daemon.loop import Event
from daemon.run import Renderer
from tests.conftest import data_dir

from .conftest import LSPILOT


def test_the_demo_runs_a_whole_scripted_turn_offline(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LSPILOT_", "OPENAI_"))}
    env |= {
        "LSPILOT_DATA_DIR": str(data_dir()),
        "LSPILOT_CONFIG_DIR": str(tmp_path / "user-config"),
        "HOME": str(tmp_path),
    }
    done = subprocess.run(
        [LSPILOT, "demo"], check=False, capture_output=True, text=True, env=env, timeout=240
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "SCRIPTED demo model" in out
    # part 1: the language server on its own
    assert "references to Shape across files" in out
    # part 2: references through the lsp tool, the patch, the problem it caused, the fix, the answer
    assert "main.py:8:48" in out  # the caller the lsp tool found
    assert "+def total_area(shapes: list[Shape], scale: float) -> float:" in out
    assert "new problems in main.py:" in out
    assert 'ERROR [8:48] Argument missing for parameter "scale"' in out
    assert '+    return f"{len(shapes)} shapes, total area {total_area(shapes, scale=1.0):.2f}"' in out
    assert "basedpyright reports no new problems" in out
    assert "(end); demo done" in out
    copy = Path(re.search(r"on a copy of the sample in (\S+)", out)[1])  # type: ignore[index]
    assert copy.name == "sample" and not copy.parent.exists()  # the throwaway copy is gone


def _tool_event(metadata: dict[str, object], output: str = "Edited a.py") -> Event:
    data = {"callId": "c1", "tool": "edit", "state": "completed", "title": "a.py", "output": output}
    return Event("tool", "ses", {**data, "metadata": metadata})


def test_edits_show_their_diff_coloured_and_the_problems_they_caused(tmp_path: Path) -> None:
    out = io.StringIO()
    diff = "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = '1'\n"
    problems = {str(tmp_path / "a.py"): {"new": ["ERROR [1:5] bad type (basedpyright)"], "preexisting": 0}}
    Renderer(out, True, tmp_path)(_tool_event({"diff": diff, "diagnostics": problems}))
    shown = out.getvalue()
    assert "\033[31m-x = 1\033[0m" in shown
    assert "\033[32m+x = '1'\033[0m" in shown
    assert "\033[36m@@ -1 +1 @@\033[0m" in shown
    assert "new problems in a.py:" in shown
    assert "\033[31mERROR [1:5] bad type (basedpyright)\033[0m" in shown

    plain = io.StringIO()
    Renderer(plain, False, tmp_path)(_tool_event({"diff": diff}))
    assert "\033[" not in plain.getvalue()
    assert "    +x = '1'\n" in plain.getvalue()


def test_long_diffs_are_cut_and_outputs_show_only_when_asked(tmp_path: Path) -> None:
    diff = "".join(f"+line {n}\n" for n in range(100))
    out = io.StringIO()
    Renderer(out, False, tmp_path)(_tool_event({"diff": diff}))
    assert "+line 39" in out.getvalue() and "+line 40" not in out.getvalue()
    assert "... 60 more lines" in out.getvalue()

    quiet, verbose = io.StringIO(), io.StringIO()
    event = Event(
        "tool", "ses", {"tool": "read", "state": "completed", "title": "a.py", "output": "1\tx = 1"}
    )
    Renderer(quiet, False, tmp_path)(event)
    Renderer(verbose, False, tmp_path, outputs=True)(event)
    assert quiet.getvalue() == "✓ read a.py\n"
    assert verbose.getvalue() == "✓ read a.py\n    1\tx = 1\n"


def test_a_failed_call_shows_its_error_once(tmp_path: Path) -> None:
    # Its first line stood as the title and was printed again below it.
    out = io.StringIO()
    error = "Error: bash echo hi needs approval.\nRun again with --yes."
    Renderer(out, False, tmp_path)(Event("tool", "ses", {"tool": "bash", "state": "error", "output": error}))
    assert out.getvalue() == "✗ bash Error: bash echo hi needs approval.\n    Run again with --yes.\n"
