"""The bash tool end to end: real shells and process trees, the real wrapper, a scripted human."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import psutil
import pytest

from tools import Outcome, Reply, Rule, ToolContext, execute
from tools._shell import analyze
from tools._shell_process import Redactor, choose_shell, secrets
from tools.bash import Bash
from tools.context import MetadataSink

from .conftest import Harness, make_harness

ALLOW_ALL = [Rule("bash", "*", "allow"), Rule("external_directory", "*", "allow")]


def _harness(tmp_path: Path, rules: list[Rule] | None = None, **bash: int) -> Harness:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    harness = make_harness(root, tmp_path / "data", rules)
    harness.registry.register(Bash())
    harness.env.settings = {"tools": {"bash": {"kill_grace_ms": 300, **bash}}}
    return harness


def _args(command: str, **extra: Any) -> dict[str, Any]:
    return {"command": command, "description": "test command", **extra}


async def _call(
    h: Harness, command: str, sink: MetadataSink | None = None, ctx: ToolContext | None = None, **extra: Any
) -> Outcome:
    ctx = ctx or ToolContext(h.env, "call-1", on_metadata=sink)
    return await execute(h.registry, "bash", _args(command, **extra), ctx)


def _gone(pid: int) -> bool:
    """Dead, or a zombie nobody reaps (the container's init may not)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


async def test_asks_outside_first_then_the_commands(tmp_path: Path) -> None:
    h = _harness(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("far away\n")
    h.human.replies = [Reply("once"), Reply("once")]
    outcome = await _call(h, f"cat {outside}/f.txt | tr a-z A-Z")
    assert outcome.error is None and outcome.result is not None
    assert outcome.result.output == "FAR AWAY\n\n(exit code 0)"
    asked = [(r.permission, r.patterns, r.always) for r in h.human.asked]
    assert asked == [
        ("external_directory", [f"{outside.resolve()}/*"], [f"{outside.resolve()}/*"]),
        ("bash", [f"cat {outside}/f.txt", "tr a-z A-Z"], ["cat *", "tr *"]),
    ]


async def test_a_rejected_command_does_not_run(tmp_path: Path) -> None:
    h = _harness(tmp_path)
    outcome = await _call(h, "touch made")
    assert outcome.error is not None and "rejected bash touch made" in outcome.error
    assert outcome.stops_turn and not (h.root / "made").exists()


async def test_always_approves_the_prefix_for_later_calls(tmp_path: Path) -> None:
    h = _harness(tmp_path)
    h.human.replies = [Reply("always")]
    assert (await _call(h, "echo one")).error is None
    outcome = await _call(h, "echo two")
    assert outcome.result is not None and outcome.result.output.startswith("two\n")
    assert len(h.human.asked) == 1 and h.human.asked[0].always == ["echo *"]


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf build",
        '"rm" -rf build',
        "/bin/rm -rf build",
        "sudo rm -rf build",
        "bash -c 'rm -rf build'",
        "PATH=$PATH rm -rf build",
    ],
)
async def test_a_denied_command_cannot_hide(tmp_path: Path, command: str) -> None:
    h = _harness(tmp_path, [*ALLOW_ALL, Rule("bash", "rm *", "deny")])
    (h.root / "build").mkdir()
    outcome = await _call(h, command)
    assert outcome.error is not None and outcome.error.startswith("Permission denied: bash rm -rf build")
    assert (h.root / "build").is_dir() and h.human.asked == []


@pytest.mark.parametrize(
    ("command", "allowed"),
    [
        ("cat {.,.}./secret", "cat *"),
        ("cat ~+/../secret", "cat *"),
        ("dd if=/dev/null of=~/secret", "dd *"),
        ("cd in/../.. && rm secret", "cd *"),
        ("find -P {up} -name secret -delete", "find *"),
        ("bash <<'EOF'\nrm {up}/secret\nEOF", "bash *"),
        ("su -c 'cat {up}/secret'", "su *"),
        ("script -qc 'cat {up}/secret' /dev/null", "script *"),
        ("flock lock cat {up}/secret", "flock *"),
    ],
)
async def test_reaching_outside_is_asked_however_it_is_spelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, allowed: str
) -> None:
    """The workspace's parent holds ``secret``; ``in`` links to ``a/b`` (``in/../..`` is the parent
    for bash, whose cd is logical). The commands are allowed, the outside folder is not."""
    monkeypatch.setenv("HOME", str(tmp_path))
    h = _harness(tmp_path, [Rule("bash", allowed, "allow"), Rule("bash", "rm *", "allow")])
    (h.root / "a" / "b").mkdir(parents=True)
    (h.root / "in").symlink_to("a/b")
    (tmp_path / "secret").write_text("TOPSECRET\n")
    outcome = await _call(h, command.replace("{up}", str(tmp_path)))
    assert outcome.error is not None and "rejected" in outcome.error
    assert [r.permission for r in h.human.asked] == ["external_directory"]
    assert (tmp_path / "secret").read_text() == "TOPSECRET\n"


