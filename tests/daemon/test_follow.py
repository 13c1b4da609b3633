"""Where following the agent points, from the metadata the tools really produce (the whole
round trip to an editor is in test_serve.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from daemon.follow import Place, place
from tools.diff import unified_diff

BEFORE = "".join(f"line {n}\n" for n in range(1, 21))


def changed(root: Path, *files: tuple[str, str, str, str]) -> dict[str, Any]:
    """Edit-tool metadata for (name, before, after, status) per file; files left on disk as after."""
    for name, _before, after, status in files:
        if status != "deleted":
            (root / name).write_text(after)
    return {
        "diff": "".join(unified_diff(before, after, name) for name, before, after, _status in files),
        "files": [
            {"path": str(root / name), "status": "applied" if s == "deleted" else s, "note": ""}
            for name, _b, _a, s in files
        ],
    }


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        # one line replaced in the middle: that line, past the 3 context lines before it
        ([("a.py", BEFORE, BEFORE.replace("line 10\n", "ten\n"), "applied")], ("a.py", 9, 10)),
        # two lines added after line 5: both selected
        ([("a.py", BEFORE, BEFORE.replace("line 5\n", "line 5\nnew\nnewer\n"), "applied")], ("a.py", 5, 7)),
        # lines deleted: a cursor where they were
        ([("a.py", BEFORE, BEFORE.replace("line 7\nline 8\n", ""), "applied")], ("a.py", 6, None)),
        # a new file: its first lines
        ([("new.py", "", "a = 1\nb = 2\n", "applied")], ("new.py", 0, 2)),
        # the first file was rejected: the second one's change
        (
            [
                ("a.py", BEFORE, BEFORE.replace("line 1\n", "one\n"), "rejected"),
                ("b.py", BEFORE, BEFORE.replace("line 20\n", "twenty\n"), "partial"),
            ],
            ("b.py", 19, 20),
        ),
        # a deleted file is not shown; the other one is
        (
            [("gone.py", BEFORE, "", "deleted"), ("b.py", BEFORE, BEFORE + "more\n", "applied")],
            ("b.py", 20, 21),
        ),
        # everything rejected: nothing to show
        ([("a.py", BEFORE, "changed\n", "rejected")], None),
    ],
)
def test_a_change_points_at_its_first_block_of_added_lines(
    tmp_path: Path, files: list[tuple[str, str, str, str]], expected: tuple[str, int, int | None] | None
) -> None:
    found = place("apply_patch", changed(tmp_path, *files), tmp_path)
    if expected is None:
        assert found is None
        return
    name, line, end = expected
    assert found == Place(tmp_path / name, line, 0, end)


def test_read_and_navigation_places(tmp_path: Path) -> None:
    read = {"path": str(tmp_path / "a.py"), "lines": 9, "from": 4, "to": 9, "truncated": False}
    assert place("read", read, tmp_path) == Place(tmp_path / "a.py", 3)
    assert place("read", {"entries": 3, "truncated": False}, tmp_path) is None  # a folder
    location = {"path": "pkg/b.py", "line": 2, "character": 5, "endLine": 2, "endCharacter": 9}
    target = {"path": "a.py", "line": 7, "character": 3, "name": "f"}
    assert place("lsp", {"locations": [location], "target": target}, tmp_path) == Place(
        tmp_path / "pkg/b.py", 1, 4, 1, 8
    )
    call = {"name": "g", "kind": "function", "path": "c.py", "line": 1, "character": 5, "fromPath": "d.py"}
    sites = [{"line": 9, "character": 2, "endLine": 9, "endCharacter": 3}]
    at_site = place("lsp", {"calls": [{**call, "fromRanges": sites}]}, tmp_path)
    assert at_site == Place(tmp_path / "d.py", 8, 1)
    at_call = place("lsp", {"calls": [{**call, "fromRanges": []}]}, tmp_path)
    assert at_call == Place(tmp_path / "c.py", 0, 4)
    assert place("lsp", {"locations": [], "target": target}, tmp_path) == Place(tmp_path / "a.py", 6, 2)
    assert place("grep", {"matches": 3}, tmp_path) is None
