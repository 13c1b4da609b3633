"""A turn's session when the turn is cut short (cancelled mid-stream or mid-tool, the process
killed with -9), what `lspilot run` prints, and sessions that belong to one workspace."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from daemon.config import ConfigError
from daemon.scripted_model import ScriptedModel, Turn
from daemon.store import Store
from daemon.transcript import as_json
from tests.fifos import read_line

from .conftest import LSPILOT
from .looping import Human, make_loop, script, tool_parts, workspace

__all__ = ["workspace"]  # the fixture, shared with the other test_loop_* files


async def test_cancel_mid_stream_keeps_what_streamed(workspace: Path, fake: ScriptedModel) -> None:
    script(fake, Turn(text="partial answer that never ends", stall_after_chunks=2))
    loop, events = make_loop(workspace, fake, Human())
    task = asyncio.create_task(loop.run_turn("go"))
    await asyncio.wait_for(events.until(lambda e: e.type == "text"), 60)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    ends = [e.data for e in events if e.type == "turn.end"]
    assert ends == [{"turnId": ends[0]["turnId"], "stopReason": "cancelled", "error": None}]
    messages = as_json(loop.store, loop.env.session.id)["messages"]
    kinds = [(p["kind"], p.get("text")) for p in messages[-1]["parts"]]
    assert kinds[0][0] == "text" and kinds[0][1] and "partial answer".startswith(kinds[0][1][:4])
    assert kinds[-1] == ("error", "Cancelled by the user.")


async def test_cancel_mid_tool_stops_the_tool(workspace: Path, fake: ScriptedModel) -> None:
    script(fake, Turn(tool_calls=[("question", {"question": "Which one?"})]))

    class SlowHuman(Human):
        async def question(self, question: str, options: list[str]) -> str:
            await asyncio.sleep(3600)
            return ""

    loop, events = make_loop(workspace, fake, SlowHuman())
    task = asyncio.create_task(loop.run_turn("ask me"))
    await asyncio.wait_for(events.until(lambda e: e.type == "tool" and e.data["state"] == "running"), 60)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    [part] = tool_parts(loop)
    assert (part["state"], part["output"]) == ("error", "Error: cancelled by the user.")
    # The session stays usable: the interrupted call is answered in the next request.
    script(fake, Turn(text="fine"))
    assert (await loop.run_turn("never mind")).text == "fine"
    [tool_message] = [m for m in fake.requests[-1]["messages"] if m["role"] == "tool"]
    assert tool_message["content"] == "Error: cancelled by the user."


def test_kill_9_mid_turn_keeps_everything_before_the_cut(workspace: Path, fake: ScriptedModel) -> None:
    script(
        fake,
        Turn(text="Reading.", tool_calls=[("read", {"filePath": "a.py"})]),
        Turn(text="never finished", stall_after_chunks=1),
    )
    command = [LSPILOT, "run", "what is in a.py?", "--root", str(workspace), "--json"]
    proc = subprocess.Popen(
        [*command, "--model", "openai/scripted", "--api-base", fake.api_base],
        stdout=subprocess.PIPE,
        text=True,
        env=os.environ,
    )
    assert proc.stdout is not None
    session = ""
    for line in proc.stdout:
        event = json.loads(line)
        session = event["session_id"]
        if event["type"] == "tool" and event["data"]["state"] == "completed":
            break
    deadline = time.monotonic() + 60
    while len(fake.requests) < 2 and time.monotonic() < deadline:  # the second step is now streaming
        time.sleep(0.05)
    assert len(fake.requests) == 2
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    shown = subprocess.run(
        [LSPILOT, "sessions", "export", session, "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    data = json.loads(shown.stdout)
    roles = [m["role"] for m in data["messages"]]
    assert roles[:2] == ["user", "assistant"]
    first = data["messages"][1]["parts"]
    assert first[0] == {**first[0], "kind": "text", "text": "Reading."}
    assert first[1]["kind"] == "tool" and first[1]["state"] == "completed"
    assert "return 3.14" in first[1]["output"]
    listed = subprocess.run(
        [LSPILOT, "sessions", "list", "--root", str(workspace)], capture_output=True, text=True, check=True
    )
    assert session in listed.stdout and "what is in a.py?" in listed.stdout


def test_run_prints_only_the_answer_on_stdout(workspace: Path, fake: ScriptedModel) -> None:
    # `lspilot run "..." > answer.txt`: retries and errors go to the terminal, not into the file.
    script(fake, Turn(error=500), Turn(text="the answer"), Turn(error=400, error_message="Bad model"))
    command = [LSPILOT, "run", "hi", "--root", str(workspace), "--model", "openai/scripted"]
    command += ["--api-base", fake.api_base]

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command, *extra], check=False, capture_output=True, text=True, env=os.environ, timeout=120
        )

    ran = run()
    assert (ran.returncode, ran.stdout) == (0, "the answer\n")
    assert "retrying in" in ran.stderr
    failed = run("--session", ran.stderr.strip().splitlines()[-1].removeprefix("session "))
    assert (failed.returncode, failed.stdout) == (1, "")
    assert "error: The model call failed: BadRequestError: Bad model" in failed.stderr


def test_run_says_so_when_the_model_ends_without_an_answer(workspace: Path, fake: ScriptedModel) -> None:
    # Only reasoning, or nothing: no output and exit 0, as if the answer were an empty line.
    script(fake, Turn(reasoning="Let me think. Nothing to say."))
    command = [LSPILOT, "run", "hi", "--root", str(workspace), "--model", "openai/scripted"]
    ran = subprocess.run(
        [*command, "--api-base", fake.api_base], check=False, capture_output=True, text=True, timeout=120
    )
    assert (ran.returncode, ran.stdout) == (0, "")
    assert ran.stderr.startswith("(the model ended its turn without a word of answer)\nsession ses_")


async def test_a_session_is_continued_only_in_its_own_workspace(
    workspace: Path, fake: ScriptedModel, tmp_path: Path
) -> None:
    script(fake, Turn(text="first"))
    loop, _ = make_loop(workspace, fake, Human())
    await loop.run_turn("hi")
    other = tmp_path / "other"
    other.mkdir()
    with pytest.raises(ConfigError, match=f"belongs to {workspace}; continue it there"):
        make_loop(other, fake, Human(), session_id=loop.env.session.id)
    make_loop(workspace, fake, Human(), session_id=loop.env.session.id)  # at home it goes on


async def test_a_session_of_a_project_that_was_moved_goes_on_where_it_is_now(
    workspace: Path, fake: ScriptedModel, tmp_path: Path
) -> None:
    # Its root no longer existed, and the session could be continued nowhere: "continue it there".
    script(fake, Turn(text="first"), Turn(text="second"))
    loop, _ = make_loop(workspace, fake, Human())
    await loop.run_turn("hi")
    session = loop.env.session.id
    loop.store.close()
    moved = workspace.rename(tmp_path / "renamed")
    again, _ = make_loop(moved, fake, Human(), session_id=session)
    assert (await again.run_turn("go on")).text == "second"
    assert [m["content"] for m in fake.requests[-1]["messages"][1:]] == ["hi", "first", "go on"]
    assert [s["id"] for s in again.store.sessions(moved)] == [session]
    assert again.store.session_root(session) == moved


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie no longer does)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_or_sighup_mid_tool_stops_its_command_and_keeps_the_session(
    workspace: Path, fake: ScriptedModel, signum: signal.Signals
) -> None:
    # Killed at once (kill, timeout, a closed terminal), lspilot left the command running (in a
    # process group of its own) and the turn unrecorded; Ctrl-C already stopped both.
    os.mkfifo(workspace / "started")  # the command says it runs, and its pid, through it
    wait = {"command": "echo $$ > started; exec sleep 300", "description": "Wait", "timeout": 600000}
    script(fake, Turn(tool_calls=[("bash", wait)]), Turn(text="resumed"))
    command = [LSPILOT, "run", "wait", "--root", str(workspace), "--yes", "--json"]
    model = ["--model", "openai/scripted", "--api-base", fake.api_base]
    proc = subprocess.Popen([*command, *model], stdout=subprocess.PIPE, text=True, env=os.environ)
    assert proc.stdout is not None
    session = json.loads(proc.stdout.readline())["session_id"]
    sleeper = int(read_line(workspace / "started", proc.poll))
    proc.send_signal(signum)
    assert proc.wait(timeout=60) == 128 + signum
    assert not _alive(sleeper)
    export = [LSPILOT, "sessions", "export", session]
    parts = json.loads(subprocess.run(export, capture_output=True, text=True, check=True).stdout)["messages"][
        1
    ]
    outcome = [(p["kind"], p.get("output") or p.get("text")) for p in parts["parts"]]
    assert outcome == [("tool", "Error: cancelled by the user."), ("error", "Cancelled by the user.")]
    again = subprocess.run(
        [LSPILOT, "run", "go on", "--root", str(workspace), "--session", session, *model],
        capture_output=True,
        text=True,
        env=os.environ,
        timeout=120,
        check=False,
    )
    assert (again.returncode, again.stdout) == (0, "resumed\n"), again.stderr  # its lock was released


def test_kill_9_mid_answer_keeps_the_text_the_user_saw(workspace: Path, fake: ScriptedModel) -> None:
    # An answer's reasoning and text were stored when the answer ended: a process killed while
    # it streamed (kill -9, out of memory) lost all of them, though the user had read them.
    answer = "An answer that streams for a while, and then the process is killed."
    thought = "Let me think about it."
    script(fake, Turn(reasoning=thought, text=answer, stall_after_chunks=7))  # role, 3 + 3 pieces
    command = [LSPILOT, "run", "explain", "--root", str(workspace), "--json"]
    proc = subprocess.Popen(
        [*command, "--model", "openai/scripted", "--api-base", fake.api_base],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    shown = session = ""
    for line in proc.stdout:
        event = json.loads(line)
        session = event["session_id"]
        shown += event["data"]["delta"] if event["type"] == "text" else ""
        if shown == answer:
            break
    store = Store(workspace.parent / "data" / "lspilot.db", reading=True)

    def stored() -> list[tuple[str, str]]:
        return [(p["kind"], p["text"]) for p in as_json(store, session)["messages"][-1]["parts"]]

    deadline = time.monotonic() + 60  # saved a second after the last piece (SAVE_EVERY)
    while stored() != [("reasoning", thought), ("text", answer)] and time.monotonic() < deadline:
        time.sleep(0.05)
    store.close()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    exported = subprocess.run(
        [LSPILOT, "sessions", "export", session, "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    [*_, last] = json.loads(exported.stdout)["messages"]
    kept = [(p["kind"], p["text"]) for p in last["parts"]]
    assert (last["role"], kept) == ("assistant", [("reasoning", thought), ("text", answer)])


def test_ctrl_c_says_which_session_to_go_on_with(workspace: Path, fake: ScriptedModel) -> None:
    # A turn that ended printed "session ID" on stderr; a cancelled one printed nothing, and the
    # session had to be looked up to continue it.
    os.mkfifo(workspace / "started")
    wait = {"command": "echo $$ > started; exec sleep 300", "description": "Wait", "timeout": 600000}
    script(fake, Turn(tool_calls=[("bash", wait)]))
    command = [LSPILOT, "run", "wait", "--root", str(workspace), "--yes"]
    model = ["--model", "openai/scripted", "--api-base", fake.api_base]
    proc = subprocess.Popen([*command, *model], stderr=subprocess.PIPE, text=True, env=os.environ)
    read_line(workspace / "started", proc.poll)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    store = Store(workspace.parent / "data" / "lspilot.db")
    [session] = store.sessions(workspace.resolve())
    store.close()
    assert (proc.returncode, stderr) == (130, f"session {session['id']} (cancelled)\n")


async def test_a_session_goes_on_with_the_agent_it_ran_with(workspace: Path, fake: ScriptedModel) -> None:
    # A plan session continued without --agent ran as build: the read-only agent's session could
    # edit files and run commands on its next prompt.
    script(fake, Turn(text="a plan"), Turn(text="more plan"), Turn(text="built"), Turn(text="still build"))
    loop, _ = make_loop(workspace, fake, Human(), agent_name="plan")
    await loop.run_turn("plan it")
    session = loop.env.session.id

    def offered() -> set[str]:
        return {tool["function"]["name"] for tool in fake.requests[-1]["tools"]}

    again, _ = make_loop(workspace, fake, Human(), session_id=session)
    await again.run_turn("go on")
    assert again.agent.name == "plan" and not offered() & {"edit", "write", "bash"}
    switched, _ = make_loop(workspace, fake, Human(), session_id=session, agent_name="build")
    await switched.run_turn("now do it")
    assert {"edit", "bash"} <= offered()
    later, _ = make_loop(workspace, fake, Human(), session_id=session)
    await later.run_turn("and then")
    assert later.agent.name == "build"
    assert [s["agent"] for s in later.store.sessions(workspace)] == ["build"]
    (workspace / "lspilot.toml").write_text('[agents.review]\nprompt = "Review."\n')
    reviewed, _ = make_loop(workspace, fake, Human(), agent_name="review")
    (workspace / "lspilot.toml").unlink()
    with pytest.raises(ConfigError, match="ran with the agent 'review', which the config no longer defines"):
        make_loop(workspace, fake, Human(), session_id=reviewed.env.session.id)


def test_run_shows_control_characters_instead_of_sending_them_to_the_terminal(
    workspace: Path, fake: ScriptedModel
) -> None:
    # A file's escape sequences (in the diff of its edit) and the model's went to the terminal
    # as they were: retitling it, hiding text, writing the clipboard (OSC 52).
    (workspace / "notes.txt").write_text("title: \x1b]0;pwned\x07\n")
    edit = {"filePath": "notes.txt", "oldString": "title:", "newString": "name:"}
    script(
        fake,
        Turn(tool_calls=[("read", {"filePath": "notes.txt"})]),
        Turn(tool_calls=[("edit", edit)]),
        Turn(text="done \x1b]52;c;ZXZpbA==\x07\r\nok"),
    )
    command = [LSPILOT, "run", "rename it", "--root", str(workspace), "--yes", "--model", "openai/scripted"]
    ran = subprocess.run(
        [*command, "--api-base", fake.api_base], check=False, capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0, ran.stderr
    assert "\x1b" not in ran.stdout and "\x07" not in ran.stdout
    assert "    -title: \\x1b]0;pwned\\x07\n    +name: \\x1b]0;pwned\\x07\n" in ran.stdout
    assert ran.stdout.endswith("done \\x1b]52;c;ZXZpbA==\\x07\nok\n")
