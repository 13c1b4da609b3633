"""The bash analysis of programs that run their arguments (benchmarks, watchers, debuggers, git,
tar, rsync, pods, containers, sandboxes): what they run is asked for by its own name, and a
place it runs in elsewhere counts as outside. Analysis only: nothing here is run."""

from __future__ import annotations

from pathlib import Path

import pytest

from .bash_helpers import _asks


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
        ("rg --pre 'rm ../x' pattern src", "rm ../x"),  # run on each file searched
        ("rg -n --pre='rm ../x' pattern", "rm ../x"),
        ("sort --compress-program='rm ../x' -o out f", "rm ../x"),
    ],
)
def test_programs_that_run_their_arguments_are_unwrapped(tmp_path: Path, command: str, inner: str) -> None:
    """What they run is asked for by its own name, and its paths are checked, so that a rule
    allowing the outer program (``hyperfine *``, ``git *``) or denying ``rm *`` applies to it."""
    outside, bash = _asks(tmp_path, command)
    assert inner in [pattern for pattern, _ in bash], bash
    assert (inner, "rm *") in bash and "{up}/*" in outside


@pytest.mark.parametrize(
    "command",
    [
        "mapfile -C 'rm ../x' -c 1 lines < f",
        "readarray -t -C'rm ../x' lines < f",
        "compgen -C 'rm ../x' w",
    ],
)
def test_builtins_running_a_callback_are_unwrapped(tmp_path: Path, command: str) -> None:
    """The callback is run with arguments of its own (an index and a line read, the words to
    complete): asked for as ``CALLBACK "$@"``."""
    outside, bash = _asks(tmp_path, command)
    assert ('rm ../x "$@"', "rm *") in bash, bash
    assert outside == ["{up}/*", '"$@"']


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
