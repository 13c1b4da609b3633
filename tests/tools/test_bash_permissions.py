"""The bash tool's permissions end to end: what is asked and in which order, and that a denied or
rejected command does not run however it is spelled; real shells, a scripted human."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import Reply, Rule

from .bash_helpers import ALLOW_ALL, _call, _harness


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


async def test_always_for_an_exact_command_approves_that_command_only(tmp_path: Path) -> None:
    h = _harness(tmp_path)
    h.human.replies = [Reply("always"), Reply("reject", "no")]
    assert (await _call(h, "git --no-pager log -- '*.py'")).error is None  # no prefix: exactly
    assert h.human.asked[0].always == ["git --no-pager log -- '\\*.py'"]
    outcome = await _call(h, "git --no-pager log -- 'x.py' --output=y.py")
    assert outcome.error is not None and outcome.error.startswith("The user rejected bash")
    assert (await _call(h, "git --no-pager log -- '*.py'")).error is None and len(h.human.asked) == 2


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf build",
        '"rm" -rf build',
        "/bin/rm -rf build",
        "sudo rm -rf build",
        "bash -c 'rm -rf build'",
        "PATH=$PATH rm -rf build",
        "r\\\nm -rf build",  # a line continuation inside the word
        "echo \\ #x; rm -rf build",  # an escaped blank starts no comment
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


async def test_always_for_a_value_known_at_run_time_approves_that_text_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ls $HOME/*`` is asked as the text ``$HOME/*``; its "always" must not become the wildcard
    ``$HOME/*``, which also matched ``$HOME/.ssh/id_rsa``."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n")
    monkeypatch.setenv("HOME", str(home))
    h = _harness(tmp_path, [Rule("bash", "*", "allow")])
    h.human.replies = [Reply("always")]
    assert (await _call(h, "ls $HOME/*")).error is None
    assert [(r.patterns, r.always) for r in h.human.asked] == [(["$HOME/*"], ["$HOME/\\*"])]
    outcome = await _call(h, "cat $HOME/.ssh/id_rsa")
    assert outcome.error is not None and "rejected external_directory $HOME/.ssh/id_rsa" in outcome.error
    assert (await _call(h, "ls $HOME/*")).error is None and len(h.human.asked) == 2


async def test_always_for_an_outside_folder_approves_that_folder(tmp_path: Path) -> None:
    """A folder named outright is approved as a folder (later commands in it run unasked), by its
    name: a folder called ``a*b`` does not approve ``axb``."""
    h = _harness(tmp_path, [Rule("bash", "*", "allow")])
    for name in ("other", "a*b", "axb"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "f.txt").write_text(f"in {name}\n")
    h.human.replies = [Reply("always"), Reply("always")]
    assert (await _call(h, "ls ../other/")).error is None
    assert (await _call(h, f"cat '{tmp_path}/a*b/f.txt'")).error is None
    assert [(r.patterns, r.always) for r in h.human.asked] == [
        ([f"{tmp_path}/other/*"], [f"{tmp_path}/other/*"]),
        ([f"{tmp_path}/a*b/*"], [f"{tmp_path}/a\\*b/*"]),
    ]
    outcome = await _call(h, f"cat {tmp_path}/other/f.txt")
    assert outcome.result is not None and outcome.result.output.startswith("in other\n")
    outcome = await _call(h, f"cat {tmp_path}/axb/f.txt")
    assert outcome.error is not None and f"rejected external_directory {tmp_path}/axb/*" in outcome.error
