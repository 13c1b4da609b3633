"""`lspilot` on a full disk or a read-only data dir: one line saying what happened, nothing lost,
and the sessions still listed and shown when they can be read.

Output is written to /dev/full (a disk that is always full). A data dir on a full or read-only
disk is a real small tmpfs or a read-only bind mount, made in a mount namespace of the command's
own (``unshare``), so nothing is left mounted whatever happens."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest

from daemon.store import Store

from .conftest import LSPILOT

FULL = "(No space left on device)"


def lspilot(root: Path, *argv: str, stdout: int | None = None) -> subprocess.CompletedProcess[str]:
    with open("/dev/full", "wb") if stdout is None else open(os.devnull, "wb") as full:
        return subprocess.run(
            [LSPILOT, *argv],
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=full if stdout is None else stdout,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
            env=os.environ,
        )


@pytest.fixture
def session(empty_workspace: Path, tmp_path: Path) -> str:
    """A session of the workspace with an answer in it, as `run` stores one."""
    store = Store(tmp_path / "data" / "lspilot.db")
    session = store.create_session(empty_workspace.resolve(), title="a stored session")
    store.add_part(store.add_message(session, "assistant", "turn"), "text", "an answer\n" * 2000)
    store.close()
    return session


@pytest.mark.parametrize(
    "argv",
    [
        ["sessions", "list"],
        ["sessions", "show", "{session}"],
        ["sessions", "export", "{session}"],
        ["sessions", "export", "{session}", "--format", "markdown"],
        ["servers", "list"],
    ],
)
def test_output_to_a_full_disk_is_one_line(empty_workspace: Path, session: str, argv: list[str]) -> None:
    # Each ended in "OSError: [Errno 28] No space left on device" and its traceback.
    ran = lspilot(empty_workspace, *(a.format(session=session) for a in argv))
    command = " ".join(argv[:2] if argv[0] == "sessions" else argv[:1])
    assert (ran.returncode, ran.stderr) == (1, f"lspilot {command}: cannot write the output {FULL}\n")


def test_a_tool_whose_output_cannot_be_written_says_it_ran(
    empty_workspace: Path, session: str, tmp_path: Path
) -> None:
    # The edit was made and stored, and then only a traceback said anything.
    (empty_workspace / "notes.txt").write_text("x 1\n")
    for json_output in ([], ["--json"]):
        ran = lspilot(empty_workspace, "tool", "read", '{"filePath": "notes.txt"}', *json_output)
        assert (ran.returncode, ran.stderr) == (
            1,
            f"lspilot tool: read ran, but its output cannot be written {FULL}\n",
        )
    read = ["tool", "read", '{"filePath": "notes.txt"}', "--session", session]
    assert lspilot(empty_workspace, *read, stdout=subprocess.DEVNULL).returncode == 0
    edit = '{"filePath": "notes.txt", "oldString": "x 1", "newString": "x 2"}'
    ran = lspilot(empty_workspace, "tool", "edit", edit, "--session", session, "--yes")
    assert (ran.returncode, ran.stderr) == (
        1,
        f"lspilot tool: edit ran, but its output cannot be written {FULL}\n",
    )
    assert (empty_workspace / "notes.txt").read_text() == "x 2\n"
    again = '{"filePath": "notes.txt", "oldString": "x 2", "newString": "x 3"}'
    ran = lspilot(
        empty_workspace, "tool", "edit", again, "--session", session, "--yes", stdout=subprocess.DEVNULL
    )
    assert ran.returncode == 0, ran.stderr  # the session's read time of notes.txt was kept by the edit
    assert (empty_workspace / "notes.txt").read_text() == "x 3\n"


def test_a_log_file_on_a_full_disk_is_dropped_saying_so_once(empty_workspace: Path, tmp_path: Path) -> None:
    # Every record logged printed "--- Logging error ---" and a traceback on stderr.
    logs = tmp_path / "data" / "logs"
    logs.mkdir(parents=True)
    (logs / "lspilot.log").symlink_to("/dev/full")
    (empty_workspace / "notes.txt").write_text("hello\n")
    ran = lspilot(empty_workspace, "-v", "tool", "read", '{"filePath": "notes.txt"}', stdout=subprocess.PIPE)
    assert ran.returncode == 0 and "hello" in ran.stdout
    assert "Logging error" not in ran.stderr and "Traceback" not in ran.stderr, ran.stderr
    said = [line for line in ran.stderr.splitlines() if "log file" in line]
    assert said == [
        f"lspilot: cannot write the log file {logs / 'lspilot.log'} {FULL}: logging to stderr only"
    ]


def confined(mount: str, argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``lspilot ARGV`` in a mount namespace of its own, after the shell command ``mount``."""
    ran = subprocess.run(
        ["unshare", "--map-root-user", "--mount", "sh", "-c", f'{mount} && exec "$@"', "sh", LSPILOT, *argv],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=os.environ,
    )
    if "unshare:" in ran.stderr or "mount:" in ran.stderr:
        pytest.skip(f"no mount namespace here: {ran.stderr.strip()}")
    return ran


