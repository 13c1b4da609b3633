"""The `lspilot` command line as a user meets it: exit codes and one-line messages, no tracebacks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from daemon.config import ConfigError
from daemon.scripted_model import ScriptedModel, Turn
from daemon.store import Store

from .conftest import LSPILOT


def lspilot(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LSPILOT, *argv], cwd=root, capture_output=True, text=True, timeout=120, check=False, env=os.environ
    )


def test_a_damaged_database_is_named_in_one_line(empty_workspace: Path, tmp_path: Path) -> None:
    database = tmp_path / "data" / "lspilot.db"
    database.parent.mkdir(exist_ok=True)  # it holds the workspace's trust record
    database.write_bytes(b"this is not an SQLite database, it only has its name\n" * 40)
    with pytest.raises(ConfigError, match="cannot be used as lspilot's session database"):
        Store(database)
    for argv in (["sessions", "list"], ["run", "hi", "--model", "openai/x"]):
        ran = lspilot(empty_workspace, *argv)
        assert ran.returncode == 1, ran.stderr
        assert ran.stderr.startswith(f"lspilot: {database} cannot be used as lspilot's session database")
        assert "file is not a database" in ran.stderr and "LSPILOT_DATA_DIR" in ran.stderr
        assert "Traceback" not in ran.stderr


def test_a_config_file_that_is_not_utf8_is_named(empty_workspace: Path) -> None:
    (empty_workspace / "lspilot.toml").write_bytes(b'model = "caf\xe9"\n')  # saved as Latin-1
    ran = lspilot(empty_workspace, "run", "hi")
    assert ran.returncode == 1 and "Traceback" not in ran.stderr
    assert ran.stderr.startswith(f"lspilot: {empty_workspace / 'lspilot.toml'}: invalid TOML: not UTF-8 text")


def test_output_cut_short_by_its_reader_ends_quietly(empty_workspace: Path, tmp_path: Path) -> None:
    store = Store(tmp_path / "data" / "lspilot.db")
    for _ in range(3000):  # more than a pipe holds
        store.create_session(empty_workspace.resolve(), title="a session with a fairly long title")
    store.close()
    ran = subprocess.run(
        f"{LSPILOT} sessions list | head -1; echo exit=${{PIPESTATUS[0]}}",
        shell=True,
        executable="/bin/bash",
        cwd=empty_workspace,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.stdout.splitlines()[0].startswith("ses_")
    assert ran.stdout.splitlines()[1] == "exit=141"
    assert ran.stderr == ""


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "hi", "--model", "m/x", "--session", "nope"], "lspilot: no session 'nope'\n"),
        (["run", "hi", "--model", "m/x", "--agent", "nope"], "lspilot: no agent called 'nope'; agents:"),
        (["check-command", "ls", "--agent", "nope"], "lspilot: no agent called 'nope'; agents: build,"),
        (["tool", "read", "{}", "--session", "nope"], "lspilot tool: no session 'nope'\n"),
        # an odd id reached the terminal as it was: nothing to see, or an escape sequence acting
        (["run", "hi", "--model", "m/x", "--session", ""], "lspilot: no session ''\n"),
        (["run", "hi", "--session", "\x1b]0;x\x07"], "lspilot: no session '\\x1b]0;x\\x07'\n"),
        (["tool", "read", "{}", "--session", "a\nb"], "lspilot tool: no session 'a\\nb'\n"),
        (["tool", "raed", "{}"], "lspilot tool: no tool called 'raed'; tools: apply_patch, bash,"),
        # these exited 1 saying "needs its arguments as a JSON object, not list" (or "not valid
        # JSON" for a JSON string), to the model
        (
            ["tool", "read", "[1, 2]"],
            "lspilot tool: the arguments must be a JSON object ('{...}'), not [1, 2]\n",
        ),
        (
            ["tool", "read", '"a.py"'],
            "lspilot tool: the arguments must be a JSON object ('{...}'), not \"a.py\"\n",
        ),
        (
            ["tool", "read", "[" * 100_000],
            "lspilot tool: the arguments are not valid JSON: nested too deeply\n",
        ),
        (["sessions", "show", "nope"], "lspilot sessions show: no session 'nope'\n"),
        (["sessions", "list", "--root", "missing"], "lspilot: the workspace "),
        (
            ["lsp", "definitoin", "a.py"],
            "lspilot lsp: no operation 'definitoin'; operations: goToDefinition,",
        ),
        (["servers", "install", "nope"], "lspilot servers install: unknown language server 'nope'; known:"),
        # these listed everything, the id or names ignored
        (["sessions", "list", "ses_1"], "lspilot sessions list: takes no session id (sessions show ID"),
        (["servers", "status", "clangd"], "lspilot servers status: takes no server names (servers install"),
    ],
)
def test_an_argument_naming_nothing_there_is_a_usage_error(
    empty_workspace: Path, argv: list[str], message: str
) -> None:
    # Some of these exited 1 (no session or agent for `run`, the tool's model-worded error for an
    # unknown tool or lsp operation), some 2 (`tool --session`, `sessions show`): all are 2 now,
    # as argparse's own usage errors, before anything runs.
    ran = lspilot(empty_workspace, *argv)
    assert (ran.returncode, ran.stdout) == (2, "")
    assert ran.stderr.startswith(message) and len(ran.stderr.splitlines()) == 1, ran.stderr


def test_sessions_list_and_show_do_not_let_a_session_act_on_the_terminal(
    empty_workspace: Path, tmp_path: Path
) -> None:
    # A title from a prompt (`cat build.log | lspilot run -`) or an answer holding an escape
    # sequence retitled the terminal when listed or shown; lspilot run already showed them as \x1b.
    store = Store(tmp_path / "data" / "lspilot.db")
    session = store.create_session(empty_workspace.resolve(), title="log \x1b]0;pwned\x07 line")
    store.add_part(store.add_message(session, "assistant", "turn"), "text", "\x1b[2Jcleared\tand tab")
    store.close()
    listed = lspilot(empty_workspace, "sessions", "list").stdout
    assert listed.endswith("build    log \\x1b]0;pwned\\x07 line\n") and "\x1b" not in listed
    shown = lspilot(empty_workspace, "sessions", "show", session).stdout
    assert "\\x1b[2Jcleared\tand tab" in shown and "\x1b" not in shown
    exported = lspilot(empty_workspace, "sessions", "export", session, "--format", "markdown").stdout
    assert "\x1b[2Jcleared\tand tab" in exported  # a file gets it as it is


def test_sessions_show_without_an_id_says_what_is_missing(empty_workspace: Path) -> None:
    ran = lspilot(empty_workspace, "sessions", "show")
    assert (ran.returncode, ran.stderr) == (
        2,
        "lspilot sessions show: name a session (see `lspilot sessions list`)\n",
    )


# `lspilot` itself, then what is left when it returns: its threads, and every module imported
# while the interpreter shuts down.
EXIT_PROBE = """
import os, sys, threading
from daemon import cli
code = cli.main(sys.argv[1:])
print("threads left:", sorted(t.name for t in threading.enumerate()), file=sys.stderr)
def imports(event, args):
    if event == "import":
        os.write(2, f"imported at exit: {args[0]}\\n".encode())