@pytest.mark.parametrize(
    "command",
    [
        "coproc rm -rf build; wait",
        "{rm,-rf,build}",
        "echo build | xargs -i rm -rf {}",
        "trap 'rm -rf build' EXIT",
        "bash <<< 'rm -rf build'",
        "shopt -s expand_aliases; alias r='rm -rf build'; r",
        "su -c 'rm -rf build'",
        "runuser -u root -- rm -rf build",
        "watch -n 1 rm -rf build",
        "flock lock -c 'rm -rf build'",
        "script -qc 'rm -rf build' /dev/null",
        "parallel rm -rf ::: build",
        "chroot / rm -rf build",
        "echo build | xargs sudo rm -rf",
        "hash -p /bin/rm ls; ls -rf build",
        "BASH_CMDS[ls]=/bin/rm; ls -rf build",
        "uv run rm -rf build",
        "npx rm -rf build",
        "poetry run rm -rf build",
        "gdb --args rm -rf build",
        "ssh host rm -rf build",
        "docker exec web rm -rf build",
        "kubectl -n dev exec web -- rm -rf build",
        "tmux new -d 'rm -rf build'",
        "tmux send-keys 'rm -rf build' Enter",
        "at now <<< 'rm -rf build'",
        "crontab <<< '* * * * * rm -rf build'",
    ],
)
async def test_a_denied_command_cannot_hide_in_code_strings(tmp_path: Path, command: str) -> None:
    h = _harness(tmp_path, [*ALLOW_ALL, Rule("bash", "rm *", "deny")])
    (h.root / "build").mkdir()
    outcome = await _call(h, command)
    assert outcome.error is not None and outcome.error.startswith("Permission denied: bash rm -rf ")
    assert (h.root / "build").is_dir() and h.human.asked == []


@pytest.mark.parametrize(
    ("command", "allowed", "asked"),
    [
        ("uv run touch made", ["uv *"], "bash"),
        ("npx touch made", ["npx *"], "bash"),
        ("ssh host touch made", ["ssh *"], "external_directory"),  # the other machine
        ("docker exec web touch made", ["docker *"], "external_directory"),
        ("tmux new -d 'touch made'", ["tmux *"], "bash"),
        ("at now <<< 'touch made'", ["at *"], "bash"),
        ("BASH_CMDS[ls]=/usr/bin/touch; ls made", ["ls *", "BASH_CMDS*"], "bash"),
    ],
)
async def test_approving_what_runs_a_command_does_not_approve_the_command(
    tmp_path: Path, command: str, allowed: list[str], asked: str
) -> None:
    """A rule for the outer program only (``uv *``, ``ssh *``) leaves what it runs to be asked."""
    h = _harness(tmp_path, [Rule("bash", pattern, "allow") for pattern in allowed])
    outcome = await _call(h, command)
    assert outcome.error is not None and "rejected" in outcome.error
    assert [r.permission for r in h.human.asked] == [asked] and not (h.root / "made").exists()


async def test_git_variables_that_run_programs_are_asked_for(tmp_path: Path) -> None:
    h = _harness(tmp_path, [Rule("bash", "git init *", "allow"), Rule("bash", "git status *", "allow")])
    assert (await _call(h, "git init -q")).error is None
    marker = tmp_path / "ran"
    command = (
        "export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor "
        f"GIT_CONFIG_VALUE_0='touch {marker}'; git status"
    )
    outcome = await _call(h, command)
    assert outcome.error is not None and "rejected" in outcome.error and not marker.exists()
    assert h.human.asked[0].patterns[0].startswith("export GIT_CONFIG_COUNT=1")


