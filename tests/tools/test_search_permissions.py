"""The search tools (glob, grep, list) ask what ``read`` would ask: a symlinked folder at the head
of a glob is authorized like ``path``, and the ``read`` rules apply to each file found."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import Reply, Rule

from .conftest import Harness, make_harness

pytestmark = pytest.mark.timeout(30)


def write(root: Path, name: str, text: str) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def escape(tmp_path: Path) -> Harness:
    """A workspace whose ``lnk`` is a symlink to a folder outside it."""
    outside = tmp_path / "outside"
    write(outside, "creds.py", "TOPSECRET=hunter2\n")
    root = tmp_path / "ws"
    write(root, "app.py", "TOPSECRET=none\n")
    (root / "lnk").symlink_to(outside)
    return make_harness(root, tmp_path / "data")


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("glob", {"pattern": "lnk/*.py"}),
        ("glob", {"pattern": "lnk/**/*.py", "path": "."}),
        ("grep", {"pattern": "TOPSECRET", "include": "lnk/*.py"}),
    ],
)
async def test_a_symlinked_leading_folder_asks_external_directory(
    escape: Harness, tmp_path: Path, tool: str, args: dict[str, str]
) -> None:
    rejected = await escape.call(tool, args)
    assert rejected.error is not None and "rejected" in rejected.error
    assert [ask.permission for ask in escape.human.asked] == ["external_directory"]
    assert escape.human.asked[0].patterns == [str(tmp_path / "outside" / "*")]

    escape.human.replies.append(Reply("once"))
    allowed = await escape.ok(tool, args)
    assert allowed.result is not None and "creds.py" in allowed.result.output


async def test_grep_leaves_out_files_a_read_rule_denies(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write(root, "secrets/prod.txt", "password=hunter2\n")
    write(root, "secrets/also.txt", "password=swordfish\n")
    write(root, "app.py", "password = ask_user()\n")
    (root / "alias").symlink_to(root / "secrets")
    h = make_harness(root, tmp_path / "data", [Rule("read", "secrets/*", "deny")])

    whole = await h.ok("grep", {"pattern": "password"})
    assert whole.result is not None
    assert "hunter2" not in whole.result.output and "swordfish" not in whole.result.output
    assert "app.py:\n  line 1: password = ask_user()" in whole.result.output
    assert "(2 files with matches were skipped: read rules deny them.)" in whole.result.output
    assert whole.result.metadata == {"matches": 1, "files": 1, "truncated": False, "skipped": 2}

    # the folder itself, or through a symlink to it: the rules see the real path of each file
    for args in ({"path": "secrets"}, {"include": "alias/*.txt"}, {"include": "secrets/prod*"}):
        only = await h.ok("grep", {"pattern": "password", **args})
        assert only.result is not None
        assert "hunter2" not in only.result.output and only.result.output.startswith("No matches to show")
        assert "skipped: read rules deny" in only.result.output
    assert not h.human.asked


async def test_a_leading_folder_whose_name_is_not_ascii_keeps_the_read_rules(tmp_path: Path) -> None:
    # The folder's part of each found name was cut in characters from rg's bytes: the rules saw
    # "données//prod.txt" and glob listed, grep showed, what they deny.
    root = tmp_path / "ws"
    write(root, "données/prod.txt", "password=hunter2\n")
    write(root, "données/ok.txt", "password=fine\n")
    h = make_harness(root, tmp_path / "data", [Rule("read", "données/prod.txt", "deny")])
    listed = await h.ok("glob", {"pattern": "données/*.txt"})
    assert listed.result is not None and "prod.txt" not in listed.result.output
    assert "données/ok.txt" in listed.result.output
    found = await h.ok("grep", {"pattern": "password", "include": "données/*.txt"})
    assert found.result is not None and "hunter2" not in found.result.output
    assert "password=fine" in found.result.output


async def test_a_file_name_holding_a_newline_is_one_name(tmp_path: Path) -> None:
    # rg's output was split at every newline: glob and list named a "notes.txt" that is not
    # there, and grep showed the denied file's lines under that name.
    root = tmp_path / "ws"
    write(root, "secrets/prod\nnotes.txt", "password=hunter2\n")
    write(root, "app.txt", "password=fine\n")
    h = make_harness(root, tmp_path / "data", [Rule("read", "secrets/*", "deny")])
    found = await h.ok("grep", {"pattern": "password"})
    assert found.result is not None and "hunter2" not in found.result.output
    assert "notes.txt" not in found.result.output and found.result.metadata["skipped"] == 1
    h = make_harness(root, tmp_path / "data")
    found = await h.ok("grep", {"pattern": "hunter2"})
    assert found.result is not None
    assert "secrets/prod\nnotes.txt:\n  line 1: password=hunter2" in found.result.output
    listed = await h.ok("glob", {"pattern": "secrets/*"})
    assert listed.result is not None and listed.result.output.startswith("secrets/prod\nnotes.txt")


async def test_grep_withholds_files_a_read_rule_asks_for(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write(root, "config.env", "API=sekret\n")
    write(root, "deploy/.env.prod", "API=prodsekret\n")
    write(root, ".env.example", "API=placeholder\n")
    write(root, "app.py", "API = load()\n")
    h = make_harness(root, tmp_path / "data")

    out = await h.ok("grep", {"pattern": "API"})
    assert out.result is not None
    assert not h.human.asked  # withheld, not one ask per file
    assert "sekret" not in out.result.output and "prodsekret" not in out.result.output
    assert "placeholder" in out.result.output and "API = load()" in out.result.output
    assert (
        "(Matches in config.env, deploy/.env.prod were withheld: read rules ask the user before "
        "these files are read. Read them with the read tool, which will ask.)"
    ) in out.result.output
    assert out.result.metadata["withheld"] == 2

    # asked for by name, the file is shown once the user allows it (and remembered if "always")
    h.human.replies.append(Reply("always"))
    one = await h.ok("grep", {"pattern": "API", "path": "config.env"})
    assert one.result is not None and "sekret" in one.result.output
    assert [ask.patterns for ask in h.human.asked] == [["config.env"]]
    again = await h.ok("grep", {"pattern": "API"})
    assert again.result is not None and "API=sekret" in again.result.output
    assert "(Matches in deploy/.env.prod were withheld: read rules ask the user before this file" in (
        again.result.output
    )


async def test_the_withheld_note_names_no_more_paths_than_fit_in_2_kb(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    deep = "d" * 200 + "/" + "e" * 210
    for i in range(8):
        write(root, f"{deep}/{i}.env", "API=sekret\n")  # 417-byte paths: 4 fit in 2 KB
    h = make_harness(root, tmp_path / "data")
    out = await h.ok("grep", {"pattern": "API"})
    assert out.result is not None
    shown = [f"{deep}/{i}.env" for i in range(4)]
    assert f"(Matches in {', '.join(shown)} and 4 more were withheld" in out.result.output
    assert out.result.metadata["withheld"] == 8


async def test_one_ask_for_a_search_when_reads_ask(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write(root, "src/app.py", "token = 1\n")
    write(root, "src/keys/prod.py", "token = 'hunter2'\n")
    rules = [Rule("read", "*", "ask"), Rule("read", "src/keys/*", "deny")]
    h = make_harness(root, tmp_path / "data", rules)
    h.human.replies.append(Reply("once"))

    out = await h.ok("grep", {"pattern": "token", "include": "src/**/*.py"})
    assert out.result is not None
    assert [ask.patterns for ask in h.human.asked] == [["src"]]  # the folder searched, not each file
    assert "src/app.py:" in out.result.output and "hunter2" not in out.result.output
    assert "(1 file with matches was skipped: read rules deny it.)" in out.result.output


async def test_glob_and_list_leave_out_denied_files_but_name_asked_ones(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    write(root, "secrets/prod.txt", "x\n")
    write(root, "notes.txt", "x\n")
    write(root, "config.env", "x\n")
    h = make_harness(root, tmp_path / "data", [Rule("read", "secrets/*", "deny")])

    found = await h.ok("glob", {"pattern": "**/*.txt"})
    assert found.result is not None
    assert found.result.output == "notes.txt\n\n(1 matching file was skipped: read rules deny it.)"
    assert found.result.metadata == {"count": 1, "truncated": False, "skipped": 1}
    none = await h.ok("glob", {"pattern": "secrets/*"})
    assert none.result is not None and none.result.output.startswith("No files found")

    listed = await h.ok("list", {})
    assert listed.result is not None
    assert "prod.txt" not in listed.result.output and "config.env" in listed.result.output
    assert "(1 file was skipped: read rules deny it.)" in listed.result.output

    # read on a folder lists its entries the same way
    inside = await h.ok("read", {"filePath": "secrets"})
    assert inside.result is not None
    assert inside.result.output == "(empty directory)\n\n(1 file was skipped: read rules deny it.)"
    assert inside.result.metadata == {"entries": 0, "truncated": False, "skipped": 1}
    top = await h.ok("read", {"filePath": "."})
    assert top.result is not None and top.result.output == "secrets/\nconfig.env\nnotes.txt"
    assert not h.human.asked
