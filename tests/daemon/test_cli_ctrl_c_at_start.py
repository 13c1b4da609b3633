"""Ctrl-C in the first tenth of a second of ``lspilot``: exit 130 without a traceback. The script
pip writes for the ``lspilot`` command imported the whole command line (``daemon.cli``) before
anything of lspilot handled Ctrl-C; ``daemon.entry`` loads it inside a handler."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import LSPILOT

# The installed `lspilot` script, run as it is, sent Ctrl-C (a real SIGINT) as the module named
# first starts to load.
INTERRUPTED = """
import os, runpy, signal, sys
target, script = sys.argv.pop(1), sys.argv.pop(1)
def interrupt(event, args):
    if event == "import" and args[0] == target and not sent:
        sent.append(target)
        print(f"SIGINT as {target} loads", file=sys.stderr, flush=True)
        os.kill(os.getpid(), signal.SIGINT)
sent = []
sys.addaudithook(interrupt)
sys.argv[0] = script
runpy.run_path(script, run_name="__main__")
"""


@pytest.mark.parametrize(
    ("module", "command"),
    [
        ("daemon.cli", "serve"),  # as the script loads the command line
        ("daemon.config", "serve"),
        ("daemon.serve", "serve"),
        ("daemon.redact", "serve"),  # as the command line loads the log's redactor
        ("daemon.run", "run"),  # as `lspilot run` loads the agent loop
    ],
)
def test_ctrl_c_while_the_command_line_loads_exits_130_quietly(
    empty_workspace: Path, module: str, command: str
) -> None:
    ran = subprocess.run(
        [sys.executable, "-c", INTERRUPTED, module, LSPILOT, command],
        cwd=empty_workspace,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (ran.returncode, ran.stdout, ran.stderr) == (130, "", f"SIGINT as {module} loads\n")


OWN = ("daemon", "tools", "lsp_bridge")
LOUD = ("Traceback", "Exception ignored", "Fatal Python error")


def _since_lspilot_loads(stderr: str) -> str | None:
    """stderr from when lspilot's command line began to load (Python lists each module as it has
    loaded it there, with PYTHONPROFILEIMPORTTIME), or None when a Ctrl-C came first: in Python's
    own start (a KeyboardInterrupt there is "Fatal Python error: init_import_site", exit 1), or
    in the lines of the script pip writes before they reach lspilot's entry point. Those are
    Python's and pip's; all after is lspilot's."""
    lines = stderr.splitlines(keepends=True)
    for i, line in enumerate(lines):
        name = line.rsplit("|", 1)[1].strip() if line.startswith("import time:") else ""
        if name.split(".")[0] in OWN and name not in ("daemon", "daemon.entry"):
            return None if any(loud in "".join(lines[:i]) for loud in LOUD) else "".join(lines[i:])
    return None


@pytest.mark.parametrize("argv", [["serve"], ["run"]])
def test_ctrl_c_soon_after_start_exits_130_quietly(empty_workspace: Path, argv: list[str]) -> None:
    # Each start waits on its stdin (the editor's messages, the prompt) until Ctrl-C.
    environment = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    verdicts: dict[float, tuple[int, str]] = {}
    for delay in (0.0, 0.005, 0.01, 0.02, 0.03, 0.05, 0.08, 0.12, 0.2):
        proc = subprocess.Popen(
            [LSPILOT, *argv],
            cwd=empty_workspace,
            env=environment,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        time.sleep(delay)  # when Ctrl-C comes, not a wait for something
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
        since = _since_lspilot_loads(stderr.decode(errors="replace"))
        if since is not None:
            loud = [line for line in since.splitlines() if not line.startswith("import time:")]
            verdicts[delay] = (proc.returncode, "\n".join(loud) if any(w in since for w in LOUD) else "")
    unquiet = {d: v for d, v in verdicts.items() if v != (130, "")}
    assert unquiet == {}
