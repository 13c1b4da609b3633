"""edit, multiedit and write through the wrapper: safety, file formats, permission and the sink."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from tools import Applied, FileChange, PermissionRequest, Reply, Rule, ToolContext
from tools.base import ToolError
from tools.changes import DiskChanges, commit

from .conftest import Harness

ONCE = Reply("once")


async def seen(h: Harness, name: str, data: bytes | str) -> Path:
    """A file in the workspace that the session has read."""
    path = h.root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    await h.ok("read", {"filePath": name})
    return path


def edit(name: str, old: str, new: str, **extra: object) -> dict[str, object]:
    return {"filePath": name, "oldString": old, "newString": new, **extra}


async def test_exact_edit_asks_once_with_the_diff_and_reports(h: Harness) -> None:
    path = await seen(h, "src/app.py", "def main():\n    print('hi')\n")
    h.human.replies = [ONCE]
    outcome = await h.ok("edit", edit("src/app.py", "print('hi')", "print('bye')"))
    assert path.read_text() == "def main():\n    print('bye')\n"
    [ask] = h.human.asked
    assert (ask.permission, ask.patterns, ask.always) == ("edit", ["src/app.py"], ["src/app.py"])
    diff = (
        "--- a/src/app.py\n+++ b/src/app.py\n@@ -1,2 +1,2 @@\n"
        " def main():\n-    print('hi')\n+    print('bye')\n"
    )
    assert ask.metadata["diff"] == diff
    assert ask.metadata["files"] == [
        {"path": str(path), "before": "def main():\n    print('hi')\n", "after": path.read_text()}
    ]
    assert outcome.result is not None
    assert outcome.result.output == "Edited src/app.py: replaced 1 occurrence (line 2)."
    assert outcome.result.metadata["diff"] == diff
    assert outcome.result.metadata["matcher"] == "exact"


async def test_fuzzy_match_is_named_and_reindented(h: Harness) -> None:
    path = await seen(h, "m.py", "class A:\n    def f(self):\n        return 1\n")
    h.human.replies = [ONCE]
    outcome = await h.ok("edit", edit("m.py", "def f(self):\n    return 1", "def f(self):\n    return 2"))
    assert path.read_text() == "class A:\n    def f(self):\n        return 2\n"
    assert outcome.result is not None
    assert outcome.result.metadata["matcher"] == "indentation-flexible"
    assert "matched by indentation-flexible" in outcome.result.output


async def test_refusals_leave_the_file_untouched(h: Harness) -> None:
    text = "def handler(event):\n    parse(event)\n    store(event)\n    return None\nx = 1\nx = 1\n"
    path = await seen(h, "h.py", text)
    weak = edit("h.py", "def handler(event):\n    validate(p)\n    enqueue(p)\n    return None", "pass")
    cases = {
        "oldString was not found in the file": weak,
        "matches 2 places, starting at lines 5, 6": edit("h.py", "x = 1", "x = 2"),
        "identical": edit("h.py", "x = 1", "x = 1"),
        "already exists and is not empty": edit("h.py", "", "new"),
        "is a directory": edit(".", "a", "b"),
        "File not found: nope.py. To create it, send an empty oldString": edit("nope.py", "a", "b"),
        "'a\\x00b' is no path: it holds a NUL character": edit("a\0b", "", "x"),  # was a ValueError
        "newdir/ names a folder (it ends in /)": edit("newdir/", "", "x"),  # made a file "newdir"
    }
    for expected, args in cases.items():
        outcome = await h.call("edit", args)
        assert outcome.error is not None and expected in outcome.error, (expected, outcome.error)
    assert path.read_text() == text and not (h.root / "newdir").exists()
    assert h.human.asked == []


async def test_create_with_empty_old_string_and_missing_folders(h: Harness) -> None:
    h.human.replies = [ONCE]
    await h.ok("edit", edit("new/pkg/mod.py", "", "VALUE = 1\n"))
    created = h.root / "new/pkg/mod.py"
    assert created.read_text() == "VALUE = 1\n"
    assert created.stat().st_mode & 0o777 == 0o666 & ~_umask()
    h.human.replies = [ONCE]  # the created file counts as read: edit it again at once
    await h.ok("edit", edit("new/pkg/mod.py", "1", "2"))
    assert created.read_text() == "VALUE = 2\n"


async def test_a_file_holding_only_a_bom_is_filled_with_its_bom_kept(h: Harness) -> None:
    """read calls it "(empty file)"; edit said it "already exists and is not empty"."""
    path = h.root / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbf")
    read = await h.ok("read", {"filePath": "bom.txt"})
    assert read.result is not None and "(empty file)" in read.result.output
    h.human.replies = [ONCE]
    await h.ok("edit", edit("bom.txt", "", "x = 1\n"))
    assert path.read_bytes() == b"\xef\xbb\xbfx = 1\n"


async def test_a_new_file_keeps_the_line_ending_its_content_uses(h: Harness) -> None:
    """A new file has no ending of its own to keep: CRLF content (a .bat, a CRLF project) stays
    CRLF, where changes to an existing file take that file's ending."""
    h.human.replies = [ONCE, ONCE, ONCE]
    await h.ok("write", {"filePath": "run.bat", "content": "@echo off\r\necho hi\r\n"})
    assert (h.root / "run.bat").read_bytes() == b"@echo off\r\necho hi\r\n"
    await h.ok("edit", edit("setup.cmd", "", "@echo off\r\nset X=1\r\n"))
    assert (h.root / "setup.cmd").read_bytes() == b"@echo off\r\nset X=1\r\n"
    await h.ok("write", {"filePath": "notes.txt", "content": "a\nb\n"})
    assert (h.root / "notes.txt").read_bytes() == b"a\nb\n"
    lf = await seen(h, "lf.txt", "one\ntwo\n")
    h.human.replies = [ONCE]
    await h.ok("write", {"filePath": "lf.txt", "content": "three\r\nfour\r\n"})
    assert lf.read_bytes() == b"three\nfour\n"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