sys.addaudithook(imports)
sys.exit(code)
"""


def test_run_exits_promptly_leaving_no_thread_and_no_client_open(
    empty_workspace: Path, fake: ScriptedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `lspilot run` once hung at exit: litellm's clients, left open on the model thread's loop,
    # were finalized while the interpreter shut down, one importing a module as it did.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    fake.turns.extend(Turn(text=f"answer {n}") for n in range(3))
    command = [sys.executable, "-c", EXIT_PROBE, "run", "hi", "--model", "openai/scripted"]
    for n in range(3):
        ran = subprocess.run(
            [*command, "--api-base", fake.api_base],
            cwd=empty_workspace,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env=os.environ,
        )
        assert (ran.returncode, ran.stdout) == (0, f"answer {n}\n"), ran.stderr
        assert "threads left: ['MainThread']" in ran.stderr
        assert "imported at exit" not in ran.stderr


def test_a_root_that_is_no_folder_and_an_empty_prompt_are_refused(
    empty_workspace: Path, tmp_path: Path
) -> None:
    # Both ran a turn: in a session of a workspace that does not exist, or on a prompt of nothing.
    (empty_workspace / "a.py").write_text("x = 1\n")
    for root, what in ((tmp_path / "nope", "does not exist"), (empty_workspace / "a.py", "is not a folder")):
        for argv in (["run", "hi", "--model", "openai/x"], ["tool", "read", '{"filePath": "a.py"}']):
            ran = lspilot(empty_workspace, *argv, "--root", str(root))
            assert (ran.returncode, ran.stderr) == (
                2,
                f"lspilot: the workspace {root} {what}: give a project folder (--root DIR)\n",
            )
    ran = lspilot(empty_workspace, "run", " \n", "--model", "openai/x")
    assert (ran.returncode, ran.stderr) == (
        2,
        "lspilot run: the prompt is empty; say what the agent should do\n",
    )
    assert not (tmp_path / "data" / "lspilot.db").exists()  # no session was made


def test_run_dash_reads_the_prompt_from_stdin(
    empty_workspace: Path, fake: ScriptedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `git diff | lspilot run -` sent the model the prompt "-", and nothing of the diff.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    fake.turns.append(Turn(text="read it"))
    argv = [LSPILOT, "run", "-", "--model", "openai/scripted", "--api-base", fake.api_base]

    def run(piped: bytes) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            argv, cwd=empty_workspace, input=piped, capture_output=True, timeout=120, check=False
        )

    ran = run(b"why does this fail?\n+ print('caf\xe9')\n")  # not all UTF-8: kept as the tools show it
    assert (ran.returncode, ran.stdout) == (0, b"read it\n"), ran.stderr
    [user] = [m["content"] for m in fake.requests[-1]["messages"] if m["role"] == "user"]
    assert user == "why does this fail?\n+ print('caf\\xe9')\n"
    empty = run(b"")
    assert (empty.returncode, empty.stderr) == (
        2,
        b"lspilot run: the prompt is empty; say what the agent should do\n",
    )


def test_run_stops_when_its_reader_goes_away(
    empty_workspace: Path, fake: ScriptedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `lspilot run ... | head -1` went on with the turn after head had gone, writing a "listener
    # failed" traceback on stderr for every event, and exited 0.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    os.mkfifo(empty_workspace / "go")  # the command waits until the reader has gone
    wait = {"command": "cat go", "description": "Wait"}
    fake.turns.extend([Turn(text="first line\n", tool_calls=[("bash", wait)]), Turn(text="more\n" * 50)])
    argv = [LSPILOT, "run", "hi", "--yes", "--model", "openai/scripted", "--api-base", fake.api_base]
    proc = subprocess.Popen(argv, cwd=empty_workspace, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline() == b"first line\n"
    proc.stdout.close()
    (empty_workspace / "go").write_text("")
    assert proc.wait(timeout=120) == 141
    assert proc.stderr.read() == b""
    proc.stderr.close()


def test_run_stops_when_its_output_cannot_be_written(
    empty_workspace: Path, fake: ScriptedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `lspilot run ... > file` on a full disk wrote a traceback for every event, then ended in one.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    fake.turns.append(Turn(text="an answer\n"))
    argv = [LSPILOT, "run", "hi", "--model", "openai/scripted", "--api-base", fake.api_base]
    with open("/dev/full", "wb") as full:  # a disk that is always full
        ran = subprocess.run(
            argv,
            cwd=empty_workspace,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    assert (ran.returncode, ran.stderr) == (
        1,
        "lspilot run: cannot write the output (No space left on device); the turn was stopped\n",
    )


def test_a_log_folder_that_cannot_be_made_is_one_warning_not_a_traceback(
    empty_workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)  # it holds the workspace's trust record
    (data / "logs").write_text("a file where the log folder goes\n")
    ran = lspilot(empty_workspace, "sessions", "list")
    assert (ran.returncode, ran.stdout) == (0, "")
    logfile = data / "logs" / "lspilot.log"
    assert (
        ran.stderr == f"lspilot: cannot write the log file {logfile} (File exists): logging to stderr only\n"
    )
    monkeypatch.setenv("LSPILOT_DATA_DIR", str(data / "logs"))  # the data folder itself is a file
    ran = lspilot(empty_workspace, "sessions", "list")
    assert ran.returncode == 1 and "Traceback" not in ran.stderr, ran.stderr
    assert "cannot be used as lspilot's session database" in ran.stderr.splitlines()[1]
