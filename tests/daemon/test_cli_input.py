"""What `lspilot` takes in from the shell: a prompt piped on stdin, the workspace of `servers`,
and Ctrl-C before anything has run. Real subprocesses of the installed command."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from daemon.scripted_model import ScriptedModel, Turn
from daemon.store import Store

from .conftest import LSPILOT


def piped(root: Path, argv: list[str], stdin: bytes | int) -> subprocess.CompletedProcess[bytes]:
    """``lspilot ARGV`` with ``stdin`` piped in (bytes) or as its stdin (a file descriptor)."""
    with subprocess.Popen(
        [LSPILOT, *argv],
        cwd=root,
        stdin=subprocess.PIPE if isinstance(stdin, bytes) else stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=os.environ,
    ) as proc:
        out, err = proc.communicate(stdin if isinstance(stdin, bytes) else None, timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_run_reads_a_piped_prompt_and_adds_piped_text_to_a_typed_one(
    empty_workspace: Path, fake: ScriptedModel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # `echo "fix the bug" | lspilot run` said "the following arguments are required: prompt", and
    # `git diff | lspilot run "review this"` sent the prompt alone, the diff dropped unseen.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    fake.turns.extend([Turn(text="fixed"), Turn(text="reviewed"), Turn(text="as typed")])
    model = ["--model", "openai/scripted", "--api-base", fake.api_base]

    def prompt_sent() -> str:
        [user] = [m["content"] for m in fake.requests[-1]["messages"] if m["role"] == "user"]
        return user

    ran = piped(empty_workspace, ["run", *model], b"fix the bug\n")
    assert (ran.returncode, ran.stdout) == (0, b"fixed\n"), ran.stderr
    assert prompt_sent() == "fix the bug\n"
    ran = piped(empty_workspace, ["run", "review this", *model], b"+ print('caf\xe9')\n")
    assert (ran.returncode, ran.stdout) == (0, b"reviewed\n"), ran.stderr
    assert prompt_sent() == "review this\n\n+ print('caf\\xe9')\n"
    with open(os.devnull, "rb") as nothing:  # a script's stdin, not a pipe: the prompt as typed
        ran = piped(empty_workspace, ["run", "as typed", *model], nothing.fileno())
    assert (ran.returncode, ran.stdout) == (0, b"as typed\n"), ran.stderr
    assert prompt_sent() == "as typed"
    store = Store(tmp_path / "data" / "lspilot.db")
    titles = [row["title"] for row in store.sessions(empty_workspace.resolve())]
    store.close()
    assert sorted(titles) == ["as typed", "fix the bug", "review this"]  # the typed prompt names it


def test_run_says_what_it_waits_for_on_a_pipe_that_stays_quiet(
    empty_workspace: Path, fake: ScriptedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A program that starts `lspilot run "..."` with a pipe on its stdin and never closes it (as
    # Node's spawn and Python's stdin=PIPE leave it) waited forever, with no word of why.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    fake.turns.extend([Turn(text="reviewed"), Turn(text="fixed")])
    model = ["--model", "openai/scripted", "--api-base", fake.api_base]
    for argv, said, text, sent, answer in [
        (
            ["review this"],
            b"the end of the text piped in",
            b"+ late\n",
            "review this\n\n+ late\n",
            b"reviewed\n",
        ),
        ([], b"the prompt", b"fix it\n", "fix it\n", b"fixed\n"),
    ]:
        with subprocess.Popen(
            [LSPILOT, "run", *argv, *model],
            cwd=empty_workspace,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=os.environ,
        ) as proc:
            assert proc.stdin is not None and proc.stderr is not None
            note = proc.stderr.readline()  # written while lspilot waits: the text comes after it
            assert note == (
                b"lspilot run: waiting for " + said + b" on stdin (nothing came in 3 s); if nothing "
                b"is meant to come, close it or give < /dev/null\n"
            )
            proc.stdin.write(text)
            proc.stdin.close()  # the slow writer ends: what it wrote is read whole
            out, err = proc.stdout.read(), proc.stderr.read()  # pyright: ignore[reportOptionalMemberAccess]
            assert proc.wait(timeout=120) == 0, err
            assert re.fullmatch(rb"session ses_\w+\n", err), err  # the note once, not again
        assert out == answer
        [user] = [m["content"] for m in fake.requests[-1]["messages"] if m["role"] == "user"]
        assert user == sent


def test_run_without_a_prompt_says_how_to_give_one(empty_workspace: Path, tmp_path: Path) -> None:
    leader, follower = pty.openpty()  # a terminal: nothing was piped, and nothing is read
    try:
        ran = piped(empty_workspace, ["run", "--model", "openai/x"], follower)
    finally:
        os.close(follower)
        os.close(leader)
    assert (ran.returncode, ran.stdout) == (2, b"")
    assert ran.stderr == (
        b"lspilot run: say what the agent should do: lspilot run PROMPT, or pipe it in "
        b"(echo PROMPT | lspilot run)\n"
    )
    ran = piped(empty_workspace, ["run", "--model", "openai/x"], b" \n")
    assert (ran.returncode, ran.stderr) == (
        2,
        b"lspilot run: the prompt is empty; say what the agent should do\n",
    )
    assert not (tmp_path / "data" / "lspilot.db").exists()  # no session was made


def test_servers_reads_the_config_of_the_workspace_it_is_given(empty_workspace: Path, tmp_path: Path) -> None:
    # `lspilot servers list` read the config of the current directory only; the project's own
    # servers showed only when run from inside it.
    (empty_workspace / "lspilot.toml").write_text(
        '[lsp.servers.my-lang]\ncommand = ["my-lang-server"]\nextensions = [".my"]\n'
        'language_ids = { ".my" = "mylang" }\n'
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ran = piped(elsewhere, ["servers", "list", "--root", str(empty_workspace)], subprocess.DEVNULL)
    assert ran.returncode == 0, ran.stderr
    assert [line for line in ran.stdout.decode().splitlines() if line.startswith("my-lang ")]
    ran = piped(elsewhere, ["servers", "list"], subprocess.DEVNULL)
    assert ran.returncode == 0 and b"my-lang " not in ran.stdout
    ran = piped(elsewhere, ["servers", "list", "--root", "missing"], subprocess.DEVNULL)
    missing = elsewhere / "missing"
    assert (ran.returncode, ran.stderr.decode()) == (
        2,
        f"lspilot: the workspace {missing} does not exist: give a project folder (--root DIR)\n",
    )


# The `lspilot` command as its script runs it, sent Ctrl-C (a real SIGINT) as it starts importing
# the module named first: while lspilot itself loads, or while litellm does.
INTERRUPTED = """
import os, signal, sys
target = sys.argv.pop(1)
def interrupt(event, args):
    if event == "import" and args[0] == target and not sent:
        sent.append(target)
        os.kill(os.getpid(), signal.SIGINT)
sent = []
sys.addaudithook(interrupt)
from daemon.cli import main
sys.exit(main())
"""


@pytest.mark.parametrize("module", ["tools", "litellm"])
def test_ctrl_c_while_starting_exits_130_without_a_traceback(
    empty_workspace: Path, fake: ScriptedModel, monkeypatch: pytest.MonkeyPatch, module: str
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    fake.turns.append(Turn(text="too late"))
    argv = ["run", "hi", "--model", "openai/scripted", "--api-base", fake.api_base]
    ran = subprocess.run(
        [sys.executable, "-c", INTERRUPTED, module, *argv],
        cwd=empty_workspace,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=os.environ,
    )
    assert (ran.returncode, ran.stdout) == (130, ""), ran.stderr
    # At most one line, saying which session was cancelled; a Ctrl-C while litellm started its
    # request also printed "RuntimeWarning: coroutine ... was never awaited" (two lines).
    assert ran.stderr == "" or re.fullmatch(r"session ses_\w+ \(cancelled\)\n", ran.stderr), ran.stderr
