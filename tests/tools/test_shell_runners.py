"""The bash analysis of git's code-running variables, the files perl, ruby and git name, and
runners (``uv run``, ``npx``, ``gdb --args``, ...) whose inner command gets its own rules.

Rows as in ``test_shell.TABLE``: a command, the ``external_directory`` patterns it must raise and
its ``bash`` (pattern, always) pairs, on the tree of ``test_shell.make_tree``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .test_shell import Row, check_row, make_tree

RUNNERS: list[Row] = [
    # git's code-running variables, set before a command or exported
    (
        "export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0=x; git status",
        [],
        [
            ("export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0=x", "="),
            (
                "(sets GIT_CONFIG_COUNT GIT_CONFIG_KEY_0 GIT_CONFIG_VALUE_0) "
                "export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0=x",
                "=",
            ),
            ("git status", "git status *"),
        ],
    ),
    ("GIT_EXTERNAL_DIFF=x git diff", [], [("git diff", "git diff *"), ("GIT_EXTERNAL_DIFF=x git diff", "=")]),
    (
        "export LESSOPEN; git log",
        [],
        [("export LESSOPEN", "="), ("(sets LESSOPEN) export LESSOPEN", "="), ("git log", "git log *")],
    ),
    (
        "env GIT_PROXY_COMMAND=x git fetch",
        [],
        [
            ("env GIT_PROXY_COMMAND=x git fetch", "="),
            ("git fetch", "git fetch *"),
            ("GIT_PROXY_COMMAND=x git fetch", "="),
        ],
    ),
    # files perl/ruby -n/-p/-i read or edit; folders git clone/init/worktree add create
    ("perl -pi -e 's/a/b/' ../x", ["{up}/*"], [("perl -pi -e s/a/b/ ../x", "=")]),
    ("ruby -n -e 'puts 1' {out}/f", ["{out}/*"], [("ruby -n -e 'puts 1' {out}/f", "=")]),
    (
        "git clone https://x.test/r.git {out}/r",
        ["{out}/*"],
        [("git clone https://x.test/r.git {out}/r", "git clone *")],
    ),
    ("git clone ../other mine", ["{up}/*"], [("git clone ../other mine", "git clone *")]),
    ("git init ../x", ["{up}/*"], [("git init ../x", "git init *")]),
    ("git -C src init ../../x", ["{up}/*"], [("git -C src init ../../x", "=")]),
    (
        "git worktree add ../wt feature",
        ["{up}/*"],
        [("git worktree add ../wt feature", "git worktree add *")],
    ),
    (
        "curl --output-dir {out} -O https://x.test/f",
        ["{out}/*"],
        [("curl --output-dir {out} -O https://x.test/f", "curl *")],
    ),
    # tools that run their arguments are unwrapped like wrappers: the inner command gets its own
    # rules and path checks, the runner's prefix covers only what it runs
    ("uv run rm -rf ../x", ["{up}/*"], [("uv run rm -rf ../x", "uv run rm *"), ("rm -rf ../x", "rm *")]),
    (
        "uv --directory {out} run rm x",
        ["{out}/*"],
        [("uv --directory {out} run rm x", "uv --directory {out} run rm *"), ("rm x", "rm *")],
    ),
    (
        "uv run --with requests python -m pytest",
        [],
        [
            ("uv run --with requests python -m pytest", "uv run --with requests python -m pytest *"),
            ("python -m pytest", "python -m pytest *"),
        ],
    ),
    ("uv sync", [], [("uv sync", "uv sync *")]),
    (
        "uv run --env-file ../.env pytest",
        ["{up}/*"],
        [("uv run --env-file ../.env pytest", "uv run --env-file ../.env pytest *"), ("pytest", "pytest *")],
    ),
    (
        "uvx --from ruff rm ../x",
        ["{up}/*"],
        [("uvx --from ruff rm ../x", "uvx --from ruff rm *"), ("rm ../x", "rm *")],
    ),
    (
        "poetry -C {out} run rm x",
        ["{out}/*"],
        [("poetry -C {out} run rm x", "poetry -C {out} run rm *"), ("rm x", "rm *")],
    ),
    ("npx -y rm ../x", ["{up}/*"], [("npx -y rm ../x", "npx -y rm *"), ("rm ../x", "rm *")]),
    ("npx -c 'rm ../x'", ["{up}/*"], [("npx -c 'rm ../x'", "="), ("rm ../x", "rm *")]),
    ("npm exec -- rm ../x", ["{up}/*"], [("npm exec -- rm ../x", "npm exec -- rm *"), ("rm ../x", "rm *")]),
    ("pnpm exec -c 'rm ../x'", ["{up}/*"], [("pnpm exec -c 'rm ../x'", "="), ("rm ../x", "rm *")]),
    (
        "pnpm --dir {out} exec rm x",
        ["{out}/*"],
        [("pnpm --dir {out} exec rm x", "pnpm --dir {out} exec rm *"), ("rm x", "rm *")],
    ),
    ("yarn exec rm ../x", ["{up}/*"], [("yarn exec rm ../x", "="), ("rm ../x", "rm *")]),
    ("bunx rm ../x", ["{up}/*"], [("bunx rm ../x", "bunx rm *"), ("rm ../x", "rm *")]),
    ("bun x rm ../x", ["{up}/*"], [("bun x rm ../x", "bun x rm *"), ("rm ../x", "rm *")]),
    ("bundle exec rm ../x", ["{up}/*"], [("bundle exec rm ../x", "bundle exec rm *"), ("rm ../x", "rm *")]),
    (
        "gdb -q --args rm ../x",
        ["{up}/*"],
        [("gdb -q --args rm ../x", "gdb -q --args rm *"), ("rm ../x", "rm *")],
    ),
    (
        "gdb -batch -ex run -ex bt --args ./a.out",
        [],
        [
            ("gdb -batch -ex run -ex bt --args ./a.out", "gdb -batch -ex run -ex bt --args ./a.out *"),
            ("./a.out", "./a.out *"),
        ],
    ),
    (
        "gdb -ex 'shell rm ../x' ./a.out",
        ["{up}/*"],
        [("gdb -ex 'shell rm ../x' ./a.out", "="), ("rm ../x", "rm *"), ("./a.out", "./a.out *")],
    ),
    (
        "gdb -ex 'call system(\"x\")' --args ./a.out",
        ["'call system(\"x\")'"],
        [("gdb -ex 'call system(\"x\")' --args ./a.out", "="), ("./a.out", "./a.out *")],
    ),
    (
        "perf record -o {out}/perf.data rm x",
        ["{out}/*"],
        [("perf record -o {out}/perf.data rm x", "perf record -o {out}/perf.data rm *"), ("rm x", "rm *")],
    ),
    (
        "perf stat --pre 'rm ../x' true",
        ["{up}/*"],
        [("perf stat --pre 'rm ../x' true", "="), ("rm ../x", "rm *")],
    ),
    (
        "strace --user nobody -f rm ../x",
        ["{up}/*"],
        [("strace --user nobody -f rm ../x", "strace --user nobody -f rm *"), ("rm ../x", "rm *")],
    ),
    (
        "git bisect run rm ../x",
        ["{up}/*"],
        [("git bisect run rm ../x", "git bisect run rm *"), ("rm ../x", "rm *")],
    ),
    (
        "git -C {out} bisect run make",
        ["{out}/*"],
        [("git -C {out} bisect run make", "git -C {out} bisect run make *"), ("make", "make *")],
    ),
    (
        "nix develop .#dev -c rm ../x",
        ["{up}/*"],
        [("nix develop '.#dev' -c rm ../x", "nix develop '.#dev' -c rm *"), ("rm ../x", "rm *")],
    ),
    (
        "nix-shell -p hello --run 'rm ../x'",
        ["{up}/*"],
        [("nix-shell -p hello --run 'rm ../x'", "="), ("rm ../x", "rm *")],
    ),
    (
        "conda run -n base --cwd {out} rm x",
        ["{out}/*"],
        [("conda run -n base --cwd {out} rm x", "conda run -n base --cwd {out} rm *"), ("rm x", "rm *")],
    ),
    (
        "pipx run --spec black rm ../x",
        ["{up}/*"],
        [("pipx run --spec black rm ../x", "pipx run --spec black rm *"), ("rm ../x", "rm *")],
    ),
    (
        "mise exec node@20 -- rm ../x",
        ["{up}/*"],
        [("mise exec node@20 -- rm ../x", "mise exec node@20 -- rm *"), ("rm ../x", "rm *")],
    ),
]


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    return make_tree(tmp_path, monkeypatch)


@pytest.mark.parametrize(("command", "outside", "bash"), RUNNERS, ids=[row[0][:40] for row in RUNNERS])
def test_table(tree: dict[str, Path], command: str, outside: list[str], bash: list[tuple[str, str]]) -> None:
    check_row(tree, command, outside, bash)