async def test_owner_and_group_are_kept(h: Harness) -> None:
    other = await seen(h, "theirs.py", b"x = 1\n")
    os.chown(other, 4321, 4322)
    other.chmod(0o2755)  # set-group-id: kept although a change of owner clears it
    h.env.session.record_read(other)
    h.human.replies = [ONCE]
    await h.ok("edit", edit("theirs.py", "x = 1", "x = 2"))
    stat = other.stat()
    assert (stat.st_uid, stat.st_gid, stat.st_mode & 0o7777) == (4321, 4322, 0o2755)
    assert other.read_text() == "x = 2\n"


async def test_crlf_bom_latin1_and_mode_are_kept(h: Harness) -> None:
    crlf = await seen(h, "win.txt", b"\xef\xbb\xbfone\r\ntwo\r\nthree\r\n")
    crlf.chmod(0o755)
    h.human.replies = [ONCE]
    await h.ok("edit", edit("win.txt", "one\ntwo", "ONE\nTWO\nextra"))
    assert crlf.read_bytes() == b"\xef\xbb\xbfONE\r\nTWO\r\nextra\r\nthree\r\n"
    assert crlf.stat().st_mode & 0o777 == 0o755
    mixed = await seen(h, "mixed.txt", b"a\r\nb\nc\r\nd\n")
    h.human.replies = [ONCE]
    await h.ok("edit", edit("mixed.txt", "c", "C"))
    assert mixed.read_bytes() == b"a\r\nb\nC\r\nd\n"  # untouched lines keep their own endings
    latin = await seen(h, "l1.txt", "café = 1\nrest = 2\n".encode("latin-1"))
    h.human.replies = [ONCE]
    await h.ok("edit", edit("l1.txt", "rest = 2", "rest = 3"))
    assert latin.read_bytes() == "café = 1\nrest = 3\n".encode("latin-1")
    # a BOM its bytes do not fit (a Latin-1 byte after it): read and edited as Latin-1 (it was
    # a UnicodeDecodeError in read and in every edit tool)
    odd = await seen(h, "odd.txt", b"\xef\xbb\xbfcaf\xe9 = 1\nname = 'latin'\n")
    h.human.replies = [ONCE]
    await h.ok("edit", edit("odd.txt", "= 1", "= 2"))
    assert odd.read_bytes() == b"\xef\xbb\xbfcaf\xe9 = 2\nname = 'latin'\n"
    h.human.replies = [ONCE]
    await h.ok("write", {"filePath": "win.txt", "content": "x\ny\n"})
    assert crlf.read_bytes() == b"\xef\xbb\xbfx\r\ny\r\n"
    h.human.replies = [ONCE]  # content that starts with the BOM itself: still one BOM (it was two)
    await h.ok("write", {"filePath": "win.txt", "content": "\ufeffz\n"})
    assert crlf.read_bytes() == b"\xef\xbb\xbfz\r\n"


