"""apply_patch at the edges: a patch cut off before its end, an end-of-file chunk that is not at
the end, and a move to the file's own name."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import Reply

from .conftest import Harness

ONCE = Reply("once")


def seen(h: Harness, name: str, text: str) -> Path:
    path = h.root / name
    path.write_text(text)
    h.env.session.record_read(path)
    return path


async def test_a_patch_without_its_end_line_is_refused_as_cut_off(h: Harness) -> None:
    # A model's answer cut off at its output limit: the added file would have been written short.
    cut = "*** Begin Patch\n*** Add File: n.py\n+def f():\n+    return"
    outcome = await h.call("apply_patch", {"patchText": cut})
    assert outcome.error is not None and "ends without '*** End Patch' (after line 4)" in outcome.error
    assert not (h.root / "n.py").exists() and h.human.asked == []
    h.human.replies = [ONCE]
    await h.ok("apply_patch", {"patchText": cut + " 1\n*** End Patch"})
    assert (h.root / "n.py").read_text() == "def f():\n    return 1\n"


@pytest.mark.parametrize(
    "patch",
    [
        "*** Begin Patch\n*** Update File: f.txt\n@@\n x\n-y\n+z\n*** End of File\n*** End Patch",
        "--- a/f.txt\n+++ b/f.txt\n@@\n x\n-y\n+z\n\\ No newline at end of file\n",
    ],
    ids=["end-of-file marker", "no newline marker"],
)
async def test_an_end_of_file_chunk_that_is_not_at_the_end_must_fit_one_place(h: Harness, patch: str) -> None:
    # It went to the first of the two places (line 2), unasked which.
    path = seen(h, "f.txt", "x\ny\nx\ny\nend\n")
    outcome = await h.call("apply_patch", {"patchText": patch})
    assert outcome.error is not None and "its lines fit 2 places (starting at lines 1, 3)" in outcome.error
    assert path.read_text() == "x\ny\nx\ny\nend\n"
    path = seen(h, "f.txt", "a\nx\ny")  # at the end, it is the end's
    h.human.replies = [ONCE]
    await h.ok("apply_patch", {"patchText": patch})
    assert path.read_text() == "a\nx\nz"


async def test_a_move_to_the_files_own_name_is_an_update(h: Harness) -> None:
    # It was refused as "changed on disk while the change waited for approval".
    path = seen(h, "f.txt", "x = 1\n")
    h.human.replies = [ONCE]
    patch = "*** Begin Patch\n*** Update File: f.txt\n*** Move to: ./f.txt\n@@\n-x = 1\n+x = 2\n*** End Patch"
    outcome = await h.ok("apply_patch", {"patchText": patch})
    assert outcome.result is not None and outcome.result.output.startswith("Applied the patch:\n  M f.txt")
    assert path.read_text() == "x = 2\n"


async def test_a_chunk_that_repeats_its_at_at_line_starts_on_that_line(h: Harness) -> None:
    """Models write ``@@ def close(self):`` then `` def close(self):`` as the first context line:
    the chunk was looked for after the named line, so it changed the next ``close`` (B's)."""
    source = "class A:\n    def close(self):\n        self.f.close()\n\n\nclass B:\n"
    source += "    def close(self):\n        self.f.close()\n"
    path = seen(h, "x.py", source)
    patch = (
        "*** Begin Patch\n*** Update File: x.py\n@@     def close(self):\n     def close(self):\n"
        "         self.f.close()\n+        self.closed = True\n*** End Patch"
    )
    h.human.replies = [ONCE]
    await h.ok("apply_patch", {"patchText": patch})
    assert path.read_text() == source.replace(
        "self.f.close()\n", "self.f.close()\n        self.closed = True\n", 1
    )
    top = "*** Begin Patch\n*** Update File: x.py\n@@ class A:\n class A:\n"
    top += "-    def close(self):\n+    def shut(self):\n"
    h.human.replies = [ONCE]
    await h.ok("apply_patch", {"patchText": top + "*** End Patch"})
    assert path.read_text().startswith("class A:\n    def shut(self):\n")


TWINS = (
    "def load(path):\n    if not path:\n        return None\n    return read(path)\n\n\n"
    "def parse(text):\n    return tokens(text)\n\n\n"
    "def save(path):\n    if not path:\n        return None\n    return write(path)\n"
)


@pytest.mark.parametrize(
    ("patch", "said"),
    [
        (  # chunk 2 fits load (line 2) and save (line 12); only save is after chunk 1
            "*** Begin Patch\n*** Update File: m.py\n"
            "@@\n-    return tokens(text)\n+    return tokens(text.strip())\n"
            "@@\n     if not path:\n-        return None\n+        raise ValueError(path)\n*** End Patch",
            "m.py, chunk 2: its lines fit 2 places (starting at lines 2, 12)",
        ),
        (  # hunk 2 names line 2 (load): it went to save, the only place after hunk 1
            "--- a/m.py\n+++ b/m.py\n"
            "@@ -8 +8 @@\n-    return tokens(text)\n+    return tokens(text.strip())\n"
            "@@ -2,2 +2,2 @@\n     if not path:\n-        return None\n+        raise ValueError(path)\n",
            "m.py: hunk 2 (lines 2-3) comes before hunk 1 in the file",
        ),
    ],
)
async def test_a_chunk_that_also_fits_before_the_one_before_it_is_refused(
    h: Harness, patch: str, said: str
) -> None:
    path = seen(h, "m.py", TWINS)
    outcome = await h.call("apply_patch", {"patchText": patch})
    assert outcome.error is not None and said in outcome.error, outcome.error
    assert path.read_text() == TWINS and h.human.asked == []


async def test_a_chunk_whose_at_at_line_is_before_the_chunk_before_it_is_said_to_be_out_of_order(
    h: Harness,
) -> None:
    """The @@ line was said to be "not in the file": a model told so reads the file again."""
    path = seen(h, "f.py", "def a():\n    return 1\n\n\ndef b():\n    return 2\n")
    patch = (
        "*** Begin Patch\n*** Update File: f.py\n@@ def b():\n-    return 2\n+    return 20\n"
        "@@ def a():\n-    return 1\n+    return 10\n*** End Patch"
    )
    outcome = await h.call("apply_patch", {"patchText": patch})
    assert outcome.error is not None and path.read_text().endswith("return 2\n")
    assert "chunk 2: the line after @@ ('def a():') is line 1, before the lines the chunk before it" in (
        outcome.error
    )


@pytest.mark.parametrize(
    ("hunk", "content"),
    [
        ("@@ -0,0 +1,3 @@\n+a\n\n+c\n", "a\n\nc\n"),  # its blank line sent without the "+"
        ("@@ -0,0 +1,3 @@\n+a\n\n+c\n\\ No newline at end of file\n", "a\n\nc"),
        ("@@ -0,0 +1,2 @@\n+a\n+b\n", "a\nb\n"),
    ],
)
async def test_a_unified_diff_adds_a_file_with_every_line_its_hunk_counts(
    h: Harness, hunk: str, content: str
) -> None:
    h.human.replies = [ONCE]
    await h.ok("apply_patch", {"patchText": f"--- /dev/null\n+++ b/new.txt\n{hunk}"})
    assert (h.root / "new.txt").read_text() == content


GIT_MODES = (
    "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\nindex 1..2\n"
    "--- a/run.sh\n+++ b/run.sh\n@@ -1 +1 @@\n-echo 1\n+echo 2\n"
    "diff --git a/new.sh b/new.sh\nnew file mode 100755\nindex 0..3\n--- /dev/null\n+++ b/new.sh\n"
    "@@ -0,0 +1 @@\n+echo new\n"
    "diff --git a/plain.txt b/plain.txt\nnew file mode 100644\n"
    "--- /dev/null\n+++ b/plain.txt\n@@ -0,0 +1 @@\n+x\n"
)


async def test_git_mode_lines_are_said_to_be_not_applied(h: Harness) -> None:
    # They were dropped, and the result said only "Applied".
    run = seen(h, "run.sh", "echo 1\n")
    h.human.replies = [ONCE]
    outcome = await h.ok("apply_patch", {"patchText": GIT_MODES})
    assert run.read_text() == "echo 2\n" and (h.root / "new.sh").read_text() == "echo new\n"
    assert outcome.result is not None
    assert outcome.result.output.count("Not applied:") == 1, outcome.result.output
    assert (
        "Not applied: the mode 100755 of run.sh (chmod +x with bash, if it should run); the mode 100755 of "
        "new.sh (chmod +x with bash, if it should run) (apply_patch does not change file modes)."
    ) in outcome.result.output


async def test_a_patch_that_only_changes_a_mode_is_refused_saying_so(h: Harness) -> None:
    seen(h, "run.sh", "echo 1\n")
    patch = "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"
    outcome = await h.call("apply_patch", {"patchText": patch})
    assert outcome.error == (
        "The patch only changes file modes, which apply_patch does not do: "
        "the mode 100755 of run.sh (chmod +x with bash, if it should run)."
    )
    assert h.human.asked == []


async def test_messages_around_links_and_folders_say_what_is_there(h: Harness) -> None:
    (h.root / "gone").symlink_to("missing.txt")
    outcome = await h.call(
        "apply_patch", {"patchText": "*** Begin Patch\n*** Delete File: gone\n*** End Patch"}
    )
    assert outcome.error == (
        "Delete File gone: it is a symlink to missing.txt, which does not exist. "
        "To remove the link, run rm gone (bash)."
    )
    seen(h, "real.txt", "x = 1\n")
    (h.root / "alias.txt").symlink_to("real.txt")
    h.env.session.record_read(h.root / "alias.txt")
    (h.root / "sub").mkdir()
    into = "*** Begin Patch\n*** Update File: real.txt\n*** Move to: sub\n@@\n-x = 1\n+x = 2\n*** End Patch"
    outcome = await h.call("apply_patch", {"patchText": into})
    assert outcome.error == "Move to sub: that is a folder; name the file's new path in it."
    # A move to the link's own name is an update of the file it points to (it said a file was there).
    h.human.replies = [ONCE]
    own = "*** Begin Patch\n*** Update File: alias.txt\n*** Move to: alias.txt\n@@\n-x = 1\n+x = 2\n"
    own += "*** End Patch"
    await h.ok("apply_patch", {"patchText": own})
    assert (h.root / "real.txt").read_text() == "x = 2\n" and (h.root / "alias.txt").is_symlink()


async def test_git_sections_without_hunks_and_diffs_without_git_lines(h: Harness) -> None:
    # An empty new file has no hunk in git's diff (it was refused as a mode change, or dropped);
    # a diff without "diff --git" lines gave every file the first one's mode; an empty section
    # is still said to change nothing.
    h.human.replies = [ONCE]
    empty = "diff --git a/run.sh b/run.sh\nnew file mode 100755\nindex 0000000..e69de29\n"
    outcome = await h.ok("apply_patch", {"patchText": empty})
    assert (h.root / "run.sh").read_text() == "" and outcome.result is not None
    assert "Not applied: the mode 100755 of run.sh" in outcome.result.output
    seen(h, "a.txt", "a\n")
    seen(h, "b.txt", "b\n")
    bare = "new mode 100755\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n"
    bare += "--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-b\n+B\n"
    h.human.replies = [ONCE]
    outcome = await h.ok("apply_patch", {"patchText": bare})
    assert outcome.result is not None and "the mode 100755 of a.txt (" in outcome.result.output
    assert "b.txt (" not in outcome.result.output
    nothing = "*** Begin Patch\n*** Update File: a.txt\n*** End Patch"
    outcome = await h.call("apply_patch", {"patchText": nothing})
    assert outcome.error == "Update File a.txt: the patch changes nothing in it."
    link = "diff --git a/l b/l\nnew file mode 120000\n--- /dev/null\n+++ b/l\n@@ -0,0 +1 @@\n+a.txt\n"
    outcome = await h.call("apply_patch", {"patchText": link})
    assert outcome.error is not None and "makes l a symlink (mode 120000)" in outcome.error
    assert not (h.root / "l").exists()


BEGIN = "*** Begin Patch\n*** Update File: f.py\n{}*** End Patch"
UNIFIED = "--- a/f.py\n+++ b/f.py\n{}"


@pytest.mark.parametrize(
    ("text", "patch"),
    [
        # a blank '-' line the file lacks: y was appended at the end
        ("a\nb\n", BEGIN.format("@@\n-\n+y\n")),
        ("a\nb\n", UNIFIED.format("@@ -2,1 +2,1 @@\n-\n+y\n")),
        ("a\nb\nc\n", BEGIN.format("@@\n b\n-\n+y\n")),
        # a blank context line before added lines: a blank line was made where the file had none
        ("a\nb\n", BEGIN.format("@@\n a\n \n+c\n")),
        ("    pass\n\n\nx = 1\n", UNIFIED.format("@@ -1,3 +1,4 @@\n \n \n \n+y = 2\n")),
    ],
)
async def test_a_blank_line_the_file_lacks_is_not_dropped_from_a_chunk(
    h: Harness, text: str, patch: str
) -> None:
    path = seen(h, "f.py", text)
    outcome = await h.call("apply_patch", {"patchText": patch})
    assert outcome.error is not None and "these lines were not found in the file" in outcome.error
    assert "(a blank line: '')" in outcome.error
    assert path.read_text() == text


TWO = "def f():\n    x = 1\n    return x\n\n\ndef g():\n  x = 1\n  return x\n"


@pytest.mark.parametrize(
    "patch",
    [
        BEGIN.format("@@ def f():\n   x = 1\n-  return x\n+  return x + 1\n"),
        UNIFIED.format("@@ -2,2 +2,2 @@\n   x = 1\n-  return x\n+  return x + 1\n"),
    ],
    ids=["@@ line", "line number"],
)
async def test_an_exact_copy_further_away_does_not_win_over_the_place_named(h: Harness, patch: str) -> None:
    # g, whose lines the chunk's indentation matches, was changed, though f is the one named.
    path = seen(h, "f.py", TWO)
    outcome = await h.call("apply_patch", {"patchText": patch})
    assert outcome.error is not None
    assert "as written at line 7, and but for their whitespace at line 2" in outcome.error
    assert path.read_text() == TWO


async def test_a_repeated_hunk_is_not_applied_to_the_next_copy(h: Harness) -> None:
    path = seen(h, "f.py", "x = 1\ny = 2\nz = 0\nx = 1\ny = 2\n")
    hunk = "@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 3\n"
    outcome = await h.call("apply_patch", {"patchText": UNIFIED.format(hunk + hunk)})
    assert (
        outcome.error is not None
        and "hunk 2 repeats lines hunk 1 already changed (lines 1-2)" in outcome.error
    )
    assert path.read_text() == "x = 1\ny = 2\nz = 0\nx = 1\ny = 2\n"


async def test_a_hunk_header_that_does_not_count_its_lines_names_no_line(h: Harness) -> None:
    # A placeholder header: f was changed, the copy nearest "line 1", though g fits as well.
    text = "def f():\n    a = 1\n    return None\n\n\ndef g():\n    a = 1\n    return None\n"
    path = seen(h, "f.py", text)
    hunk = "@@ -1,1 +1,1 @@\n     a = 1\n-    return None\n+    return 0\n"
    outcome = await h.call("apply_patch", {"patchText": UNIFIED.format(hunk)})
    assert outcome.error is not None and "its lines fit 2 places (starting at lines 2, 7)" in outcome.error
    assert path.read_text() == text
    h.human.replies = [ONCE]  # counted, the same line is the hunk's
    await h.ok("apply_patch", {"patchText": UNIFIED.format(hunk.replace("-1,1 +1,1", "-2,2 +2,2"))})
    assert path.read_text() == text.replace("return None", "return 0", 1)


async def test_the_closest_fit_in_the_block_an_at_at_line_names_is_taken(h: Harness) -> None:
    # Refused: "but for their whitespace at line 3", though line 4 is the chunk's exactly.
    path = seen(h, "f.py", "def handle(x):\n    if x:\n        return None\n    return None\n")
    h.human.replies = [ONCE]
    await h.ok(
        "apply_patch", {"patchText": BEGIN.format("@@ def handle(x):\n-    return None\n+    return x\n")}
    )
    assert path.read_text() == "def handle(x):\n    if x:\n        return None\n    return x\n"


async def test_a_hunk_header_a_line_off_in_its_counts_still_names_its_line(h: Harness) -> None:
    block = "def a():\n    x = 1\n    y = 2\n    return x\n"
    text = block + "".join(f"z{i} = {i}\n" for i in range(31)) + block
    path = seen(h, "f.py", text)
    h.human.replies = [ONCE]
    hunk = "@@ -36,5 +36,5 @@\n def a():\n     x = 1\n-    y = 2\n+    y = 3\n"  # 3 old lines, not 5
    await h.ok("apply_patch", {"patchText": UNIFIED.format(hunk)})
    assert path.read_text() == block + text[len(block) :].replace("y = 2", "y = 3")
