"""The bash analysis of commands run elsewhere (ssh, containers, pods) or later (tmux, screen,
at, batch, crontab), of ``BASH_CMDS``/``BASH_ALIASES``; and the coverage of all the tables.

Rows as in ``test_shell.TABLE``: a command, the ``external_directory`` patterns it must raise and
its ``bash`` (pattern, always) pairs, on the tree of ``test_shell.make_tree``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .test_shell import TABLE as BASE
from .test_shell import Row, check_row, make_tree
from .test_shell_runners import RUNNERS
from .test_shell_variables import VARIABLES
from .test_shell_wrappers import WRAPPERS

REMOTE: list[Row] = [
    # run elsewhere (ssh, containers, pods): what runs there is asked for by its name, its paths
    # are not this machine's, and the place counts as outside; mounts are this machine's paths
    ("ssh host rm -rf /", ["(ssh host)"], [("ssh host rm -rf /", "="), ("rm -rf /", "rm *")]),
    (
        "ssh -i {out}/key host -p 22 'cat /etc/x; ls ../y'",
        ["{out}/*", "(ssh -i {out}/key host -p 22)"],
        [
            ("ssh -i {out}/key host -p 22 'cat /etc/x; ls ../y'", "="),
            ("cat /etc/x", "cat *"),
            ("ls ../y", "ls *"),
        ],
    ),
    ("ssh host <<'END'\nrm -rf /\nEND", ["(ssh host)"], [("ssh host", "="), ("rm -rf /", "rm *")]),
    (
        "echo 'rm -rf /' | ssh host",
        ["(ssh host)", "(script on stdin)"],
        [("echo 'rm -rf /'", "echo *"), ("ssh host", "=")],
    ),
    (
        "ssh -o ProxyCommand='rm ../x' host",
        ["{up}/*", "(ssh -o 'ProxyCommand=rm ../x' host)", "(script on stdin)"],
        [("ssh -o 'ProxyCommand=rm ../x' host", "="), ("rm ../x", "rm *")],
    ),
    (
        "ssh -N -L 8080:localhost:80 host",
        ["(ssh -N -L 8080:localhost:80 host)"],
        [("ssh -N -L 8080:localhost:80 host", "=")],
    ),
    (
        "docker exec -it web rm -rf /",
        ["(docker exec -it web)"],
        [("docker exec -it web rm -rf /", "docker exec -it web rm *"), ("rm -rf /", "rm *")],
    ),
    (
        "docker run --rm -v {out}:/data alpine rm -rf /data",
        ["{out}/*", "(docker run --rm -v {out}:/data alpine)"],
        [
            (
                "docker run --rm -v {out}:/data alpine rm -rf /data",
                "docker run --rm -v {out}:/data alpine rm *",
            ),
            ("rm -rf /data", "rm *"),
        ],
    ),
    (
        "docker run --entrypoint rm alpine -rf /",
        ["(docker run --entrypoint rm alpine)"],
        [("docker run --entrypoint rm alpine -rf /", "="), ("rm -rf /", "rm *")],
    ),
    (
        "docker compose -f {out}/c.yml exec web pytest",
        ["{out}/*", "(docker compose -f {out}/c.yml exec web)"],
        [
            (
                "docker compose -f {out}/c.yml exec web pytest",
                "docker compose -f {out}/c.yml exec web pytest *",
            ),
            ("pytest", "pytest *"),
        ],
    ),
    (
        "kubectl -n prod exec -it web -- rm -rf /",
        ["(kubectl -n prod exec -it web --)"],
        [
            ("kubectl -n prod exec -it web -- rm -rf /", "kubectl -n prod exec -it web -- rm *"),
            ("rm -rf /", "rm *"),
        ],
    ),
    (
        "podman run --mount type=bind,source=..,target=/x img ls",
        ["{up}/*", "(podman run --mount type=bind,source=..,target=/x img)"],
        [
            (
                "podman run --mount type=bind,source=..,target=/x img ls",
                "podman run --mount type=bind,source=..,target=/x img ls *",
            ),
            ("ls", "ls *"),
        ],
    ),
    ("docker ps -a", [], [("docker ps -a", "docker ps *")]),
    # run in a terminal session or later: tmux, screen, at, batch, crontab (jobs run from home)
    ("tmux new -d 'rm -rf ../x'", ["{up}/*"], [("tmux new -d 'rm -rf ../x'", "="), ("rm -rf ../x", "rm *")]),
    ("tmux new-session -d npm test", [], [("tmux new-session -d npm test", "="), ("npm test", "npm test *")]),
    (
        "tmux split-window 'cat x'",
        ["(tmux pane)/x"],
        [("tmux split-window 'cat x'", "="), ("cat x", "cat *")],
    ),
    (
        "tmux send-keys -t s 'rm -rf /' Enter",
        ["/*"],
        [("tmux send-keys -t s 'rm -rf /' Enter", "="), ("rm -rf /", "rm *")],
    ),
    (
        "tmux new -d \\; send-keys 'rm x' C-m",
        ["(tmux pane)/x"],
        [("tmux new -d ';' send-keys 'rm x' C-m", "="), ("rm x", "rm *")],
    ),
    (
        "tmux set-hook -g after-new-window 'run-shell \"rm x\"'",
        ["(tmux pane)/x"],
        [("tmux set-hook -g after-new-window 'run-shell \"rm x\"'", "="), ("rm x", "rm *")],
    ),
    ("tmux ls", [], [("tmux ls", "tmux *")]),
    (
        "tmux set -g default-command 'rm x'",
        ["(tmux pane)/x"],
        [("tmux set -g default-command 'rm x'", "="), ("rm x", "rm *")],
    ),
    (
        "screen -dmS w rm ../x",
        ["{up}/*"],
        [("screen -dmS w rm ../x", "screen -dmS w rm *"), ("rm ../x", "rm *")],
    ),
    (
        "screen -S w -X stuff 'rm x\\n'",
        ["(screen window)/x"],
        [("screen -S w -X stuff 'rm x\\n'", "="), ("rm x", "rm *")],
    ),
    ("screen -r w", [], [("screen -r w", "screen *")]),
    ("at now + 1 hour <<< 'rm ../x'", ["{up}/*"], [("at now + 1 hour", "="), ("rm ../x", "rm *")]),
    ("echo 'rm x' | at now", ["(script on stdin)"], [("echo 'rm x'", "echo *"), ("at now", "=")]),
    ("at -f job.sh now", ["(at -f job.sh)"], [("at -f job.sh now", "=")]),
    ("batch <<< 'rm ../x'", ["{up}/*"], [("batch", "="), ("rm ../x", "rm *")]),
    (
        "crontab <<'END'\nPATH=/opt/bin\n0 5 * * * rm -rf ~/x % input\nEND",
        ["{home}/*"],
        [("crontab", "="), ("PATH=/opt/bin", "="), ("rm -rf ~/x", "rm *")],
    ),
    ("crontab jobs.txt", ["(crontab jobs.txt)"], [("crontab jobs.txt", "=")]),
    ("crontab -l", [], [("crontab -l", "=")]),
    # BASH_CMDS[NAME]=PATH makes NAME run PATH, BASH_ALIASES[NAME]=CODE an alias; set otherwise,
    # every later command is also asked for exactly
    (
        "BASH_CMDS[ls]=/bin/rm; ls -rf x",
        [],
        [
            ("BASH_CMDS[ls]=/bin/rm", "="),
            ("ls -rf x", "="),
            ("/bin/rm -rf x", "/bin/rm *"),
            ("rm -rf x", "rm *"),
        ],
    ),
    (
        "BASH_CMDS[$n]=/bin/rm; ls -rf x",
        [],
        [("BASH_CMDS[$n]=/bin/rm", "="), ("ls -rf x", "ls *"), ("(BASH_CMDS set) ls -rf x", "=")],
    ),
    (
        "BASH_ALIASES[ll]='rm -rf'; ll ../x",
        ["{up}/*"],
        [("BASH_ALIASES[ll]='rm -rf'", "="), ("ll ../x", "="), ("rm -rf ../x", "rm *")],
    ),
    ("BASH_CMDS=([cat]=$X); cat y", [], [("BASH_CMDS=([cat]=$X)", "="), ("cat y", "="), ("$X y", "=")]),
]


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    return make_tree(tmp_path, monkeypatch)


@pytest.mark.parametrize(("command", "outside", "bash"), REMOTE, ids=[row[0][:40] for row in REMOTE])
def test_table(tree: dict[str, Path], command: str, outside: list[str], bash: list[tuple[str, str]]) -> None:
    check_row(tree, command, outside, bash)


TABLE = [*BASE, *WRAPPERS, *VARIABLES, *RUNNERS, *REMOTE]


def test_table_is_large_and_covers_every_wrapper() -> None:
    assert len(TABLE) >= 60
    text = "\n".join(row[0] for row in TABLE)
    for wrapper in (
        "sudo",
        "env",
        "nice",
        "nohup",
        "timeout",
        "time",
        "xargs",
        "-exec",
        "bash -c",
        "sh -c",
        "eval",
        "coproc",
        "busybox",
        "su ",
        "runuser",
        "watch",
        "flock",
        "script",
        "parallel",
        "sg ",
        "newgrp",
        "chroot",
        "unshare",
        "nsenter",
        "fakeroot",
        "setpriv",
        "systemd-run",
        "pkexec",
        "valgrind",
        "xvfb-run",
        "faketime",
        "uv run",
        "uvx",
        "poetry",
        "npx",
        "pnpm exec",
        "yarn exec",
        "bunx",
        "bundle exec",
        "gdb",
        "--args",
        "perf record",
        "strace",
        "ssh",
        "docker exec",
        "docker run",
        "kubectl",
        "tmux new",
        "send-keys",
        "screen",
        "at ",
        "batch",
        "crontab",
        "BASH_CMDS",
    ):
        assert wrapper in text, wrapper