@pytest.mark.parametrize(
    "command",
    [
        'read -r PATH <<< "$PWD/bin"; ls',
        'printf -v PATH %s "$PWD/bin"; ls',
        'for PATH in "$PWD/bin"; do ls; done',
        'mapfile -t PATH <<< "$PWD/bin"; ls',
        "declare -n p=PATH; p=$PWD/bin; ls",
        "unset PATH; ls",  # bash then looks in the working directory
    ],
)
async def test_setting_path_other_than_by_assignment_is_asked_for(tmp_path: Path, command: str) -> None:
    allowed = ("ls *", "read *", "printf *", "mapfile *", "declare *", "unset *")
    h = _harness(tmp_path, [Rule("bash", pattern, "allow") for pattern in allowed])
    marker = tmp_path / "ran"
    for folder in (h.root, h.root / "bin"):
        folder.mkdir(exist_ok=True)
        (folder / "ls").write_text(f"#!/bin/sh\ntouch {marker}\n")
        (folder / "ls").chmod(0o755)
    outcome = await _call(h, command)
    assert outcome.error is not None and "rejected" in outcome.error and not marker.exists()


async def test_a_home_set_by_a_loop_is_not_the_home_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "ws"))  # ~/secret would be inside
    h = _harness(tmp_path, [Rule("bash", "*", "allow")])
    (tmp_path / "secret").write_text("TOPSECRET\n")
    outcome = await _call(h, f"for HOME in {tmp_path}; do cat ~/secret; done")
    assert outcome.error is not None and "rejected" in outcome.error
    assert [(r.permission, r.patterns) for r in h.human.asked] == [("external_directory", ["~/secret"])]


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


# -- analysis only: programs that run their arguments (nothing below is run) ------------------------