async def test_lines_a_change_keeps_keep_their_own_endings_in_a_mixed_file(h: Harness) -> None:
    # A patch's context line, the lines of a fuzzy span the model did not change, and the lines
    # write keeps took the file's usual ending (LF here); a changed line keeps its own, and only
    # an added line takes the usual one.
    path = await seen(h, "m.txt", b"a\r\nb\nc\r\nd\n  e\n")
    h.human.replies = [ONCE]
    patch = "*** Begin Patch\n*** Update File: m.txt\n@@\n b\n-c\n+C\n*** End Patch"
    await h.ok("apply_patch", {"patchText": patch})
    assert path.read_bytes() == b"a\r\nb\nC\r\nd\n  e\n"
    h.human.replies = [ONCE]
    outcome = await h.ok("edit", edit("m.txt", "d\ne", "d\nE"))  # line-trimmed: "  e" is indented
    assert outcome.result is not None and outcome.result.metadata["matcher"] == "line-trimmed"
    assert path.read_bytes() == b"a\r\nb\nC\r\nd\n  E\n"
    h.human.replies = [ONCE]
    await h.ok("write", {"filePath": "m.txt", "content": "a\nb\nC\nnew\nd\n  E\n"})
    assert path.read_bytes() == b"a\r\nb\nC\r\nnew\nd\n  E\n"


async def test_read_only_files_are_refused_untouched(h: Harness) -> None:
    locked_file = await seen(h, "gen.py", "a = 1\n")
    locked_file.chmod(0o444)
    for name, args in [
        ("edit", edit("gen.py", "a = 1", "a = 2")),
        ("write", {"filePath": "gen.py", "content": "a = 2\n"}),
        ("apply_patch", {"patchText": "*** Begin Patch\n*** Delete File: gen.py\n*** End Patch"}),
    ]:
        outcome = await h.call(name, args)
        assert outcome.error is not None and "gen.py is read-only (mode 444)" in outcome.error, name
    assert locked_file.read_text() == "a = 1\n" and h.human.asked == []
    locked_file.chmod(0o644)
    h.human.replies = [ONCE]
    await h.ok("edit", edit("gen.py", "a = 1", "a = 2"))
    assert locked_file.read_text() == "a = 2\n"


async def test_a_lone_cr_ends_a_line_for_edit_as_for_read(h: Harness) -> None:
    # read (like the language servers and VS Code) shows "a = 1\rb = 2" as two lines; the
    # oldString copied from it used to be "not found" however it was written.
    stray = await seen(h, "stray.py", b"a = 1\rb = 2\nc = 3\n")
    shown = await h.ok("read", {"filePath": "stray.py"})
    assert shown.result is not None and "     2\tb = 2\n     3\tc = 3" in shown.result.output
    h.human.replies = [ONCE]
    await h.ok("edit", edit("stray.py", "b = 2\nc = 3", "b = 20\nc = 30"))
    assert stray.read_bytes() == b"a = 1\rb = 20\nc = 30\n"  # the untouched break is kept
    old_mac = await seen(h, "mac.txt", b"one\rtwo\rthree\r")
    h.human.replies = [ONCE]
    await h.ok("edit", edit("mac.txt", "two\n", "TWO\nextra\n"))
    assert old_mac.read_bytes() == b"one\rTWO\rextra\rthree\r"  # new lines end as the file's do


async def test_read_before_write_and_outside_changes(h: Harness) -> None:
    path = h.root / "a.py"
    path.write_text("x = 1\n")
    unread = await h.call("edit", edit("a.py", "x = 1", "x = 2"))
    assert unread.error is not None and "you have not read it in this session" in unread.error
    overwrite = await h.call("write", {"filePath": "a.py", "content": "y\n"})
    assert overwrite.error is not None and "not read it" in overwrite.error
    await h.ok("read", {"filePath": "a.py"})
    stat = path.stat()
    path.write_text("x = 5\n")  # same size, and the mtime put back: only the content tells
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    changed = await h.call("edit", edit("a.py", "x = 5", "x = 6"))
    assert changed.error is not None and "changed on disk since you last read it" in changed.error
    assert path.read_text() == "x = 5\n"
    await h.ok("read", {"filePath": "a.py"})
    h.human.replies = [ONCE]
    await h.ok("edit", edit("a.py", "x = 5", "x = 6"))
    assert path.read_text() == "x = 6\n"


async def test_a_change_on_disk_during_the_ask_is_not_overwritten(h: Harness) -> None:
    path = await seen(h, "a.py", "x = 1\n")

    async def meanwhile(request: PermissionRequest) -> Reply:
        path.write_text("x = 1\ny = 2\n")  # the user saves the file while the ask is open
        return ONCE

    h.human.permission = meanwhile  # type: ignore[method-assign]
    outcome = await h.call("edit", edit("a.py", "x = 1", "x = 3"))
    assert (
        outcome.error is not None and "changed on disk while the change waited for approval" in outcome.error
    )
    assert path.read_text() == "x = 1\ny = 2\n"


