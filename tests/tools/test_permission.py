"""The permission engine: a table of rule cases, replies, and paths that leave the workspace."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given as generated
from hypothesis import settings
from hypothesis import strategies as st

from tools import (
    ApprovalStore,
    PermissionDenied,
    PermissionEngine,
    PermissionRequest,
    Reply,
    Rule,
    ToolContext,
)
from tools.context import is_within, read_file, real_path
from tools.permission import DEFAULT_RULES, _wildcard_regex, rules_from_config, wildcard_match  # pyright: ignore[reportPrivateUsage]

from .conftest import Harness, ScriptedHuman, make_harness


@pytest.mark.parametrize(
    ("text", "pattern", "matches"),
    [
        ("git log --oneline", "git log *", True),
        ("git log", "git log *", True),  # a trailing " *" also matches the bare command
        ("git logs", "git log *", False),
        ("git status", "git log *", False),
        ("src/a.py", "*.py", True),
        ("src/a.pyc", "*.py", False),
        ("a.py", "?.py", True),
        ("ab.py", "?.py", False),
        ("rm -rf /", "rm *", True),
        ("(a+b).py", "(a+b).py", True),  # regex characters are literal
        ("x", "*", True),
        ("*.py", "\\*.py", True),  # an escaped wildcard is the character itself
        ("src/a.py", "\\*.py", False),
        ("a?", "a\\?", True),
        ("ab", "a\\?", False),
        ("a\\b", "a\\b", True),  # a backslash before anything else is a backslash
        ("x\\*", "x\\\\*", True),  # literal("x\\*"): a backslash, then an escaped star
        ("x\\yz", "x\\\\*", False),
        ("x *", "x \\*", True),  # no trailing " *" of a command
        ("x", "x \\*", False),
    ],
)
def test_wildcards(text: str, pattern: str, matches: bool) -> None:
    assert wildcard_match(text, pattern) is matches


@settings(max_examples=500, deadline=None)
@generated(st.text("ab *?.\n", max_size=6), st.text("ab *?.\n", max_size=6))
def test_wildcard_shortcuts_agree_with_the_pattern(text: str, pattern: str) -> None:
    # "*" alone and patterns without wildcards skip the regex; the answer must not change.
    assert wildcard_match(text, pattern) is (_wildcard_regex(pattern).fullmatch(text) is not None)


CONFIG = rules_from_config(
    {
        "bash": {"*": "ask", "git *": "allow", "git push *": "deny", "git push --dry-run *": "allow"},
        "edit": {"docs/*": "allow"},
        "webfetch": "deny",
    },
    "project config",
)


@pytest.mark.parametrize(
    ("permission", "pattern", "action"),
    [
        ("read", "src/app.py", "allow"),
        ("read", ".env", "ask"),
        ("read", "config/.env", "ask"),
        ("read", ".env.local", "ask"),
        ("read", ".env.example", "allow"),
        ("edit", "src/app.py", "ask"),
        ("edit", "docs/guide.md", "allow"),
        ("bash", "ls -la", "ask"),
        ("bash", "git status", "allow"),
        ("bash", "git push origin main", "deny"),  # the later, more specific rule wins
        ("bash", "git push --dry-run origin", "allow"),  # and the last match wins again
        ("webfetch", "https://example.com", "deny"),
        ("external_directory", "/etc/*", "ask"),
        ("doom_loop", "read", "ask"),
        ("lsp", "findReferences", "allow"),
        ("made_up_permission", "x", "allow"),  # the catch-all default
    ],
)
def test_rule_table(permission: str, pattern: str, action: str, tmp_path: Path) -> None:
    engine = PermissionEngine([*DEFAULT_RULES, *CONFIG], ApprovalStore(None), ScriptedHuman())
    assert engine.action(permission, pattern) == action


def test_no_rule_means_ask() -> None:
    engine = PermissionEngine([], ApprovalStore(None), ScriptedHuman())
    assert engine.action("bash", "ls") == "ask"


def test_bad_config_names_the_key() -> None:
    with pytest.raises(ValueError, match=r"my.toml: permission.bash: 'rm \*' = 'never'"):
        rules_from_config({"bash": {"rm *": "never"}}, "my.toml")


async def test_always_is_remembered_per_project_and_never_beats_deny(tmp_path: Path) -> None:
    human = ScriptedHuman(replies=[Reply("always")])
    rules = [*DEFAULT_RULES, Rule("bash", "rm *", "deny", "user config")]
    store = ApprovalStore.for_project(tmp_path, Path("/work/project"))
    engine = PermissionEngine(rules, store, human)
    request = PermissionRequest("bash", ["npm test --watch"], ["npm test *", "rm *"], "npm test")
    await engine.ask(request)
    assert len(human.asked) == 1

    # A new engine (a restarted daemon) on the same project remembers the approval...
    again = PermissionEngine(rules, ApprovalStore.for_project(tmp_path, Path("/work/project")), human)
    await again.ask(PermissionRequest("bash", ["npm test"], ["npm test *"], "npm test"))
    assert len(human.asked) == 1
    # ...but the approval it stored for "rm *" does not override the configured deny.
    with pytest.raises(PermissionDenied, match="user config"):
        await again.ask(PermissionRequest("bash", ["rm -rf build"], ["rm *"], "rm"))
    # Another project does not inherit it.
    other = PermissionEngine(rules, ApprovalStore.for_project(tmp_path, Path("/work/other")), human)
    with pytest.raises(Exception, match="rejected"):
        await other.ask(PermissionRequest("bash", ["npm test"], ["npm test *"], "npm test"))


async def test_reject_with_feedback_reaches_the_model(harness: Harness) -> None:
    (harness.root / ".env").write_text("SECRET=1\n")
    harness.human.replies.append(Reply("reject", "use .env.example instead"))
    outcome = await harness.call("read", {"filePath": ".env"})
    assert outcome.error is not None and "use .env.example instead" in outcome.error
    assert not outcome.stops_turn
    harness.human.replies.append(Reply("reject"))
    outcome = await harness.call("read", {"filePath": ".env"})
    assert outcome.stops_turn
    assert [r.permission for r in harness.human.asked] == ["read", "read"]


async def test_dotdot_outside_the_workspace_asks_external_directory(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text("private\n")
    harness = make_harness(_workspace(tmp_path), tmp_path / "data")
    outcome = await harness.call("read", {"filePath": "../outside/notes.txt"})
    assert outcome.error is not None and "rejected" in outcome.error
    assert harness.human.asked[0].permission == "external_directory"
    assert harness.human.asked[0].patterns == [f"{outside.resolve()}/*"]

    harness.human.replies.append(Reply("once"))
    outcome = await harness.call("read", {"filePath": "../outside/notes.txt"})
    assert outcome.result is not None and "private" in outcome.result.output


async def test_symlink_out_of_the_workspace_asks_external_directory(tmp_path: Path) -> None:
    secret = tmp_path / "elsewhere"
    secret.mkdir()
    (secret / "key.txt").write_text("k\n")
    root = _workspace(tmp_path)
    os.symlink(secret, root / "link")
    harness = make_harness(root, tmp_path / "data")
    outcome = await harness.call("read", {"filePath": "link/key.txt"})
    assert outcome.error is not None
    assert [a.permission for a in harness.human.asked] == ["external_directory"]
    assert str(secret.resolve()) in harness.human.asked[0].title


def test_real_path_is_path_resolve(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real/file.txt").write_text("x")
    os.symlink(tmp_path / "real", tmp_path / "link")
    os.symlink("real/file.txt", tmp_path / "relative-link")
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")
    for given in [
        tmp_path / "link/file.txt",  # through a symlinked folder: the fast path
        tmp_path / "relative-link",
        tmp_path / "link/../real/file.txt",
        tmp_path / "link/missing/tail.txt",  # does not exist: Path.resolve's answer
        tmp_path / "dangling",
        tmp_path / "real",
    ]:
        assert real_path(given) == given.resolve(), given


def test_read_file_reads_whole_files_as_open_does(tmp_path: Path) -> None:
    for size in (0, 1, 4095, 70_000):
        (tmp_path / "f").write_bytes(os.urandom(size))
        data, stat = read_file(tmp_path / "f")
        assert data == (tmp_path / "f").read_bytes() and stat.st_size == size
    proc = Path("/proc/self/status")  # its size says 0: read on to the end
    assert read_file(proc)[0].startswith(b"Name:") and proc.stat().st_size == 0
    with pytest.raises(IsADirectoryError):
        read_file(tmp_path)
    with pytest.raises(FileNotFoundError):
        read_file(tmp_path / "missing")
    os.mkfifo(tmp_path / "fifo")  # no writer: opening it to read would wait forever
    for special in (tmp_path / "fifo", Path("/dev/zero")):  # ... and reading /dev/zero never end
        with pytest.raises(OSError, match="not a regular file"):
            read_file(special)


def test_is_within_and_relative_compare_whole_components(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    assert is_within(root / "a/b.py", root) and is_within(root, root)
    assert not is_within(tmp_path / "ws-other/b.py", root)
    assert is_within(root, Path("/"))
    harness = make_harness(_workspace(tmp_path), tmp_path / "data")
    ctx = ToolContext(harness.env, "call-1")
    assert ctx.relative(root / "a/b.py") == "a/b.py"
    assert ctx.relative(root) == "."
    assert ctx.relative(tmp_path / "ws-other/b.py") == str(tmp_path / "ws-other/b.py")
    assert ctx.resolve("a/../b.py") == root / "b.py"
    assert ctx.resolve(str(tmp_path / "x/./y")) == tmp_path / "x/y"
    assert ctx.resolve("~/notes") == Path.home() / "notes"


async def test_config_deny_is_final_even_for_the_user_prompt(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    (root / "secrets.txt").write_text("x\n")
    harness = make_harness(root, tmp_path / "data", [Rule("read", "secrets.txt", "deny", "project config")])
    harness.human.replies.append(Reply("once"))
    outcome = await harness.call("read", {"filePath": "secrets.txt"})
    assert outcome.error is not None and "Permission denied" in outcome.error
    assert harness.human.asked == []


def _workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


async def test_lsp_questions_about_the_whole_workspace_ask_for_pattern_star(tmp_path: Path) -> None:
    """A query without filePath (workspaceSymbol, a symbol looked up everywhere) is asked as
    ``lsp *``: rules for the lsp permission govern it too, not only questions about a file."""
    root = tmp_path / "ws"
    root.mkdir()
    harness = make_harness(root, tmp_path / "data", [Rule("lsp", "*", "ask")])
    outcome = await harness.call("lsp", {"operation": "workspaceSymbol", "query": "area"})
    assert outcome.error is not None and "rejected lsp *" in outcome.error, outcome.error
    [asked] = harness.human.asked
    assert (asked.permission, asked.patterns) == ("lsp", ["*"])
    assert asked.title == "workspaceSymbol 'area' in the workspace"
    # (a deny of every lsp question would leave the tool unoffered; this one lets src/ through)
    rules = [Rule("lsp", "*", "deny"), Rule("lsp", "src/*", "allow")]
    denied = make_harness(root, tmp_path / "data", rules)
    outcome = await denied.call("lsp", {"operation": "findReferences", "symbol": "area"})
    assert outcome.error is not None and outcome.error.startswith("Permission denied: lsp *"), outcome.error


async def test_always_for_a_file_named_with_wildcards_approves_that_file_only(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    h = make_harness(root, tmp_path / "data")
    h.human.replies = [Reply("always"), Reply("reject", "no")]
    assert (await h.call("write", {"filePath": "*.txt", "content": "x\n"})).error is None
    assert h.human.asked[0].always == ["\\*.txt"]
    outcome = await h.call("write", {"filePath": "src/secret.txt", "content": "y\n"})
    assert outcome.error == "The user rejected edit src/secret.txt and said: no"
    assert not (root / "src" / "secret.txt").exists() and len(h.human.asked) == 2
    assert (await h.call("write", {"filePath": "*.txt", "content": "z\n"})).error is None  # approved
    assert len(h.human.asked) == 2


async def test_always_for_an_outside_folder_named_with_wildcards_approves_that_folder(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    for folder in ("a*", "ab"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "f.txt").write_text(f"in {folder}\n")
    h = make_harness(root, tmp_path / "data")
    h.human.replies = [Reply("always")]
    assert (await h.call("read", {"filePath": str(tmp_path / "a*" / "f.txt")})).error is None
    assert h.human.asked[0].always == [f"{tmp_path}/a\\*/*"]
    outcome = await h.call("read", {"filePath": str(tmp_path / "ab" / "f.txt")})
    assert outcome.error is not None and outcome.error.startswith("The user rejected external_directory")
    assert (await h.call("read", {"filePath": str(tmp_path / "a*" / "f.txt")})).error is None
    assert len(h.human.asked) == 2


async def test_rules_for_paths_under_the_home_folder_may_start_with_tilde(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n")
    (home / "notes.txt").write_text("notes\n")
    monkeypatch.setenv("HOME", str(home))
    config = {"read": {"~/.ssh/*": "deny"}, "external_directory": {"~/*": "allow"}}
    rules = rules_from_config({**config, "bash": {"cat ~/*": "ask"}}, "user config")
    assert [r.pattern for r in rules] == [f"{home}/.ssh/*", f"{home}/*", "cat ~/*"]  # commands as written
    root = tmp_path / "ws"
    root.mkdir()
    h = make_harness(root, tmp_path / "data", rules)
    outcome = await h.call("read", {"filePath": "~/.ssh/id_rsa"})
    assert outcome.error is not None
    assert outcome.error.startswith(f"Permission denied: read {home}/.ssh/id_rsa")
    assert (await h.call("read", {"filePath": "~/notes.txt"})).error is None and h.human.asked == []