def _asks(tmp_path: Path, command: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The outside patterns and the (pattern, always) pairs ``command`` raises, ``{up}`` for the
    workspace's parent; analyzed, never run."""
    root = (tmp_path / "ws").resolve()
    root.mkdir(exist_ok=True)
    result = analyze(command, root, root)
    return [p.replace(str(root.parent), "{up}") for p in result.outside], list(dict.fromkeys(result.commands))


@pytest.mark.parametrize(
    ("command", "inner"),
    [
        ("hyperfine 'rm ../x'", "rm ../x"),
        ("hyperfine -N 'rm ../x'", "rm ../x"),
        ("hyperfine --prepare 'rm ../x' ls", "rm ../x"),
        ("hyperfine ls -c 'rm ../x'", "rm ../x"),
        ("hyperfine --conclude 'rm ../x' -s true ls", "rm ../x"),
        ("entr rm ../x", "rm ../x"),
        ("entr -s 'rm ../x'", "rm ../x"),
        ("watchexec -e py -- rm ../x", "rm ../x"),
        ("watchexec -n rm ../x", "rm ../x"),
        ("nodemon --exec 'rm ../x'", "rm ../x"),
        ("nodemon -w src --exec=rm ../x", "rm ../x"),
        ("lldb -- rm ../x", "rm ../x"),
        ("lldb -o 'platform shell rm ../x' ./a.out", "rm ../x"),
        ("rsync -e 'rm ../x' src host:dst", "rm ../x host rsync"),
        ("rsync --rsh='rm ../x' src host:dst", "rm ../x host rsync"),
        ("scp -o ProxyCommand='rm ../x' f host:", "rm ../x"),
        ("sftp -o LocalCommand='rm ../x' host", "rm ../x"),
        ("git -c core.pager='rm ../x' log", "rm ../x"),
        ("git -c core.sshCommand='rm ../x' fetch", "rm ../x"),
        ("git -c Core.Editor='rm ../x' commit", "rm ../x"),
        ("git -c alias.x='!rm ../x' x", "rm ../x"),
        ("git -c diff.external='rm ../x' diff", "rm ../x"),
        ("git -c core.fsmonitor='rm ../x' status", "rm ../x"),
        ("git -c sequence.editor='rm ../x' rebase -i HEAD~2", "rm ../x"),
        ("git -c credential.helper='!rm ../x' push", "rm ../x"),
        ("git -c core.pager='rm ../x' bisect run make", "rm ../x"),
        ("git rebase --exec 'rm ../x' HEAD~3", "rm ../x"),
        ("git submodule foreach --recursive 'rm ../x'", "rm ../x"),
        ("git clone --upload-pack='rm ../x' ../repo", "rm ../x"),
        ("git config core.pager 'rm ../x'", "rm ../x"),
        ("tar --to-command='rm ../x' -xf a.tar", "rm ../x"),
        ("tar -I 'rm ../x' -xf a.tar", "rm ../x"),
        ("tar xIf 'rm ../x' a.tar", "rm ../x"),  # old style: I takes the next word, then f
        ("tar --use-compress-program='rm ../x' -cf a.tar src", "rm ../x"),
        ("tar -xf a.tar --checkpoint=1 --checkpoint-action=exec='rm ../x'", "rm ../x"),
        ("tar -F 'rm ../x' -cML 1 -f a.tar src", "rm ../x"),
        ("zip -T -TT 'rm ../x' a.zip f", "rm ../x"),
        ("zip --unzip-command 'rm ../x' -T a.zip f", "rm ../x"),
        ("nc -l -p 80 -c 'rm ../x'", "rm ../x"),
        ("nc -e 'rm ../x' host 80", "rm ../x"),
        ("ncat --sh-exec 'rm ../x' host 80", "rm ../x"),
        ("ncat --exec='rm ../x' -l 80", "rm ../x"),
        ("sed -e '1e rm ../x' f", "rm ../x"),
        ("sed -n '/a/ { e rm ../x\n p }' f", "rm ../x"),
        ("awk 'BEGIN { system(\"rm ../x\") }'", "rm ../x"),
        ("awk '{ print $1 | \"rm ../x\" }' f", "rm ../x"),
        ("awk 'BEGIN { \"rm ../x\" | getline v }'", "rm ../x"),
        ("vim -c '!rm ../x' f", "rm ../x"),
        ("nvim +':silent !rm ../x' f", "rm ../x"),
        ("vim -c 'r !rm ../x' f", "rm ../x"),
        ("sqlite3 db '.shell rm ../x'", "rm ../x"),
        ("sqlite3 db '.system rm \"../x\"'", "rm ../x"),
        ("sqlite3 db \".once '|rm ../x'\" 'select 1'", "rm ../x"),
        ("sqlite3 -cmd '.shell rm ../x' db", "rm ../x"),
        ("socat TCP-LISTEN:80 EXEC:'rm ../x'", "rm ../x"),
        ("socat - SYSTEM:'rm ../x',pty,stderr", "rm ../x"),
    ],
)
def test_programs_that_run_their_arguments_are_unwrapped(tmp_path: Path, command: str, inner: str) -> None:
    """What they run is asked for by its own name, and its paths are checked, so that a rule
    allowing the outer program (``hyperfine *``, ``git *``) or denying ``rm *`` applies to it."""
    outside, bash = _asks(tmp_path, command)
    assert inner in [pattern for pattern, _ in bash], bash
    assert (inner, "rm *") in bash and "{up}/*" in outside


@pytest.mark.parametrize(
    ("command", "place"),
    [
        ("kubectl run web --image=alpine -- rm -rf /", "(kubectl run web --image=alpine --)"),
        ("kubectl debug -it web --image=busybox -- rm -rf /", "(kubectl debug -it web --image=busybox --)"),
        ("oc rsh web rm -rf /", "(oc rsh web)"),
    ],
)
def test_pods_a_command_starts_are_asked_as_outside(tmp_path: Path, command: str, place: str) -> None:
    outside, bash = _asks(tmp_path, command)
    assert outside == [place] and ("rm -rf /", "rm *") in bash


@pytest.mark.parametrize(
    ("command", "outside", "inner"),
    [
        ("hyperfine -L x $V 'rm {x}'", "'rm {x}'", None),  # {x} is replaced by what $V holds
        ("hyperfine -S python 'print(1)'", None, ("python -c 'print(1)'", "python -c 'print(1)'")),
        ("watchexec --shell=bash 'rm x'", None, ("bash -c 'rm x'", "bash -c 'rm x'")),
        ("watchexec -n -E PATH=/tmp ls", None, ("PATH=/tmp ls", "PATH=/tmp ls")),
        ("watchexec --workdir ../w ls", "{up}/*", ("ls", "ls *")),
        ("lldb -o 'script import os' ./a.out", "'script import os'", ("./a.out", "./a.out *")),
        ("git -c core.hooksPath=hooks commit", "core.hooksPath=hooks", None),
        ("git --config-env=core.pager=PAGER log", "core.pager=PAGER", None),
        ("git -c alias.l='-c core.pager=vim log' l", None, ("vim", "vim *")),
        ("git --exec-path=../bin svn", "{up}/*", None),
        ("gdb ../prog", "{up}/*", None),
    ],
)
def test_what_such_programs_run_is_unknown_or_asked_by_its_name(
    tmp_path: Path, command: str, outside: str | None, inner: tuple[str, str] | None
) -> None:
    found, bash = _asks(tmp_path, command)
    assert outside is None or outside in found, found
    assert inner is None or inner in bash, bash
    assert bash[0][1] == bash[0][0] or command.startswith("gdb")  # the outer one exactly


@pytest.mark.parametrize(
    ("command", "always"),
    [
        ("gdb -p 1234", "gdb *"),
        ("lldb -p 1234", "lldb *"),
        ("nodemon app.js", "nodemon *"),
        ("git -c color.ui=always log", "git -c color.ui=always log"),
        ("git -c pager.log=false log", "git -c pager.log=false log"),
        ("at -l", "at *"),
    ],
)
def test_with_nothing_to_run_the_prefix_is_asked(tmp_path: Path, command: str, always: str) -> None:
    assert _asks(tmp_path, command) == ([], [(command, always)])


def test_rsync_over_ssh_asks_for_the_host(tmp_path: Path) -> None:
    outside, bash = _asks(tmp_path, "rsync -a -e 'ssh -p 2222' src/ user@host:/b/")
    assert outside == ["(ssh -p 2222 user@host)"]
    assert ("ssh -p 2222 user@host rsync", "ssh -p 2222 user@host rsync") in bash


@pytest.mark.parametrize(
    ("command", "outside", "asked"),
    [
        # gdb PROG runs PROG (-ex run, or run typed): asked by its name, its path checked
        ("gdb ./a.out", [], [("gdb ./a.out", "gdb ./a.out *"), ("./a.out", "./a.out *")]),
        ("gdb -q ./a.out core", [], [("gdb -q ./a.out core", "gdb -q ./a.out *"), ("./a.out", "./a.out *")]),
        (
            "gdb -ex run ./a.out",
            [],
            [("gdb -ex run ./a.out", "gdb -ex run ./a.out *"), ("./a.out", "./a.out *")],
        ),
        # -ex is one option (not -e x): what follows its value is the program, checked
        (
            "gdb -ex run -ex bt ../prog",
            ["{up}/*"],
            [("gdb -ex run -ex bt ../prog", "gdb -ex run -ex bt ../prog *"), ("../prog", "../prog *")],
        ),
        # ... and its text is no path
        (
            "gdb -ex 'break ../x.c:3' ./a.out",
            [],
            [
                ("gdb -ex 'break ../x.c:3' ./a.out", "gdb -ex 'break ../x.c:3' ./a.out *"),
                ("./a.out", "./a.out *"),
            ],
        ),
        (
            "gdb -nx ../a.out",
            ["{up}/*"],
            [("gdb -nx ../a.out", "gdb -nx ../a.out *"), ("../a.out", "../a.out *")],
        ),
        # hyperfine -L NAME VALUES and -P NAME MIN MAX: the values are no commands, and each
        # command is analyzed once per value
        (
            "hyperfine -L x a,../b 'rm {x}'",
            ["{up}/*"],
            [("hyperfine -L x a,../b 'rm {x}'", "="), ("rm a", "rm *"), ("rm ../b", "rm *")],
        ),
        (
            "hyperfine -P n 1 2 'sleep {n}' ls",
            [],
            [
                ("hyperfine -P n 1 2 'sleep {n}' ls", "="),
                ("sleep 1", "sleep *"),
                ("sleep 2", "sleep *"),
                ("ls", "ls *"),
            ],
        ),
        (
            "hyperfine -L n 1,2 'rm ../x'",
            ["{up}/*"],
            [("hyperfine -L n 1,2 'rm ../x'", "="), ("rm ../x", "rm *")],
        ),
        ("hyperfine -P n 1 999 'sleep {n}'", ["'sleep {n}'"], [("hyperfine -P n 1 999 'sleep {n}'", "=")]),
    ],
)
def test_gdb_programs_and_hyperfine_parameters(
    tmp_path: Path, command: str, outside: list[str], asked: list[tuple[str, str]]
) -> None:
    assert _asks(tmp_path, command) == (outside, [(p, p if a == "=" else a) for p, a in asked])


@pytest.mark.parametrize(
    ("command", "place"),
    [
        ("nerdctl exec web rm -rf /", "(nerdctl exec web)"),
        ("nerdctl -n k8s.io run --rm alpine rm -rf /", "(nerdctl -n k8s.io run --rm alpine)"),
        ("ctr task exec --exec-id 1 web rm -rf /", "(ctr task exec --exec-id 1 web)"),
        (
            "ctr run --rm docker.io/library/alpine:latest demo rm -rf /",
            "(ctr run --rm docker.io/library/alpine:latest demo)",
        ),
        ("crictl exec -it web rm -rf /", "(crictl exec -it web)"),
        ("crictl exec --name web rm -rf /", "(crictl exec --name web)"),
        ("distrobox enter box -- rm -rf /", "(distrobox enter box --)"),
        ("distrobox-enter --name box -e rm -rf /", "(distrobox-enter --name box -e)"),
        ("toolbox run -c box rm -rf /", "(toolbox run -c box)"),
    ],
)
def test_more_containers_a_command_runs_in_are_asked_as_outside(
    tmp_path: Path, command: str, place: str
) -> None:
    outside, bash = _asks(tmp_path, command)
    assert outside == [place] and ("rm -rf /", "rm *") in bash


@pytest.mark.parametrize(
    ("command", "outside", "asked"),
    [
        # bwrap runs its command here, in a sandbox of this machine's folders: the sources of its
        # binds are checked (not the places in the sandbox), and --setenv PATH is exact
        (
            "bwrap --ro-bind ../src /src --dev /dev rm x",
            ["{up}/*"],
            [
                (
                    "bwrap --ro-bind ../src /src --dev /dev rm x",
                    "bwrap --ro-bind ../src /src --dev /dev rm *",
                ),
                ("rm x", "rm *"),
            ],
        ),
        (
            "bwrap --overlay ../rw ../work /x --unshare-all rm ../y",
            ["{up}/*"],
            [
                (
                    "bwrap --overlay ../rw ../work /x --unshare-all rm ../y",
                    "bwrap --overlay ../rw ../work /x --unshare-all rm *",
                ),
                ("rm ../y", "rm *"),
            ],
        ),
        (
            "bwrap --setenv PATH /opt ls",
            [],
            [("bwrap --setenv PATH /opt ls", "="), ("ls", "ls *"), ("PATH=/opt ls", "=")],
        ),
        # cargo watch -x SUBCOMMAND runs cargo SUBCOMMAND, -s a script, -- a command
        ("cargo watch -x test", [], [("cargo watch -x test", "="), ("cargo test", "cargo test *")]),
        (
            "cargo +nightly watch -s 'rm ../x'",
            ["{up}/*"],
            [("cargo +nightly watch -s 'rm ../x'", "="), ("rm ../x", "rm *")],
        ),
        (
            "cargo watch -x check -s 'rm ../x'",
            ["{up}/*"],
            [
                ("cargo watch -x check -s 'rm ../x'", "="),
                ("cargo check", "cargo check *"),
                ("rm ../x", "rm *"),
            ],
        ),
        (
            "cargo watch -- rm ../x",
            ["{up}/*"],
            [("cargo watch -- rm ../x", "cargo watch -- rm *"), ("rm ../x", "rm *")],
        ),
        ("cargo watch", [], [("cargo watch", "cargo watch *")]),
    ],
)
def test_sandboxes_and_cargo_watch(
    tmp_path: Path, command: str, outside: list[str], asked: list[tuple[str, str]]
) -> None:
    assert _asks(tmp_path, command) == (outside, [(p, p if a == "=" else a) for p, a in asked])


@pytest.mark.parametrize(
    ("command", "outside", "asked"),
    [
        (
            "ncat --lua-exec x.lua host 80",
            ["(ncat --lua-exec x.lua)"],
            [("ncat --lua-exec x.lua host 80", "ncat *")],
        ),
        ("tar -xf a.tar --checkpoint-action=dot", [], [("tar -xf a.tar --checkpoint-action=dot", "tar *")]),
        ('tar -I "$Z" -xf a.tar', ['"$Z"'], [('tar -I "$Z" -xf a.tar', "tar *")]),
        ("tar xfC a.tar ../dir", ["{up}/*"], [("tar xfC a.tar ../dir", "tar *")]),
    ],
)
def test_what_file_commands_run_or_name(
    tmp_path: Path, command: str, outside: list[str], asked: list[tuple[str, str]]
) -> None:
    assert _asks(tmp_path, command) == (outside, asked)


@pytest.mark.parametrize(
    ("command", "outside"),
    [
        # what their own languages run but is not followed is unknown; the files they write or
        # read are checked; what only edits, prints or moves is harmless
        ("sed 's/a/rm x/e' f", ["'s/a/rm x/e'"]),
        ("sed 'e' f", ["'e'"]),
        ("sed 'w ../out' f", ["{up}/*"]),
        ("sed -e 's/a/b/w ../out' f", ["{up}/*"]),
        ("sed '1r ../in' f", ["{up}/*"]),
        ("sed --sandbox 'e rm ../x' f", []),
        ("sed -i 's/foo/bar/g; /^#/d' f", []),
        ("sed ':a;N;$!ba;s/\\n/ /g' f", []),
        ("sed -E 's|/usr|/opt|g' f", []),
        ("awk '{ print > \"../x\" }' f", ["{up}/*"]),
        ('awk \'{ printf("%s", $1) >> "../x" }\' f', ["{up}/*"]),
        ("awk 'BEGIN { while ((getline l < \"../in\") > 0) print l }'", ["{up}/*"]),
        ("awk '{ print > $2 }' f", ["(awk >)"]),
        ("awk '{ system(\"rm \" $1) }' f", ["(awk system())"]),
        ("awk '{ c = \"rm \" $1; c | getline }' f", ["(awk | getline)"]),
        ("gawk -l ext 'BEGIN {}'", ["(awk -l ext)"]),
        ("gawk '@load \"ext\"; BEGIN {}'", ["(awk @load)"]),
        ("awk '/foo|bar/ { if ($1 > 3) print $2 / 2 }' f", []),
        ("vim --cmd 'call system(\"x\")' f", ["'call system(\"x\")'"]),
        ("vim -c '!rm %' f", ["'!rm %'"]),
        ("vim -c 'w ../x' f", ["{up}/*"]),
        ("vim -s keys f", ["(vim -s keys)"]),
        ("vim -c 'set nu' -c '%s/a/b/g' -c wq +42 f", []),
        ("sqlite3 db '.output ../out.txt' 'select 1'", ["{up}/*"]),
        ("sqlite3 db '.load ./x'", ["'.load ./x'"]),
        ("sqlite3 db \"select load_extension('x')\"", ["\"select load_extension('x')\""]),
        ("sqlite3 -safe db '.shell rm ../x'", []),
        ("sqlite3 db .tables 'select 1'", []),
        ("socat - 'SYSTEM:echo a,b; rm -rf /'", ["'SYSTEM:echo a,b; rm -rf /'"]),
        ("socat - EXEC:'ls',path=/opt", ["EXEC:'ls',path=/opt"]),
        ("socat - OPEN:../x,creat", ["{up}/*"]),
        ("socat - ../x", ["{up}/*"]),
        ("socat TCP:host:80 -", []),
    ],
)
def test_what_programs_own_languages_run_or_name(tmp_path: Path, command: str, outside: list[str]) -> None:
    found, bash = _asks(tmp_path, command)
    assert found == outside
    # the program is asked by its prefix: what it runs is asked apart
    assert bash[0][1] == command.split(maxsplit=1)[0] + " *"


@pytest.mark.parametrize(
    "command", ["python -c 'import os'", "perl -e 'print 1'", "node -e 'x()'", "ruby -e 'x'", "python3 -c x"]
)
def test_code_given_to_an_interpreter_is_approved_exactly(tmp_path: Path, command: str) -> None:
    # its code is not analyzed: asked by the interpreter's name, and only ever exactly
    _, bash = _asks(tmp_path, command)
    assert len(bash) == 1 and bash[0][0] == bash[0][1]
