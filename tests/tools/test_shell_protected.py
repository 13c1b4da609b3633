"""Commands that change what a later, allowed command runs (git's hooks and configuration, jobs
for later) ask ``protected``, which no broad ``bash`` or ``external_directory`` allow silences;
real bash and git, a scripted human."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tools import Reply, Rule
from tools._shell import analyze

from .bash_helpers import ALLOW_ALL, _call, _harness
from .conftest import Harness

HOOK = "#!/bin/sh\ntouch hooked\n"
#: What */hooks/ may reach once dotglob is on: the folders there and those a command may make.
DOTGLOB_HOOKS = [
    ".git/hooks",
    ".husky/hooks",
    ".lefthook/hooks",
    ".lefthook-local/hooks",
    ".lspilot/hooks",
    "bare/hooks",
]


def _protected(tmp_path: Path, command: str) -> list[str]:
    """The ``protected`` patterns ``command`` raises in a git workspace; analyzed, never run."""
    root = (tmp_path / "ws").resolve()
    if not (root / ".git").exists():
        root.mkdir(exist_ok=True)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        (root / "bare").mkdir()
        subprocess.run(["git", "init", "-q", "--bare", str(root / "bare")], check=True)
    (root / "src").mkdir(exist_ok=True)
    return list(analyze(command, root, root).protected)


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("echo '#!/bin/sh' > .git/hooks/pre-commit", [".git/hooks/pre-commit"]),
        ("printf x >> .git/config", [".git/config"]),
        ("cp evil .git/hooks/", [".git/hooks"]),
        ("cp evil .git/hooks/post-checkout", [".git/hooks/post-checkout"]),
        ("chmod +x .git/hooks/pre-commit", [".git/hooks/pre-commit"]),
        ("tee .git/info/attributes < x", [".git/info/attributes"]),
        ("cd .git/hooks && cat > pre-commit", [".git/hooks/pre-commit"]),
        ("cd src && cp ../x ../.git/hooks/pre-push", [".git/hooks/pre-push"]),
        ("ln -sf ../../x .GIT/hooks/pre-commit", [".GIT/hooks/pre-commit"]),  # case-insensitive disks
        ("sed -i s/a/b/ .git/config", [".git/config"]),
        ("echo x > bare/hooks/pre-receive", ["bare/hooks/pre-receive"]),  # a bare repository
        ("rm -rf .git", [".git"]),
        ("git config core.hooksPath hooks", ["git config core.hooksPath hooks"]),
        ("git config --global core.fsmonitor 'sh x'", ["git config --global core.fsmonitor 'sh x'"]),
        ("git config alias.st '!sh -c id'", ["git config alias.st '!sh -c id'"]),
        ("git config core.pager 'less; id'", ["git config core.pager 'less; id'"]),
        ("git config --add filter.x.clean cat", ["git config --add filter.x.clean cat"]),
        ("git config diff.x.textconv 'sh x'", ["git config diff.x.textconv 'sh x'"]),
        ("git config include.path ../x", ["git config include.path ../x"]),
        ("git config set core.editor vim", ["git config set core.editor vim"]),
        ('git config "$k" "$v"', ['git config "$k" "$v"']),
        ("git config --edit", ["git config --edit"]),
        ("git clone -c core.fsmonitor=x url dir", ["git clone -c core.fsmonitor=x"]),
        ("git init --template=tpl new", ["git init --template tpl"]),
        ("sudo -u me cp x .git/hooks/pre-commit", [".git/hooks/pre-commit"]),
        ("bash -c 'echo x > .git/hooks/pre-commit'", [".git/hooks/pre-commit"]),
        ("crontab jobs.txt", ["crontab jobs.txt"]),
        ("crontab -", ["crontab -"]),
        ("crontab -e", ["crontab -e"]),
        ("crontab - <<< '* * * * * id'", ["crontab - <<< '* * * * * id\n'"]),
        ("at -f job.sh now", ["at -f job.sh now"]),
        ("at now <<< 'id'", ["at now <<< 'id\n'"]),
        # lspilot's own project files: rules, server commands, tools the next session runs
        ("echo 'bash = \"allow\"' >> lspilot.toml", ["lspilot.toml"]),
        ("cp evil.py .lspilot/tools/", [".lspilot/tools"]),
        ("cd src && echo x > ../.lspilot/config.toml", [".lspilot/config.toml"]),
        # files written by commands that only read the others (git, xxd, less)
        ("git diff --output=.git/hooks/pre-commit", [".git/hooks/pre-commit"]),
        ("git log -p --output .git/config", [".git/config"]),
        ("git -C src show --output=../.git/config", [".git/config"]),
        ("git format-patch -o .git/hooks HEAD~1", [".git/hooks"]),
        ("git archive -o .git/hooks/post-checkout HEAD", [".git/hooks/post-checkout"]),
        ("xxd -r hex .git/hooks/pre-commit", [".git/hooks/pre-commit"]),
        ("xxd -s 4 -l 16 src .git/config", [".git/config"]),
        ("less -o .git/config src/a", [".git/config"]),
        # a glob counts as the protected paths it may expand to, as they are or once made
        ("echo x > .g*/config", [".git/config"]),
        ("cp a .gi?/hooks/pre-commit", [".git/hooks/pre-commit"]),
        ("cp a .[g]it/hooks/", [".git/hooks"]),
        ("cd src && cp a ../.G[^x]T/hooks/pre-push", [".git/hooks/pre-push"]),  # in any case
        ("cp a b*/hooks/pre-receive", ["bare/hooks/pre-receive"]),
        ("echo x >> .lsp*/config.toml", [".lspilot/config.toml"]),
        ("git init -q n && cp a n/.g*/hooks/pre-commit", ["n/.git/hooks/pre-commit"]),
        ("shopt -s dotglob; cp a *t/config", [".git/config", ".lspilot/config"]),  # made first, or there
        ("bash -O dotglob -c 'cp a *t/config'", [".git/config", ".lspilot/config"]),
        # each found in review, checked against bash
        ("cp a .[[:alpha:]]it/hooks/", [".git/hooks"]),  # a class fnmatch does not know
        (  # may climb (..), so asked as outside text: also protected
            "cp a .*/hooks/",
            [
                ".git/hooks",
                ".husky/hooks",
                ".lefthook/hooks",
                ".lefthook-local/hooks",
                ".lspilot/hooks",
                ".*/hooks/",
            ],
        ),
        ("cd .g* && printf x > hooks/pre-commit", [".git/hooks/pre-commit"]),  # cd stayed in the workspace
        ("git init -q newd && cp a n*/.git/hooks/", ["n*/.git/hooks"]),  # n* matches newd by then
        ("for i in 1 2; do cp a */hooks/; shopt -s dot''glob; done", DOTGLOB_HOOKS),
        ("trap 'shopt -s dotglob' DEBUG; cp a */hooks/", DOTGLOB_HOOKS),
        ("cp a .[\\!g]it/hooks/", [".git/hooks"]),  # [\!g] is ! or g (and the grammar split the word)
        ("cd [.]git && cp a hooks/", ["[.]git/a", "[.]git/hooks/"]),  # bash may not match it so: unknown
        ('cp a "$X"/.git/hooks/', ['"$X"/.git/hooks/']),  # a folder only known at run time:
        ('cd "$X"; echo x >> .lspilot/config.toml', ['"$X"/.lspilot/config.toml']),  # by names alone
        (
            "bash -O extglob -c 'echo x >> @(.git)/config'",  # unparsed: asked exactly, and protected
            ["(unparsed) echo x >> @(.git)/config"],
        ),
    ],
)
def test_what_changes_what_later_commands_run_is_protected(
    tmp_path: Path, command: str, expected: list[str]
) -> None:
    assert _protected(tmp_path, command) == expected


def test_with_globstar_a_glob_reaches_every_depth(tmp_path: Path) -> None:
    # ** is * unless globstar is on, when it is any number of folders, none included
    _protected(tmp_path, "true")
    subprocess.run(["git", "init", "-q", str(tmp_path / "ws/src/sub")], check=True)
    assert "lspilot.toml" not in _protected(tmp_path, "echo x > **/lspilot.toml")
    assert "lspilot.toml" in _protected(tmp_path, "shopt -s globstar; echo x > **/lspilot.toml")
    assert "src/sub/.git/config" not in _protected(tmp_path, "cp a **/.git/config")
    assert "src/sub/.git/config" in _protected(tmp_path, "bash -O globstar -c 'cp a **/.git/config'")
    # a shell started with BASHOPTS in its environment (bash refuses it as a prefix: read-only)
    assert "lspilot.toml" in _protected(tmp_path, "env BASHOPTS=globstar bash -c 'echo x > **/lspilot.toml'")
    assert "lspilot.toml" not in _protected(
        tmp_path, "env BASHOPTS=extglob bash -c 'echo x > **/lspilot.toml'"
    )
    assert ".git/config" in _protected(tmp_path, "env BASHOPTS=extglob:dotglob bash -c 'cp a *t/config'")
    assert "lspilot.toml" in _protected(tmp_path, "env BASHOPTS=$o bash -c 'echo x > **/lspilot.toml'")
    assert ".git/hooks/x" in _protected(tmp_path, "env A=$o bash -c 'echo x > .git/hooks/x'")


def test_every_path_a_glob_matches_is_checked(tmp_path: Path) -> None:
    # lspilot.toml comes 301st in [al]*: past the 256 paths that were checked
    _protected(tmp_path, "true")
    for index in range(300):
        (tmp_path / "ws" / f"a{index:03}").touch()
    (tmp_path / "ws/lspilot.toml").touch()
    assert _protected(tmp_path, "rm [al]*") == ["lspilot.toml"]
    assert _protected(tmp_path, "cat [al]*") == []


def test_unparsed_text_is_protected_only_when_it_may_name_a_protected_path(tmp_path: Path) -> None:
    # every unparsed command was asked as protected, which no broad allow covers
    assert _protected(tmp_path, '[ "$a" \\< "$b" ]') == []
    assert _protected(tmp_path, "bash -O extglob -c 'cp x @(.g*)/hooks/'") == [
        "(unparsed) cp x @(.g*)/hooks/"
    ]


@pytest.mark.parametrize(
    "command", ["cd $DIR && rm -rf *", "rm -rf $TMPDIR/*", 'for f in *.txt; do mv "$f" x; done']
)
def test_a_glob_in_a_folder_only_known_at_run_time_is_not_protected_for_a_bare_wildcard(
    tmp_path: Path, command: str
) -> None:
    # * matches no .git (as in bash, without dotglob), and any folder's files: asked outside only
    assert _protected(tmp_path, command) == []


@pytest.mark.parametrize(
    "command",
    [
        "git status",
        "git commit -m 'a message'",
        "git diff HEAD",
        "git config user.name me",
        "git config --get core.pager",
        "git config --unset alias.st",
        "git config pager.log false",
        "git -c core.pager=cat log",  # runs now: the bash ask covers it
        "cat .git/config",
        "grep -r x .git/hooks",
        "ls .git/hooks",
        "cd .git && ls",
        "git --git-dir .git log",
        "echo x > src/a.txt",
        "crontab -l",
        "at -l",
        "cat lspilot.toml .lspilot/config.toml",
        "echo x > src/lspilot.toml",  # only the workspace's own
        "xxd .git/config",
        "xxd -r -p .git/x",  # a second operand is written: here stdout
        "git diff .git/config src",
        "git format-patch -o out HEAD~1",
        "rm -rf src/*",
        "cp a *t/config",  # * matches no name starting with a dot
        "ls .g*/hooks",
    ],
)
def test_ordinary_commands_are_not_protected(tmp_path: Path, command: str) -> None:
    assert _protected(tmp_path, command) == []


@pytest.mark.parametrize(
    ("command", "runs"),
    [
        ("vim -es -c '!rm -rf x' f", "rm -rf x"),  # -s is silent mode after -e, not keys typed
        ("vim -e -s -c '!rm -rf x' f", "rm -rf x"),
        ("ex -s -c '!rm -rf x' f", "rm -rf x"),
        ("nvim --headless -c '!rm -rf x' -c q", "rm -rf x"),
    ],
)
def test_vim_in_ex_mode_runs_its_commands(tmp_path: Path, command: str, runs: str) -> None:
    root = tmp_path.resolve()
    result = analyze(command, root, root)
    assert (runs, "rm *") in result.commands
    assert not result.outside


def test_vim_keys_from_a_file_are_still_unknown(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    assert list(analyze("vim -s keys f", root, root).outside) == ["(vim -s keys)"]


def _repo(tmp_path: Path, rules: list[Rule]) -> Harness:
    """The bash tool on a git repository, under ``rules``."""
    h = _harness(tmp_path, rules)
    subprocess.run(["git", "init", "-q", str(h.root)], check=True)
    return h


async def test_a_hook_written_under_a_broad_allow_is_asked_and_not_written_when_rejected(
    tmp_path: Path,
) -> None:
    h = _repo(tmp_path, ALLOW_ALL)
    (h.root / "evil").write_text(HOOK)
    outcome = await _call(h, "cp evil .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit")
    assert outcome.error is not None and "rejected protected .git/hooks/pre-commit" in outcome.error
    assert not (h.root / ".git/hooks/pre-commit").exists()
    [ask] = h.human.asked
    assert (ask.permission, ask.patterns) == ("protected", [".git/hooks/pre-commit"])


async def test_git_config_of_a_program_under_git_allowed_is_asked(tmp_path: Path) -> None:
    h = _repo(tmp_path, [Rule("bash", "git *", "allow"), Rule("*", "*", "allow")])  # as broad as it gets
    config = (h.root / ".git/config").read_text()
    outcome = await _call(h, "git config core.fsmonitor 'touch fsmonitored'")
    assert outcome.error is not None and "rejected protected" in outcome.error
    assert (h.root / ".git/config").read_text() == config
    assert [r.permission for r in h.human.asked] == ["protected"]
    status = await _call(h, "git status --short")  # what the setting would have run
    assert status.error is None and not (h.root / "fsmonitored").exists()


async def test_a_denied_command_is_denied_before_anything_is_asked(tmp_path: Path) -> None:
    h = _repo(tmp_path, [*ALLOW_ALL, Rule("bash", "git config *", "deny")])
    outcome = await _call(h, "git config core.hooksPath hooks")
    assert outcome.error is not None and outcome.error.startswith("Permission denied: bash git config")
    assert h.human.asked == []


async def test_ordinary_git_commands_are_not_asked_under_git_allowed(tmp_path: Path) -> None:
    h = _repo(tmp_path, [Rule("bash", "git *", "allow")])
    (h.root / "a.txt").write_text("a\n")
    for command in (
        "git config user.name me",
        "git config user.email me@example.com",
        "git add a.txt",
        "git commit -q -m first",
        "git status --short",
        "git log --format='%s %an'",
    ):
        outcome = await _call(h, command)
        assert outcome.error is None and outcome.result is not None, (command, outcome.error)
        last = outcome.result.output
    assert h.human.asked == []
    assert last.startswith("first me\n")


async def test_an_explicit_protected_rule_allows_and_always_approves_exactly(tmp_path: Path) -> None:
    h = _repo(tmp_path, [*ALLOW_ALL, Rule("protected", ".git/hooks/pre-commit", "allow")])
    assert (await _call(h, "echo '#!/bin/sh' > .git/hooks/pre-commit")).error is None
    assert h.human.asked == [] and (h.root / ".git/hooks/pre-commit").exists()
    h.human.replies = [Reply("always")]
    assert (await _call(h, "echo '#!/bin/sh' > .git/hooks/pre-push")).error is None
    assert (await _call(h, "echo '#!/bin/sh' >> .git/hooks/pre-push")).error is None
    [ask] = h.human.asked
    assert ask.always == [".git/hooks/pre-push"]
    outcome = await _call(h, "echo x > .git/hooks/post-merge")
    assert outcome.error is not None and not (h.root / ".git/hooks/post-merge").exists()
