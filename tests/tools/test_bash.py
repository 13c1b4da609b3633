"""The bash tool end to end: real shells and process trees, the real wrapper; exit codes, output,
timeouts and aborts, redaction of credentials, and the tool's settings."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tools import Reply, Rule, ToolContext, execute
from tools._shell_process import GroupGuard, Redactor, choose_shell, secrets

from .bash_helpers import ALLOW_ALL, _args, _call, _gone, _harness


async def test_exit_codes_signals_and_merged_stderr(tmp_path: Path) -> None:
    h = _harness(tmp_path, ALLOW_ALL)
    outcome = await _call(h, "echo out; echo err >&2; echo again; exit 3")
    assert outcome.result is not None
    assert outcome.result.output == "out\nerr\nagain\n\n(exit code 3)"
    assert outcome.result.metadata["exit"] == 3 and outcome.result.metadata["timedOut"] is False
    outcome = await _call(h, "kill -KILL $$")
    assert (
        outcome.result is not None
        and outcome.result.output == "(no output)\n\n(terminated by signal SIGKILL)"
    )
    outcome = await _call(h, "cat; echo after")  # stdin is closed: cat sees EOF at once
    assert outcome.result is not None and outcome.result.output == "after\n\n(exit code 0)"


async def test_workdir(tmp_path: Path) -> None:
    h = _harness(tmp_path, [Rule("bash", "*", "allow")])
    outcome = await _call(h, "pwd", workdir="src")
    assert outcome.result is not None and outcome.result.output.startswith(f"{h.root / 'src'}\n")
    h.human.replies = [Reply("reject", "stay inside")]
    outcome = await _call(h, "pwd", workdir=str(tmp_path))
    assert outcome.error is not None and "stay inside" in outcome.error
    assert h.human.asked[0].patterns == [f"{tmp_path.resolve()}/*"]
    outcome = await _call(h, "pwd", workdir="missing")
    assert outcome.error == "workdir missing is not an existing directory."
    outcome = await _call(h, "pwd", workdir="a\0b")  # a ValueError in lspilot
    assert outcome.error == "'a\\x00b' is no path: it holds a NUL character (\\0)."


async def test_a_command_holding_a_nul_is_refused(tmp_path: Path) -> None:
    # Nothing can run it (exec refuses a NUL in an argument): the analysis failed as a fault.
    h = _harness(tmp_path, ALLOW_ALL)
    outcome = await _call(h, "cat a\0b")
    assert outcome.error == "The command holds a NUL character (\\0), which no command line can carry."


async def test_output_streams_while_the_command_runs(tmp_path: Path) -> None:
    """The command waits for a file that only the metadata sink creates, after seeing "ready":
    without streaming it would wait until the timeout."""
    h = _harness(tmp_path, ALLOW_ALL)
    seen: list[str] = []

    def sink(title: str | None, metadata: dict[str, Any]) -> None:
        seen.append(metadata["output"])
        if "ready" in metadata["output"]:
            (h.root / "go").touch()

    command = "echo ready; while [ ! -f go ]; do sleep 0.05; done; echo finished"
    outcome = await _call(h, command, sink, timeout=60_000)
    assert outcome.result is not None and outcome.result.metadata["timedOut"] is False
    assert outcome.result.output == "ready\nfinished\n\n(exit code 0)"
    assert seen[0] == "ready\n"


@pytest.mark.parametrize(("trap", "stopped"), [("", "SIGTERM"), ("trap '' TERM;", "SIGKILL")])
async def test_timeout_kills_the_whole_tree(tmp_path: Path, trap: str, stopped: str) -> None:
    h = _harness(tmp_path, ALLOW_ALL)
    command = f"({trap} exec sleep 300) & echo $! > grandchild.pid; echo waiting; wait"
    outcome = await _call(h, command, timeout=1000)
    assert outcome.result is not None
    meta = outcome.result.metadata
    assert meta["timedOut"] is True and meta["stopped"] == stopped and meta["timeout"] == 1000
    assert outcome.result.output.startswith("waiting\n\n(timed out after 1000 ms:")
    assert "call it again with a larger timeout" in outcome.result.output
    assert _gone(int((h.root / "grandchild.pid").read_text()))


async def test_output_held_open_by_a_background_job_is_explained(tmp_path: Path) -> None:
    h = _harness(tmp_path, ALLOW_ALL)
    outcome = await _call(h, "sleep 300 & echo $! > bg.pid; exit 4", timeout=1000)
    assert outcome.result is not None
    assert "The shell itself had exited with code 4" in outcome.result.output
    assert _gone(int((h.root / "bg.pid").read_text()))


async def test_a_background_job_with_redirected_output_is_left_running(tmp_path: Path) -> None:
    h = _harness(tmp_path, ALLOW_ALL)
    outcome = await _call(h, "sleep 300 > /dev/null 2>&1 & echo $! > bg.pid; echo started")
    assert outcome.result is not None and outcome.result.output == "started\n\n(exit code 0)"
    pid = int((h.root / "bg.pid").read_text())
    assert not _gone(pid)
    os.kill(pid, signal.SIGKILL)


async def test_abort_stops_the_tree(tmp_path: Path) -> None:
    h = _harness(tmp_path, ALLOW_ALL)
    ctx = ToolContext(h.env, "call-abort")
    updates: list[dict[str, Any]] = []

    def sink(title: str | None, metadata: dict[str, Any]) -> None:
        updates.append(metadata)
        if "started" in metadata["output"]:
            ctx.abort.set()

    ctx.on_metadata = sink
    outcome = await _call(h, "sleep 300 & echo $! > child.pid; echo started; wait", ctx=ctx, timeout=60_000)
    assert outcome.error == "Cancelled by the user." and outcome.stops_turn
    assert updates[-1]["aborted"] is True and updates[-1]["stopped"] == "SIGTERM"
    assert _gone(int((h.root / "child.pid").read_text()))


async def test_huge_output_keeps_the_tail_and_saves_the_whole(tmp_path: Path) -> None:
    h = _harness(tmp_path, ALLOW_ALL)
    outcome = await _call(h, "seq 1 100000; echo 'error: the last line' >&2; exit 1")
    assert outcome.result is not None
    output, meta = outcome.result.output, outcome.result.metadata
    assert output.endswith("99999\n100000\nerror: the last line\n\n(exit code 1)")
    assert output.startswith("... ") and "earlier lines" in output and "output truncated" not in output
    kept = output.split("\n\n", 1)[1].rsplit("\n\n", 1)[0].split("\n")
    assert len(kept) <= h.env.limits.max_lines and len("\n".join(kept).encode()) <= h.env.limits.max_bytes
    omitted = int(output.split(" ", 2)[1])
    assert omitted + len(kept) == 100_001
    saved = Path(meta["outputPath"]).read_text()
    assert saved == "".join(f"{n}\n" for n in range(1, 100_001)) + "error: the last line\n"
    assert meta["truncated"] is True and Path(meta["outputPath"]).parent == h.env.output_dir


async def test_output_beyond_memory_goes_to_the_file(tmp_path: Path) -> None:
    h = _harness(tmp_path, ALLOW_ALL)
    outcome = await _call(h, "seq 1 1500000", timeout=120_000)  # ~10.9 MB: spilled to its file
    assert outcome.result is not None
    assert outcome.result.output.endswith("1499999\n1500000\n\n(exit code 0)")
    saved = Path(outcome.result.metadata["outputPath"]).read_text()
    assert saved == "".join(f"{n}\n" for n in range(1, 1_500_001))
    assert int(outcome.result.output.split(" ", 2)[1]) + 2000 == 1_500_001


async def test_credentials_are_redacted_everywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-test-0123456789abcdefXYZ"
    monkeypatch.setenv("LSPILOT_TEST_API_KEY", secret)
    h = _harness(tmp_path, ALLOW_ALL)
    updates: list[str] = []
    command = 'echo "key=$LSPILOT_TEST_API_KEY"; seq 1 3000; env | grep LSPILOT_TEST'
    outcome = await _call(h, command, lambda _t, m: updates.append(m["output"]))
    assert outcome.result is not None
    saved = Path(outcome.result.metadata["outputPath"]).read_text()
    assert saved.startswith("key=[LSPILOT_TEST_API_KEY redacted]\n")
    assert "LSPILOT_TEST_API_KEY=[LSPILOT_TEST_API_KEY redacted]" in outcome.result.output
    everything = [outcome.result.output, saved, str(outcome.result.metadata), *updates]
    assert not any(secret in text for text in everything)


def test_which_variables_count_as_credentials() -> None:
    value = "0123456789abcdef"
    named = ["OPENAI_API_KEY", "OPENAIAPIKEY", "ANTHROPIC_KEY", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN"]
    named += ["TOKEN", "DB_PASSWORD", "CLIENT_SECRET", "GOOGLE_CREDENTIALS", "npm_config__auth_token"]
    others = ["MONKEY", "TOKENIZERS_PARALLELISM", "SECRETS_DIR", "PATH", "KEYMAP"]
    found = secrets({name: f"{value}-{name}" for name in [*named, *others]})
    assert sorted(found.values()) == sorted(named)
    assert secrets({"SHORT_TOKEN": "1234567"}) == {}  # shorter values would blot out ordinary output


def test_a_secret_split_across_chunks_is_still_redacted() -> None:
    redactor = Redactor({"abcdefghij": "X_TOKEN"})
    pieces = [redactor.feed(chunk) for chunk in ["start abc", "def", "ghij end ab", "c"]]
    assert pieces == ["start ", "", "[X_TOKEN redacted] end ", ""]
    assert redactor.flush() == "abc"


async def test_timeout_limits_come_from_the_config(tmp_path: Path) -> None:
    h = _harness(tmp_path, ALLOW_ALL, max_timeout_ms=5000)
    outcome = await _call(h, "true", timeout=6000)
    assert outcome.error is not None and "above the maximum of 5000 ms" in outcome.error
    h.env.settings = {"tools": {"bash": {"max_timout_ms": 1}}}
    outcome = await _call(h, "true")
    assert outcome.error is not None and "unknown [tools.bash] setting 'max_timout_ms'" in outcome.error


def test_the_shell_is_bash() -> None:
    bash = choose_shell({"SHELL": "/bin/bash"})
    assert bash == "/bin/bash"
    assert Path(choose_shell({"SHELL": "/usr/bin/zsh"})).name == "bash"  # zsh globs can run code
    assert Path(choose_shell({})).name == "bash"


async def test_many_commands_in_parallel_each_get_their_own_output(tmp_path: Path) -> None:
    h = _harness(tmp_path, ALLOW_ALL)
    outcomes = await asyncio.gather(
        *(execute(h.registry, "bash", _args(f"echo {n}"), ToolContext(h.env, f"c{n}")) for n in range(8))
    )
    assert [o.result.output if o.result else o.error for o in outcomes] == [
        f"{n}\n\n(exit code 0)" for n in range(8)
    ]


async def test_a_command_waits_until_its_group_is_watched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The command ran as soon as it was started, and its group was handed to the guard only once
    # the event loop got back to the call: lspilot killed in between (its loop slowed by a busy
    # thread) left the command running for good.
    h = _harness(tmp_path, ALLOW_ALL)
    seen: list[bool] = []
    watch = GroupGuard.watch

    def slow_watch(guard: GroupGuard, pgid: int) -> None:
        time.sleep(0.5)  # long enough for an unheld command to have run
        seen.append((h.root / "ran").exists())
        watch(guard, pgid)

    monkeypatch.setattr(GroupGuard, "watch", slow_watch)
    outcome = await _call(h, "touch ran; echo $0; cat")
    assert outcome.result is not None, outcome.error
    assert seen == [False] and (h.root / "ran").exists()
    shell = choose_shell(os.environ)
    assert outcome.result.output.startswith(f"{shell}\n")  # the shell, reading /dev/null
