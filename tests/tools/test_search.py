"""glob and grep against the real rg on real files in temporary workspaces (list, names, errors
and cancellation: test_search_list.py)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tools import _ripgrep as ripgrep
from tools import glob as glob_tool

from .conftest import Harness

pytestmark = pytest.mark.timeout(60)


def write(root: Path, name: str, text: str = "", mtime: int | None = None) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def paths(output: str) -> list[str]:
    """The result lines of a glob output (before the blank line that starts any note)."""
    return output.split("\n\n", maxsplit=1)[0].splitlines()


# glob


async def test_glob_sorts_newest_first(harness: Harness) -> None:
    write(harness.root, "old.py", mtime=1_000_000)
    write(harness.root, "pkg/new.py", mtime=3_000_000)
    write(harness.root, "mid.py", mtime=2_000_000)
    write(harness.root, "notes.txt", mtime=4_000_000)
    outcome = await harness.ok("glob", {"pattern": "*.py"})
    assert outcome.result is not None
    assert paths(outcome.result.output) == ["pkg/new.py", "mid.py", "old.py"]
    assert outcome.result.metadata == {"count": 3, "truncated": False}


async def test_glob_pattern_with_folder_and_path_param(harness: Harness) -> None:
    write(harness.root, "src/a/x.ts", mtime=2_000_000)
    write(harness.root, "src/b.ts", mtime=1_000_000)
    write(harness.root, "lib/c.ts")
    outcome = await harness.ok("glob", {"pattern": "src/**/*.ts"})
    assert outcome.result is not None
    assert paths(outcome.result.output) == ["src/a/x.ts", "src/b.ts"]
    inside = await harness.ok("glob", {"pattern": "*.ts", "path": "src"})
    assert inside.result is not None
    assert paths(inside.result.output) == ["src/a/x.ts", "src/b.ts"]  # still workspace-relative
    # "src/*.ts" is src's own files: it matched at any depth under src, as "src/**/*.ts"
    own = await harness.ok("glob", {"pattern": "src/*.ts"})
    assert own.result is not None and paths(own.result.output) == ["src/b.ts"]
    write(harness.root, "src/a/x.ts", "needle\n")
    write(harness.root, "src/b.ts", "needle\n")
    found = await harness.ok("grep", {"pattern": "needle", "include": "src/*.ts"})
    assert found.result is not None
    assert found.result.metadata["files"] == 1, found.result.output
    assert "src/b.ts" in found.result.output and "src/a/x.ts" not in found.result.output


async def test_glob_folder_wildcards_and_absolute_pattern(harness: Harness) -> None:
    write(harness.root, "pkg/a/tests/test_x.py", mtime=3_000_000)
    write(harness.root, "pkg/b/tests/test_y.py", mtime=2_000_000)
    write(harness.root, "pkg/b/deep/tests/test_z.py", mtime=1_000_000)
    write(harness.root, "pkg/b/test_w.py")
    one_level = await harness.ok("glob", {"pattern": "pkg/*/tests/test_*.py"})
    assert one_level.result is not None
    assert paths(one_level.result.output) == ["pkg/a/tests/test_x.py", "pkg/b/tests/test_y.py"]
    any_depth = await harness.ok("glob", {"pattern": "**/tests/*.{py,pyi}"})
    assert any_depth.result is not None
    assert len(paths(any_depth.result.output)) == 3
    absolute = await harness.ok("glob", {"pattern": str(harness.root / "pkg/b/**/*.py")})
    assert absolute.result is not None
    assert paths(absolute.result.output) == [
        "pkg/b/test_w.py",
        "pkg/b/tests/test_y.py",
        "pkg/b/deep/tests/test_z.py",
    ]
    escape = await harness.call("glob", {"pattern": "../*.py"})
    assert escape.error is not None and "must stay inside the folder" in escape.error


async def test_glob_caps_at_100_and_says_how_many(harness: Harness) -> None:
    for i in range(130):
        write(harness.root, f"d{i % 7}/f{i:03}.txt", mtime=1_000_000 + i)
    outcome = await harness.ok("glob", {"pattern": "*.txt"})
    assert outcome.result is not None
    shown = paths(outcome.result.output)
    assert len(shown) == 100
    assert shown[0] == "d3/f129.txt" and shown[-1] == "d2/f030.txt"
    assert "Showing 100 of 130 files" in outcome.result.output
    assert "Refine your pattern or path" in outcome.result.output
    assert outcome.result.metadata == {"count": 130, "truncated": True}


async def test_glob_keeps_the_newest_over_all_batches(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = [f"d{i % 9}/f{i:03}.txt" for i in range(400)]
    for i, name in enumerate(names):  # 8 files per mtime: ties are broken by path
        write(harness.root, name, mtime=1_000_000 + (i * 37) % 50)
    real = ripgrep.stream_rg

    async def in_small_batches(
        args: list[str],
        cwd: Path,
        abort: asyncio.Event,
        consume: Callable[[list[bytes]], None],
        end: bytes = b"\n",
    ) -> ripgrep.RgExit:
        def split(lines: list[bytes]) -> None:
            for start in range(0, len(lines), 7):
                consume(lines[start : start + 7])

        return await real(args, cwd, abort, split, end)

    monkeypatch.setattr(glob_tool, "stream_rg", in_small_batches)
    outcome = await harness.ok("glob", {"pattern": "*.txt"})
    assert outcome.result is not None
    expected = sorted(names, key=lambda name: (-(harness.root / name).stat().st_mtime_ns, name))
    assert paths(outcome.result.output) == expected[:100]
    assert outcome.result.metadata == {"count": 400, "truncated": True}


async def test_glob_no_match_and_bad_glob(harness: Harness) -> None:
    write(harness.root, "a.py")
    none = await harness.ok("glob", {"pattern": "*.rs"})
    assert none.result is not None and none.result.output == "No files found"
    bad = await harness.call("glob", {"pattern": "*.[ab"})
    assert bad.error is not None
    assert bad.error.startswith("Invalid glob '*.[ab': unclosed character class")


async def test_glob_path_must_be_a_folder(harness: Harness) -> None:
    write(harness.root, "a.py")
    outcome = await harness.call("glob", {"pattern": "*", "path": "a.py"})
    assert outcome.error == "a.py is a file, not a folder; glob's path must be a folder to search in."


@pytest.mark.parametrize(
    ("cpus", "cpu_max", "threads"),
    [
        (1, None, 1),
        (2, None, 1),
        (8, "max 100000", 7),
        (64, None, 11),  # rg's own default stops at 12
        (64, "400000 100000", 3),
        (64, "50000 100000", 1),
        (8, "garbage", 7),
    ],
)
def test_glob_leaves_one_cpu_for_its_stat_calls(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cpus: int, cpu_max: str | None, threads: int
) -> None:
    quota = tmp_path / "cpu.max"
    if cpu_max is not None:
        quota.write_text(f"{cpu_max}\n")
    monkeypatch.setattr(glob_tool, "_CPU_MAX", quota)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cpus)), raising=False)
    glob_tool.walker_threads.cache_clear()
    try:
        assert glob_tool.walker_threads() == threads
        assert f"--threads={threads}" in glob_tool.glob_args(ripgrep.file_filter("*.py", tmp_path))
    finally:
        glob_tool.walker_threads.cache_clear()


# ignore files and hidden files


@pytest.mark.parametrize("git_repo", [True, False], ids=["git-repo", "no-git"])
async def test_gitignore_respected_hidden_included_git_excluded(harness: Harness, git_repo: bool) -> None:
    if git_repo:
        git = await asyncio.create_subprocess_exec("git", "init", "-q", str(harness.root))
        assert await git.wait() == 0
    write(harness.root, ".gitignore", "generated/\n*.log\n")
    write(harness.root, "keep.py", "token\n")
    write(harness.root, ".hidden/conf.py", "token\n")
    write(harness.root, "generated/out.py", "token\n")
    write(harness.root, "debug.log", "token\n")
    (harness.root / ".git").mkdir(exist_ok=True)
    write(harness.root, ".git/info.py", "token\n")

    found = await harness.ok("glob", {"pattern": "*"})
    assert found.result is not None
    assert sorted(paths(found.result.output)) == [".gitignore", ".hidden/conf.py", "keep.py"]
    grep = await harness.ok("grep", {"pattern": "token"})
    assert grep.result is not None
    assert grep.result.metadata["files"] == 2
    assert ".hidden/conf.py:" in grep.result.output and "keep.py:" in grep.result.output
    # A name pattern must not bring back what .gitignore excludes (rg's --glob would).
    logs = await harness.ok("glob", {"pattern": "*.log"})
    assert logs.result is not None and logs.result.output == "No files found"
    in_logs = await harness.ok("grep", {"pattern": "token", "include": "*.log"})
    assert in_logs.result is not None and in_logs.result.output == "No matches found"
    listing = await harness.ok("list", {})
    assert listing.result is not None
    tree = ["./", "  .hidden/", "    conf.py", "  .gitignore", "  keep.py"]
    assert listing.result.output.splitlines() == tree


# grep


async def test_grep_groups_per_file_newest_first(harness: Harness) -> None:
    write(harness.root, "old.py", "x = 1\nneedle = 2\nneedle again\n", mtime=1_000_000)
    write(harness.root, "src/new.py", "def f():\n    return needle\n", mtime=2_000_000)
    write(harness.root, "other.py", "nothing here\n")
    outcome = await harness.ok("grep", {"pattern": "needle"})
    assert outcome.result is not None
    assert outcome.result.output == (
        "Found 3 matches in 2 files\n\n"
        "src/new.py:\n  line 2:     return needle\n\n"
        "old.py:\n  line 2: needle = 2\n  line 3: needle again"
    )
    assert outcome.result.metadata == {"matches": 3, "files": 2, "truncated": False}


async def test_grep_include_filter_and_single_file(harness: Harness) -> None:
    write(harness.root, "a.py", "needle\n")
    write(harness.root, "b.ts", "needle\n")
    write(harness.root, "c.tsx", "needle\n")
    only_ts = await harness.ok("grep", {"pattern": "needle", "include": "*.{ts,tsx}"})
    assert only_ts.result is not None
    assert only_ts.result.metadata["files"] == 2
    assert "a.py" not in only_ts.result.output
    one = await harness.ok("grep", {"pattern": "needle", "path": "a.py"})
    assert one.result is not None
    assert one.result.output == "Found 1 match in 1 file\n\na.py:\n  line 1: needle"


async def test_grep_caps_at_100_matches(harness: Harness) -> None:
    for i in range(30):
        write(harness.root, f"f{i:02}.txt", "hit\n" * 5, mtime=1_000_000 + i)
    outcome = await harness.ok("grep", {"pattern": "hit"})
    assert outcome.result is not None
    output = outcome.result.output
    assert output.count("  line ") == 100
    assert output.index("f29.txt:") < output.index("f28.txt:")  # newest file first
    assert "f09.txt:" not in output  # 20 newest files x 5 lines fill the 100
    assert "Showing 100 of 150 matches" in output
    assert outcome.result.metadata == {"matches": 150, "files": 30, "truncated": True}


async def test_grep_no_match_is_not_an_error(harness: Harness) -> None:
    write(harness.root, "a.py", "hello\n")
    outcome = await harness.ok("grep", {"pattern": "absent"})
    assert outcome.result is not None
    assert outcome.result.output == "No matches found"


async def test_grep_invalid_regex_is_a_clear_error(harness: Harness) -> None:
    write(harness.root, "a.py", "call(x)\n")
    outcome = await harness.call("grep", {"pattern": "call(x"})
    assert outcome.error is not None
    assert outcome.error.startswith("Invalid regex 'call(x': unclosed group.")
    assert "escape special characters" in outcome.error
    assert "Traceback" not in outcome.error and "rg:" not in outcome.error


async def test_grep_skips_binary_files(harness: Harness) -> None:
    (harness.root / "blob.bin").write_bytes(b"needle\x00\x01\x02needle\n")
    write(harness.root, "text.txt", "needle\n")
    outcome = await harness.ok("grep", {"pattern": "needle"})
    assert outcome.result is not None
    assert "blob.bin" not in outcome.result.output
    assert outcome.result.metadata["files"] == 1
    # named as path: rg says it matches (it said "No matches found" then)
    explicit = await harness.ok("grep", {"pattern": "needle", "path": "blob.bin"})
    assert explicit.result is not None
    assert explicit.result.output.startswith("blob.bin is a binary file that matches; grep shows lines")
    missing = await harness.ok("grep", {"pattern": "absent", "path": "blob.bin"})
    assert missing.result is not None and missing.result.output == "No matches found"


async def test_grep_survives_non_utf8_and_cuts_long_lines(harness: Harness) -> None:
    (harness.root / "latin1.txt").write_bytes(b"caf\xe9 needle\n")
    write(harness.root, "long.js", "needle" + "x" * 5000 + "\n")
    outcome = await harness.ok("grep", {"pattern": "needle"})
    assert outcome.result is not None
    output = outcome.result.output
    assert "  line 1: caf\ufffd needle" in output
    long_line = next(line for line in output.splitlines() if line.startswith("  line 1: needlex"))
    assert len(long_line) == len("  line 1: ") + 2000 + len("...")


async def test_grep_pattern_starting_with_dash(harness: Harness) -> None:
    write(harness.root, "a.txt", "--verbose flag\n")
    outcome = await harness.ok("grep", {"pattern": "--verbose"})
    assert outcome.result is not None
    assert "line 1: --verbose flag" in outcome.result.output


def test_paths_rg_could_not_read_are_no_failure_of_the_search() -> None:
    # One unreadable folder turned "no matches" into "The search failed: ./locked: Permission
    # denied (os error 13)", though the rest of the tree was searched. (Tests run as root, who
    # reads every folder, so rg's exit is written here as rg gives it.)
    unreadable = "rg: ./locked: Permission denied (os error 13)\nrg: ./b/c: Permission denied (os error 13)\n"
    assert not ripgrep.RgExit(2, unreadable).failed and ripgrep.RgExit(2, unreadable).skipped_some
    assert ripgrep.RgExit(2, "rg: regex parse error:\n    (\n    ^\nerror: unclosed group\n").failed
    assert ripgrep.RgExit(2, unreadable + "rg: something else broke\n").failed
