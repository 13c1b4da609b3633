"""Remembered "always" approvals: never broader than what was asked, old files read safely, an
unreadable file left alone, one project's approvals never another's. Real tools, real files."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from tools import DEFAULT_RULES, ApprovalStore, PermissionEngine, PermissionRequest, Reply, Rule

from .bash_helpers import _call, _harness
from .conftest import Harness, ScriptedHuman, make_harness


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    (folder / ".ssh").mkdir(parents=True)
    (folder / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n")
    (folder / "notes.txt").write_text("notes\n")
    monkeypatch.setenv("HOME", str(folder))
    return folder


def _approvals(data: Path) -> list[dict[str, str]]:
    files = list((data / "approvals").glob("*.json"))
    return [item for f in files for item in json.loads(f.read_text())["allow"]]


def _outside(h: Harness) -> list[list[str]]:
    return [r.patterns for r in h.human.asked if r.permission == "external_directory"]


async def test_always_for_the_home_folder_counts_as_once(
    tmp_path: Path, home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    h = make_harness(_workspace(tmp_path), tmp_path / "data")
    h.human.replies = [Reply("always")]
    with caplog.at_level(logging.WARNING):
        assert (await h.call("read", {"filePath": str(home / "notes.txt")})).error is None
    assert "counts as 'once'" in caplog.text and "home folder" in caplog.text
    # The key in ~/.ssh is asked about again (and rejected), not read under the "always".
    outcome = await h.call("read", {"filePath": str(home / ".ssh" / "id_rsa")})
    assert outcome.error is not None and "rejected external_directory" in outcome.error
    assert _outside(h) == [[f"{home}/*"], [f"{home}/.ssh/*"]]
    assert _approvals(tmp_path / "data") == []


async def test_always_for_a_folder_holding_the_workspace_counts_as_once(tmp_path: Path) -> None:
    parent = tmp_path / "projects"
    h = make_harness(_workspace(parent), tmp_path / "data")
    (parent / "notes.txt").write_text("notes\n")
    (parent / "other").mkdir()
    (parent / "other" / ".env").write_text("SECRET=1\n")
    h.human.replies = [Reply("always")]
    assert (await h.call("read", {"filePath": str(parent / "notes.txt")})).error is None
    outcome = await h.call("read", {"filePath": str(parent / "other" / ".env")})
    assert outcome.error is not None and "rejected external_directory" in outcome.error
    assert len(_outside(h)) == 2


async def test_always_for_a_folder_beside_the_workspace_is_remembered(tmp_path: Path) -> None:
    parent = tmp_path / "projects"
    h = make_harness(_workspace(parent), tmp_path / "data")
    (parent / "other" / "lib").mkdir(parents=True)
    (parent / "other" / "a.txt").write_text("a\n")
    (parent / "other" / "lib" / "b.txt").write_text("b\n")
    h.human.replies = [Reply("always")]
    assert (await h.call("read", {"filePath": str(parent / "other" / "a.txt")})).error is None
    assert (await h.call("read", {"filePath": str(parent / "other" / "lib" / "b.txt")})).error is None
    assert len(h.human.asked) == 1
    assert _approvals(tmp_path / "data") == [
        {"permission": "external_directory", "pattern": f"{parent / 'other'}/*"}
    ]


async def test_always_for_the_home_folder_through_bash_counts_as_once(tmp_path: Path, home: Path) -> None:
    h = _harness(tmp_path, [Rule("bash", "cat *", "allow")])
    h.human.replies = [Reply("always")]
    outcome = await _call(h, "cat ~/notes.txt")
    assert outcome.result is not None and outcome.result.output.startswith("notes\n")
    outcome = await _call(h, "cat ~/.ssh/id_rsa")
    assert outcome.error is not None and "rejected external_directory" in outcome.error
    assert _outside(h) == [[f"{home}/*"], [f"{home}/.ssh/*"]]


@pytest.mark.parametrize("folder", ["/", "home", "workspace parent", "above the home folder"])
async def test_broad_folders_are_never_remembered(tmp_path: Path, home: Path, folder: str) -> None:
    root = _workspace(tmp_path / "projects")
    path = {
        "/": "/",
        "home": str(home),
        "workspace parent": str(root.parent),
        "above the home folder": str(home.parent),
    }[folder]
    human = ScriptedHuman([Reply("always")])
    engine = PermissionEngine(DEFAULT_RULES, ApprovalStore.for_project(tmp_path / "data", root), human)
    pattern = os.path.join(path, "*")
    await engine.ask(PermissionRequest("external_directory", [pattern], [pattern], "read"))
    assert engine.action("external_directory", pattern) == "ask"
    assert engine.action("external_directory", f"{home}/.ssh/*") == "ask"
    assert _approvals(tmp_path / "data") == []


async def test_the_asker_is_told_what_always_remembers_before_it_asks(tmp_path: Path, home: Path) -> None:
    human = ScriptedHuman([Reply("always"), Reply("always")])
    engine = PermissionEngine(DEFAULT_RULES, ApprovalStore(None, tmp_path / "ws"), human)
    both = [f"{home}/*", f"{tmp_path}/data/*"]
    await engine.ask(PermissionRequest("external_directory", both, both, "read"))
    await engine.ask(PermissionRequest("edit", ["notes*.md"], [], "a tool naming no always patterns"))
    mixed, exact = (request.scope for request in human.asked)
    assert mixed.remembered == [f"{tmp_path}/data/*"]
    assert mixed.refused == {f"{home}/*": f"it would allow everything in the home folder ({home})"}
    assert mixed.lines() == [
        f"'always' remembers: {tmp_path}/data/*",
        f"'always' counts as 'once' for {home}/*: it would allow everything in the home folder ({home})",
    ]
    assert (exact.remembered, exact.refused) == (["notes\\*.md"], {})
    assert [r.pattern for r in engine.approvals.rules] == [f"{tmp_path}/data/*", "notes\\*.md"]


async def test_always_without_always_patterns_approves_what_was_asked_exactly(tmp_path: Path) -> None:
    human = ScriptedHuman([Reply("always")])
    engine = PermissionEngine(DEFAULT_RULES, ApprovalStore.for_project(tmp_path, tmp_path / "ws"), human)
    await engine.ask(PermissionRequest("edit", ["notes*.md"], [], "a tool naming no always patterns"))
    assert engine.action("edit", "notes*.md") == "allow"
    assert engine.action("edit", "notes-secret.md") == "ask"


# -- files written before patterns took \* and \? as the characters themselves -----------------

#: What an older lspilot wrote for: a file named *.txt, a folder named a*b, a prefix command, an
#: exact command holding a wildcard, an exact command ending in " *", a value known at run time,
#: a question about the whole workspace, a site, and a rule of some other tool.
OLD_FILE = {
    "allow": [
        {"permission": "edit", "pattern": "*.txt"},
        {"permission": "external_directory", "pattern": "/data/a*b/*"},
        {"permission": "bash", "pattern": "git log *"},
        {"permission": "bash", "pattern": "watch 'ls *.txt'"},
        {"permission": "bash", "pattern": "watch ls *"},
        {"permission": "external_directory", "pattern": "$HOME/*"},
        {"permission": "lsp", "pattern": "*"},
        {"permission": "webfetch", "pattern": "https://docs.python.org/*"},
        {"permission": "deploy", "pattern": "staging *"},
    ]
}


@pytest.mark.parametrize(
    ("permission", "pattern", "action"),
    [
        ("edit", "*.txt", "allow"),  # the file that was approved
        ("edit", "notes.txt", "ask"),  # not every .txt
        ("external_directory", "/data/a*b/*", "allow"),
        ("external_directory", "/data/a*b/sub/*", "allow"),  # a folder approves its subfolders
        ("external_directory", "/data/axb/*", "ask"),
        ("bash", "git log --oneline", "allow"),
        ("bash", "watch 'ls *.txt'", "allow"),
        ("bash", "watch 'ls x; rm y; echo .txt'", "ask"),
        ("bash", "watch ls *", "allow"),
        ("bash", "watch ls; rm -rf ~", "ask"),
        ("external_directory", "$HOME/*", "allow"),
        ("external_directory", "$HOME/.ssh/id_rsa", "ask"),
        ("lsp", "*", "allow"),  # a question about the whole workspace
        ("lsp", "secrets/key.py", "ask"),
        ("webfetch", "https://docs.python.org/3/library/", "allow"),
        ("deploy", "staging web", "allow"),  # another tool's rule means what it meant
    ],
)
def test_an_old_approvals_file_approves_only_what_was_asked(
    tmp_path: Path, permission: str, pattern: str, action: str
) -> None:
    _write_old(tmp_path, OLD_FILE)
    store = ApprovalStore.for_project(tmp_path / "data", tmp_path / "ws")
    asking = [Rule("lsp", "*", "ask"), Rule("deploy", "*", "ask")]
    engine = PermissionEngine([*DEFAULT_RULES, *asking], store, ScriptedHuman())
    assert engine.action(permission, pattern) == action


def test_an_old_file_is_written_back_in_the_new_form_once(tmp_path: Path) -> None:
    path = _write_old(tmp_path, OLD_FILE)
    ApprovalStore.for_project(tmp_path / "data", tmp_path / "ws").add("bash", ["make *"])
    written = json.loads(path.read_text())
    assert written["version"] == 2
    patterns = [item["pattern"] for item in written["allow"]]
    assert patterns[:4] == ["\\*.txt", "/data/a\\*b/*", "git log *", "watch 'ls \\*.txt'"]
    assert patterns[-1] == "make *"
    # Read again, the new form is taken as written: nothing escaped twice.
    again = ApprovalStore.for_project(tmp_path / "data", tmp_path / "ws")
    assert [r.pattern for r in again.rules] == patterns


async def test_an_old_file_does_not_let_the_edit_tool_write_every_txt(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    _write_old(tmp_path, {"allow": [{"permission": "edit", "pattern": "*.txt"}]})
    h = make_harness(root, tmp_path / "data")
    outcome = await h.call("write", {"filePath": "notes.txt", "content": "x\n"})
    assert outcome.error is not None and "rejected edit notes.txt" in outcome.error
    assert not (root / "notes.txt").exists()


# -- an unreadable file, and projects ------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b'{"allow": 3}',
        b'{"allow": [{"permission": "bash"}]}',
        b"\xff\xfe",
        b"[]",
        b'{"version": 3, "allow": []}',  # from a newer lspilot
    ],
)
def test_an_unreadable_file_is_named_and_never_overwritten(
    tmp_path: Path, content: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    path = ApprovalStore.for_project(tmp_path / "data", tmp_path / "ws").path
    assert path is not None
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    with caplog.at_level(logging.WARNING):
        store = ApprovalStore.for_project(tmp_path / "data", tmp_path / "ws")
        store.add("bash", ["make *"])
    assert str(path) in caplog.text and "cannot be read" in caplog.text
    assert path.read_bytes() == content  # left for the user to mend
    assert list(path.parent.iterdir()) == [path]  # and no stray temporary file
    engine = PermissionEngine(DEFAULT_RULES, store, ScriptedHuman())
    assert engine.action("bash", "make test") == "allow"  # for the rest of this run


def test_a_file_that_cannot_be_opened_does_not_crash(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = ApprovalStore.for_project(tmp_path / "data", tmp_path / "ws").path
    assert path is not None
    path.mkdir(parents=True)  # a folder where the file should be
    with caplog.at_level(logging.WARNING):
        store = ApprovalStore.for_project(tmp_path / "data", tmp_path / "ws")
        store.add("bash", ["make *"])
    assert str(path) in caplog.text and path.is_dir()
    assert [r.pattern for r in store.rules] == ["make *"]


def test_two_sessions_of_a_project_keep_each_others_approvals(tmp_path: Path) -> None:
    first = ApprovalStore.for_project(tmp_path / "data", tmp_path / "ws")
    second = ApprovalStore.for_project(tmp_path / "data", tmp_path / "ws")
    first.add("bash", ["make *"])
    second.add("bash", ["npm test *"])
    again = ApprovalStore.for_project(tmp_path / "data", tmp_path / "ws")
    assert sorted(r.pattern for r in again.rules) == ["make *", "npm test *"]


@pytest.mark.parametrize("other", ["ws2", "ws/sub", "../elsewhere/ws"])
def test_approvals_stay_with_their_project(tmp_path: Path, other: str) -> None:
    ApprovalStore.for_project(tmp_path / "data", tmp_path / "ws").add("bash", ["make *"])
    neighbour = ApprovalStore.for_project(tmp_path / "data", (tmp_path / other).resolve())
    assert neighbour.rules == []


def _workspace(parent: Path) -> Path:
    root = parent / "ws"
    root.mkdir(parents=True)
    return root


def _write_old(tmp_path: Path, content: object) -> Path:
    path = ApprovalStore.for_project(tmp_path / "data", tmp_path / "ws").path
    assert path is not None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(content))
    return path