def test_a_read_only_data_dir_is_said_and_its_sessions_still_shown(
    empty_workspace: Path, session: str, tmp_path: Path
) -> None:
    # Every command said "cannot be used as lspilot's session database (unable to open database
    # file): move it away if it is damaged, ...", sessions list and show too.
    data = tmp_path / "data"
    read_only = f"mount -o bind,ro {shlex.quote(str(data))} {shlex.quote(str(data))}"
    logs = f"lspilot: cannot write the log file {data / 'logs' / 'lspilot.log'} (Read-only file system): "
    listed = confined(read_only, ["sessions", "list"], empty_workspace)
    assert (listed.returncode, listed.stderr) == (0, logs + "logging to stderr only\n")
    assert listed.stdout.startswith(session) and listed.stdout.endswith("a stored session\n")
    shown = confined(read_only, ["sessions", "show", session], empty_workspace)
    assert shown.returncode == 0 and "an answer" in shown.stdout
    ran = confined(read_only, ["run", "hi", "--model", "openai/x"], empty_workspace)
    assert (ran.returncode, ran.stdout) == (1, "")
    assert ran.stderr.splitlines()[1:] == [
        f"lspilot: cannot write the session database {data / 'lspilot.db'}: {data} is on a read-only "
        "file system; set LSPILOT_DATA_DIR to a folder lspilot can write (sessions list and show "
        "read it as it is)"
    ]


def test_a_data_dir_on_a_full_disk_is_said_and_its_sessions_still_shown(
    empty_workspace: Path, session: str, tmp_path: Path
) -> None:
    data, copy = tmp_path / "data", tmp_path / "copy"
    subprocess.run(["cp", "-a", str(data), str(copy)], check=True)
    quoted = shlex.quote(str(data))
    full = (
        f"mount -t tmpfs -o size=1m tmpfs {quoted} && cp -a {shlex.quote(str(copy))}/. {quoted} "
        f"&& {{ dd if=/dev/zero of={quoted}/filler bs=4k 2>/dev/null; true; }}"
    )
    listed = confined(full, ["sessions", "list"], empty_workspace)
    assert (listed.returncode, listed.stderr) == (0, "")
    assert listed.stdout.startswith(session) and listed.stdout.endswith("a stored session\n")
    ran = confined(full, ["run", "hi", "--model", "openai/x"], empty_workspace)
    assert (ran.returncode, ran.stdout) == (1, "")
    assert ran.stderr.splitlines() == [
        f"lspilot: cannot write the session database {data / 'lspilot.db'}: its disk is full; free some "
        "space, or set LSPILOT_DATA_DIR to use another place (sessions list and show read it as it is)"
    ]
