"""Git hook managers keep the hooks' code in the working tree (husky's ``.husky/``, pre-commit's
``.pre-commit-config.yaml``, lefthook's ``lefthook.yml``, the folder ``core.hooksPath`` names):
written now, it runs at the next allowed ``git commit``. The edit tools and the bash tool ask
``protected`` for it whatever the broad rules allow. Real files, git and bash, a scripted human."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tools import Reply, Rule
from tools._protected import is_protected
from tools._shell import analyze
from tools.bash import Bash

from .bash_helpers import _call
from .conftest import Harness, make_harness

HOOK = "#!/bin/sh\ntouch hooked\n"
#: As broad as the rules get: every edit, every command, git's commands by name.
BROAD = [
    Rule("edit", "*", "allow"),
    Rule("bash", "git *", "allow"),
    Rule("bash", "*", "allow"),
    Rule("external_directory", "*", "allow"),
    Rule("*", "*", "allow"),
]
#: Hook managers' files; ``githooks/`` is the repository's ``core.hooksPath``.
MANAGED = [
    ".pre-commit-config.yaml",
    ".pre-commit-hooks.yaml",
    ".husky/pre-commit",
    ".husky/_/husky.sh",
    "lefthook.yml",
    ".lefthook-local.toml",
    ".config/lefthook.yaml",
    ".lefthook/pre-commit/lint.sh",
    "githooks/pre-commit",
    "githooks/lib/common.sh",
]


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def _repo(tmp_path: Path, *rules: Rule) -> Harness:
    """A git repository whose ``core.hooksPath`` is ``githooks``, with the bash tool, under the
    broad rules and ``rules``."""
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    _git(root, "init", "-q")
    _git(root, "config", "core.hooksPath", "githooks")
    h = make_harness(root, tmp_path / "data", [*BROAD, *rules])
    h.registry.register(Bash())
    return h


@pytest.mark.parametrize("name", MANAGED)
async def test_a_hook_manager_file_written_under_broad_allows_is_asked(tmp_path: Path, name: str) -> None:
    h = _repo(tmp_path)
    outcome = await h.call("write", {"filePath": name, "content": HOOK})
    assert outcome.error is not None and f"rejected protected {name}" in outcome.error
    assert not (h.root / name).exists()
    assert [(r.permission, r.patterns) for r in h.human.asked] == [("protected", [name])]


@pytest.mark.parametrize("name", MANAGED)
async def test_a_hook_manager_file_written_by_bash_is_asked(tmp_path: Path, name: str) -> None:
    h = _repo(tmp_path)
    (h.root / name).parent.mkdir(parents=True, exist_ok=True)
    outcome = await _call(h, f"echo 'touch hooked' > {name}")
    assert outcome.error is not None and f"rejected protected {name}" in outcome.error
    assert not (h.root / name).exists()
    assert [(r.permission, r.patterns) for r in h.human.asked] == [("protected", [name])]


@pytest.mark.parametrize("name", MANAGED)
async def test_a_rule_naming_protected_allows_it(tmp_path: Path, name: str) -> None:
    h = _repo(tmp_path, Rule("protected", name, "allow"))
    await h.ok("write", {"filePath": name, "content": HOOK})
    assert (await _call(h, f"echo 'touch hooked' >> {name}")).error is None
    assert h.human.asked == []
    assert (h.root / name).read_text() == HOOK + "touch hooked\n"


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("tee .pre-commit-config.yaml < x", [".pre-commit-config.yaml"]),
        ("cp x .husky/", [".husky"]),
        ("mv x lefthook.yml", ["lefthook.yml"]),
        ("sed -i s/a/b/ .lefthook.yml", [".lefthook.yml"]),
        ("cd src && cp ../x ../githooks/pre-push", ["githooks/pre-push"]),
        ("ln -s ../x .HUSKY/pre-push", [".HUSKY/pre-push"]),  # case-insensitive disks
        ("rm -rf .husky", [".husky"]),
        ("cat .husky/pre-commit lefthook.yml githooks/pre-commit", []),
        ("bash .husky/pre-commit", []),  # runs it now: the bash ask covers it
        ("echo x > package.json && echo x > Makefile && echo x > src/hooks.yml", []),
    ],
)
def test_which_commands_change_a_hook_manager_file(tmp_path: Path, command: str, expected: list[str]) -> None:
    root = (tmp_path / "ws").resolve()
    (root / "src").mkdir(parents=True)
    _git(root, "init", "-q")
    _git(root, "config", "core.hooksPath", "githooks")
    assert list(analyze(command, root, root).protected) == expected


async def test_ordinary_files_are_not_asked(tmp_path: Path) -> None:
    h = _repo(tmp_path)
    for name in ("package.json", "Makefile", "src/hooks/pre-commit", "docs/husky.md", "pre-commit.yaml"):
        await h.ok("write", {"filePath": name, "content": "x\n"})
    assert (await _call(h, "echo x > src/a.txt && cp package.json src/")).error is None
    assert h.human.asked == []


async def test_the_hooks_path_written_once_approved_runs_at_an_allowed_commit(tmp_path: Path) -> None:
    # What the ask is for: git resolves a relative core.hooksPath from the working tree's top.
    h = _repo(tmp_path)
    h.human.replies = [Reply("once")]
    await h.ok("write", {"filePath": "githooks/pre-commit", "content": HOOK})
    (h.root / "githooks/pre-commit").chmod(0o755)
    commit = "git -c user.name=me -c user.email=me@example.com commit -q --allow-empty -m x"
    assert (await _call(h, commit)).error is None
    assert (h.root / "hooked").exists()
    assert [r.permission for r in h.human.asked] == ["protected"]


def test_a_changed_hooks_path_is_read_again(tmp_path: Path) -> None:
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    _git(root, "init", "-q")
    assert not is_protected(root / "hooks/pre-commit", root)
    _git(root, "config", "core.hooksPath", "hooks")
    assert is_protected(root / "hooks/pre-commit", root)
    _git(root, "config", "core.hooksPath", str(root / "tools/git-hooks"))
    assert not is_protected(root / "hooks/pre-commit", root)
    assert is_protected(root / "tools/git-hooks/pre-commit", root)
    _git(root, "config", "--unset", "core.hooksPath")
    assert not is_protected(root / "tools/git-hooks/pre-commit", root)


@pytest.mark.parametrize(
    "config",
    [
        '[core]\n\thooksPath = "my hooks" ; a comment\n',
        "[CORE] HooksPath = my\\\n hooks\n",  # a key on the section's line, a continued value
        "[core]\n\thooksPath = other\n[include]\n\tpath = extra.cfg\n",  # every value counts
        "[extensions]\n\tworktreeConfig ; a bare key is true\n",  # config.worktree is read
    ],
)
def test_the_hooks_path_is_read_as_git_reads_its_configuration(tmp_path: Path, config: str) -> None:
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    _git(root, "init", "-q")
    (root / ".git/extra.cfg").write_text("[core]\n\thooksPath = my hooks\n")
    (root / ".git/config.worktree").write_text("[core]\n\thooksPath = my hooks\n")
    assert not is_protected(root / "my hooks/pre-commit", root)  # neither is read yet
    with (root / ".git/config").open("a") as file:
        file.write(config)
    assert is_protected(root / "my hooks/pre-commit", root)
    assert not is_protected(root / "my/pre-commit", root)


def test_the_hooks_path_of_the_repository_holding_the_workspace(tmp_path: Path) -> None:
    # The workspace is a folder of the repository; a worktree's .git is a file naming its git folder.
    repo = (tmp_path / "repo").resolve()
    (repo / "app").mkdir(parents=True)
    _git(repo, "init", "-q")
    _git(repo, "config", "core.hooksPath", "app/hooks")
    assert is_protected(repo / "app/hooks/pre-commit", repo / "app")
    _git(repo, "-c", "user.name=me", "-c", "user.email=me@x", "commit", "-q", "--allow-empty", "-m", "x")
    _git(repo, "worktree", "add", "-q", str(tmp_path / "tree"))
    tree = (tmp_path / "tree").resolve()
    assert is_protected(tree / "app/hooks/pre-commit", tree)
    assert not is_protected(repo / "app/hooks/pre-commit", tree)  # the other tree's
    assert not is_protected(repo / "app/x.py", repo / "app")


def test_a_hooks_path_holding_the_workspace_protects_only_hooks(tmp_path: Path) -> None:
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    _git(root, "init", "-q")
    _git(root, "config", "core.hooksPath", ".")
    assert is_protected(root / "pre-push", root)
    assert not is_protected(root / "README.md", root)
    assert not is_protected(root / "src/pre-push", root)