async def test_concurrent_edits_to_one_file_both_land(h: Harness) -> None:
    path = await seen(h, "c.py", "".join(f"v{i} = {i}\n" for i in range(10)))
    h.human.replies = [ONCE] * 10
    outcomes = await asyncio.gather(
        *(
            h.call("edit", edit("c.py", f"v{i} = {i}\n", f"v{i} = {i + 100}\n"), f"call-{i}")
            for i in range(10)
        )
    )
    assert [o.error for o in outcomes] == [None] * 10
    assert path.read_text() == "".join(f"v{i} = {i + 100}\n" for i in range(10))


async def test_rejection_stops_or_carries_feedback(h: Harness) -> None:
    path = await seen(h, "a.py", "x = 1\n")
    h.human.replies = [Reply("reject", "use y instead")]
    outcome = await h.call("edit", edit("a.py", "x = 1", "x = 2"))
    assert outcome.error == "The user rejected edit a.py and said: use y instead"
    assert not outcome.stops_turn
    assert path.read_text() == "x = 1\n"
    silent = await h.call("edit", edit("a.py", "x = 1", "x = 2"))
    assert silent.stops_turn and path.read_text() == "x = 1\n"


async def test_outside_the_workspace_asks_external_directory_first(h: Harness, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "o.txt"
    outside.parent.mkdir()
    outside.write_text("a\n")
    h.human.replies = [ONCE, ONCE, ONCE, ONCE]
    await h.ok("read", {"filePath": str(outside)})
    await h.ok("edit", edit(str(outside), "a", "b"))
    assert [a.permission for a in h.human.asked] == ["external_directory", "external_directory", "edit"]
    assert h.human.asked[-1].patterns == [str(outside)]
    assert outside.read_text() == "b\n"


async def test_multiedit_applies_in_order_or_not_at_all(h: Harness) -> None:
    path = await seen(h, "m.py", "a = 1\nb = 2\nc = 3\n")
    failing = [
        {"oldString": "a = 1", "newString": "a = 10"},
        {"oldString": "b = 2", "newString": "b = 20"},
        {"oldString": "zzz", "newString": "y"},
    ]
    outcome = await h.call("multiedit", {"filePath": "m.py", "edits": failing})
    assert outcome.error is not None and outcome.error.startswith(
        "Edit 3 of 3 failed, so none was applied: m.py:"
    )
    assert path.read_text() == "a = 1\nb = 2\nc = 3\n"
    assert h.human.asked == []
    h.human.replies = [ONCE]
    chained = [
        {"oldString": "a = 1", "newString": "a = 10"},
        {"oldString": "a = 10\nb = 2", "newString": "a = 11\nb = 22"},
        {"oldString": "3", "newString": "33"},
    ]
    done = await h.ok("multiedit", {"filePath": "m.py", "edits": chained})
    assert path.read_text() == "a = 11\nb = 22\nc = 33\n"
    assert len(h.human.asked) == 1
    assert done.result is not None and done.result.output.startswith("Applied 3 edits to m.py:")


async def test_write_creates_replaces_and_refuses_a_no_op(h: Harness) -> None:
    h.human.replies = [ONCE, ONCE]
    await h.ok("write", {"filePath": "w/new.md", "content": "# hi\n"})
    assert (h.root / "w/new.md").read_text() == "# hi\n"
    assert h.human.asked[0].title == "Create w/new.md"
    await h.ok("write", {"filePath": "w/new.md", "content": "# bye\n"})
    assert (h.root / "w/new.md").read_text() == "# bye\n"
    same = await h.call("write", {"filePath": "w/new.md", "content": "# bye\n"})
    assert same.error is not None and "already holds exactly this content" in same.error


async def test_refused_in_binary_files(h: Harness) -> None:
    (h.root / "b.bin").write_bytes(b"\x00\x01binary")
    outcome = await h.call("edit", edit("b.bin", "binary", "text"))
    assert outcome.error is not None and "is a binary file" in outcome.error


class HalfAccepting:
    """An editor-like sink: the user keeps only the first changed line."""

    async def apply(self, ctx: ToolContext, changes: list[FileChange], title: str) -> list[Applied]:
        [change] = changes
        assert change.before is not None and change.after is not None
        kept = change.before.replace("a = 1", "a = 100")
        change.path.write_text(kept)
        return [Applied(change, kept, "partial", "kept the first hunk")]

    def unsaved(self, path: Path) -> str | None:
        return None

    def not_saved(self) -> list[Path]:
        return []


async def test_the_sink_decides_and_the_tool_reports_it(h: Harness) -> None:
    path = await seen(h, "p.py", "a = 1\nb = 2\n")
    h.env.changes = HalfAccepting()
    outcome = await h.ok(
        "multiedit",
        {
            "filePath": "p.py",
            "edits": [
                {"oldString": "a = 1", "newString": "a = 100"},
                {"oldString": "b = 2", "newString": "b = 200"},
            ],
        },
    )
    assert path.read_text() == "a = 100\nb = 2\n"
    assert outcome.result is not None
    assert "The change to p.py did not land as proposed: kept the first hunk." in outcome.result.output
    assert outcome.result.metadata["files"][0]["status"] == "partial"
    assert "+a = 100" in outcome.result.metadata["diff"] and "b = 200" not in outcome.result.metadata["diff"]
    again = await h.call("edit", edit("p.py", "b = 2", "b = 3"))  # not recorded as read: read again
    assert again.error is not None and "changed on disk" in again.error
    h.env.changes = DiskChanges()


async def test_text_the_file_cannot_hold_is_refused_before_the_ask(h: Harness) -> None:
    latin = await seen(h, "legacy.txt", b"caf\xe9 = 1\nprice = 0\n")
    out = await h.call("edit", edit("legacy.txt", "price = 0", "price = '€5'"))
    assert out.error is not None
    assert out.error.startswith(
        "legacy.txt is not UTF-8, so it is kept in Latin-1, which cannot hold '€' (U+20AC, line 2). "
        "Write it as an escape in the file's own language (e.g. \\u20ac)"
    )
    out = await h.call(
        "multiedit", {"filePath": "legacy.txt", "edits": [{"oldString": "1", "newString": "😀"}]}
    )
    assert out.error is not None and "cannot hold '😀' (U+1F600, line 1)" in out.error
    out = await h.call("write", '{"filePath": "new.txt", "content": "a\\nb\\ud800c"}')
    assert out.error is not None
    assert out.error.startswith("The new text of new.txt holds a lone surrogate '\\ud800' (U+D800, line 2)")
    patch = (
        "*** Begin Patch\n*** Add File: new/dir/a.txt\n+hello\n"
        "*** Update File: legacy.txt\n@@\n-price = 0\n+€\n*** End Patch"
    )
    out = await h.call("apply_patch", {"patchText": patch})
    assert out.error is not None and out.error.startswith("legacy.txt is not UTF-8")
    assert h.human.asked == []
    assert latin.read_bytes() == b"caf\xe9 = 1\nprice = 0\n"
    assert sorted(p.name for p in h.root.iterdir()) == ["legacy.txt"]


def test_a_failure_of_any_kind_while_writing_undoes_everything(tmp_path: Path) -> None:
    # A sink may hand commit text the encoding cannot hold (a reviewer's own edit): what was
    # staged or made for the other files goes, and the error is one the model can read.
    old = tmp_path / "old.txt"
    old.write_bytes(b"caf\xe9\n")
    changes = [
        FileChange(tmp_path / "new/dir/a.txt", None, "hello\n"),
        FileChange(old, "caf\xe9\n", "caf\xe9 €\n", encoding="latin-1"),
    ]
    with pytest.raises(ToolError, match=r"^Could not write the change: 'latin-1' codec can't encode"):
        commit(changes)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.txt"]
    assert old.read_bytes() == b"caf\xe9\n"


async def test_file_uris_and_windows_separators_name_the_workspace_file(harness: Harness) -> None:
    # Taken as written, these made write create a folder "file:" and a file named "sub\e.py".
    harness.env.permissions.rules.append(Rule("edit", "*", "allow"))
    root = harness.root
    await harness.ok("write", {"filePath": f"file://{root}/my%20notes.txt", "content": "a\n"})
    await harness.ok("write", {"filePath": "sub\\e.py", "content": "b\n"})
    assert sorted(os.listdir(root)) == ["my notes.txt", "sub"]
    assert (root / "sub/e.py").read_text() == "b\n"
    outcome = await harness.ok("read", {"filePath": "sub\\e.py"})
    assert outcome.result is not None and outcome.result.title == "sub/e.py"
    (root / "odd\\name.txt").write_text("c\n")  # a file really named so is still found
    outcome = await harness.ok("read", {"filePath": "odd\\name.txt"})
    assert outcome.result is not None and "c" in outcome.result.output
