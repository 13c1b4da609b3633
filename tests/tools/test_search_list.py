"""list against the real rg, and what glob, grep and list share: names that are not UTF-8, the
workspace boundary, errors and cancellation."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import BinaryIO

import psutil
import pytest

from tests.fifos import opened_for_writing
from tools import OutputLimits, Reply, Rule, ToolContext, ToolError, execute
from tools import _ripgrep as ripgrep

from .conftest import Harness
from .test_search import paths, write

pytestmark = pytest.mark.timeout(60)


def rg_children() -> list[psutil.Process]:
    return [p for p in psutil.Process().children(recursive=True) if p.name() == "rg"]


# list


async def test_list_ignores_noise_and_user_patterns(harness: Harness) -> None:
    for name in [
        "src/app.py",
        "src/util/helpers.py",
        "README.md",
        "node_modules/left-pad/index.js",
        "pkg/__pycache__/app.cpython-311.pyc",
        ".venv/bin/python",
        "build/out.o",
        "server.log",
        "fixtures/big.json",
    ]:
        write(harness.root, name)
    outcome = await harness.ok("list", {"ignore": ["*.log", "fixtures/"]})
    assert outcome.result is not None
    assert outcome.result.output.splitlines() == [
        "./",
        "  src/",
        "    util/",
        "      helpers.py",
        "    app.py",
        "  README.md",
    ]
    assert outcome.result.metadata == {"count": 5, "files": 3, "truncated": False}


async def test_list_caps_breadth_first(harness: Harness) -> None:
    for i in range(5):
        for j in range(40):
            write(harness.root, f"dir{i}/file{j:02}.txt")
    write(harness.root, "top.txt")
    outcome = await harness.ok("list", {})
    assert outcome.result is not None
    lines = outcome.result.output.splitlines()
    assert lines[:3] == ["./", "  dir0/", "    file00.txt"]
    assert "  top.txt" in lines  # the top level is complete
    # 6 top-level entries, then dir0 and dir1 in full, then 14 of dir2: 100
    assert lines.count("    ... 26 more entries") == 1
    assert lines.count("    ... 40 more entries") == 2  # dir3 and dir4
    assert outcome.result.metadata == {"count": 206, "files": 201, "truncated": True}
    assert "(Showing 100 of 206 entries." in outcome.result.output


async def test_list_subfolder_is_workspace_relative(harness: Harness) -> None:
    write(harness.root, "src/pkg/mod.py")
    outcome = await harness.ok("list", {"path": "src"})
    assert outcome.result is not None
    assert outcome.result.output.splitlines() == ["src/", "  pkg/", "    mod.py"]


# permissions, errors, cancellation


def make(root: Path, name: bytes, text: bytes = b"") -> Path:
    """A file whose name is any bytes (Linux allows names that are not UTF-8)."""
    path = Path(os.fsdecode(os.path.join(os.fsencode(root), name)))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text)
    return path


async def test_names_that_are_not_utf8_are_escaped_and_read_takes_them_back(harness: Harness) -> None:
    # They came out as U+FFFD ("caf\ufffd.py"), which names no file: the model could not read them.
    root = harness.root
    make(root, b"caf\xe9.py", b"needle = 1\n")
    make(root, b"d\xff/x.py", b"needle = 2\n")
    found = await harness.ok("glob", {"pattern": "**/*.py"})
    assert found.result is not None
    assert sorted(paths(found.result.output)) == ["caf\\xe9.py", "d\\xff/x.py"]
    grep = await harness.ok("grep", {"pattern": "needle"})
    assert grep.result is not None and "\ufffd" not in grep.result.output
    assert "caf\\xe9.py:\n  line 1: needle = 1" in grep.result.output
    assert "d\\xff/x.py:\n  line 1: needle = 2" in grep.result.output
    listing = await harness.ok("list", {})
    assert listing.result is not None
    assert listing.result.output.splitlines()[1:] == ["  d\\xff/", "    x.py", "  caf\\xe9.py"]
    for name, number in (("caf\\xe9.py", 1), ("d\\xff/x.py", 2)):
        read = await harness.ok("read", {"filePath": name})
        assert read.result is not None and read.result.title == name
        assert read.result.output.startswith(f"     1\tneedle = {number}\n")
    inside = await harness.ok("grep", {"pattern": "needle", "path": "d\\xff"})
    assert inside.result is not None and "d\\xff/x.py:" in inside.result.output
    # A read rule names them as they are shown.
    harness.env.permissions.rules.append(Rule("read", "d\\xff/*", "deny"))
    found = await harness.ok("glob", {"pattern": "**/*.py"})
    assert found.result is not None and paths(found.result.output) == ["caf\\xe9.py"]
    denied = await harness.call("read", {"filePath": "d\\xff/x.py"})
    assert denied.error is not None and "d\\xff/x.py" in denied.error


@pytest.mark.parametrize(
    ("tool", "args"),
    [("glob", {"pattern": "*"}), ("grep", {"pattern": "x"}), ("list", {})],
)
async def test_outside_workspace_asks_external_directory(
    harness: Harness, tmp_path: Path, tool: str, args: dict[str, str]
) -> None:
    outside = tmp_path / "elsewhere"
    write(outside, "x.txt", "x\n")
    rejected = await harness.call(tool, {**args, "path": str(outside)})
    assert rejected.error is not None and "rejected" in rejected.error
    assert [ask.permission for ask in harness.human.asked] == ["external_directory"]

    harness.human.replies.append(Reply("once"))
    allowed = await harness.ok(tool, {**args, "path": str(outside)})
    assert allowed.result is not None
    assert str(outside / "x.txt") in allowed.result.output or "x.txt" in allowed.result.output


async def test_unknown_parameter_is_rejected(harness: Harness) -> None:
    outcome = await harness.call("grep", {"pattern": "x", "glob": "*.py"})
    assert outcome.error is not None and "glob" in outcome.error


async def test_missing_rg_is_a_clear_error(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ripgrep, "_locate", lambda: None)
    outcome = await harness.call("glob", {"pattern": "*"})
    assert outcome.error is not None and outcome.error.startswith("ripgrep (rg) is not installed")


async def _rg_opened(fifo: Path) -> BinaryIO:
    """Returns once rg has opened ``fifo`` for reading; rg then waits for data that never comes."""
    return await opened_for_writing(fifo)


async def _others_done() -> None:
    """Until every other task (the cancelled tool call, which reaps rg on its way out) is done."""
    others = asyncio.all_tasks() - {asyncio.current_task()}
    if others:
        await asyncio.wait(others, timeout=20)


@pytest.mark.parametrize("how", ["abort", "cancel"])
async def test_cancellation_kills_rg(harness: Harness, how: str) -> None:
    fifo = harness.root / "pipe"
    os.mkfifo(fifo)
    ctx = ToolContext(harness.env, "call-cancel")
    call = asyncio.ensure_future(execute(harness.registry, "grep", {"pattern": "x", "path": "pipe"}, ctx))
    with await _rg_opened(fifo):
        assert len(rg_children()) == 1
        if how == "abort":
            ctx.abort.set()
            outcome = await asyncio.wait_for(call, 20)
            assert outcome.error == "Cancelled by the user."
        else:
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
        await _others_done()
        assert rg_children() == []


async def test_stream_abort_kills_rg(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    abort = asyncio.Event()
    run = asyncio.ensure_future(ripgrep.stream_rg(["x", "pipe"], tmp_path, abort, lambda lines: None))
    with await _rg_opened(fifo):
        abort.set()
        with pytest.raises(ToolError, match="cancelled"):
            await asyncio.wait_for(run, 20)
        assert rg_children() == []


# Outputs a tool caps by count are capped by size too: a hundred paths can be 100 KB.


@pytest.fixture
def long_paths(harness: Harness) -> Path:
    """100 matching files with 850-byte paths, each with one 390-byte line holding NEEDLE."""
    deep = harness.root / ("d" * 200) / ("e" * 200) / ("f" * 200)
    for i in range(100):
        write(deep, f"{i:03d}_" + "n" * 240, "NEEDLE " + "z" * 380 + "\n", mtime=1_000_000 + i)
    return deep


async def test_grep_counts_each_file_header_against_the_byte_limit(
    harness: Harness, long_paths: Path
) -> None:
    outcome = await harness.ok("grep", {"pattern": "NEEDLE"})
    assert outcome.result is not None
    output = outcome.result.output
    assert len(output.encode()) <= harness.env.limits.max_bytes
    shown = output.count("  line 1: NEEDLE")
    assert 30 < shown < 100  # 1.25 KB a match with its header: about 40 fit
    assert f"Showing {shown} of 100 matches" in output
    assert outcome.result.metadata["truncated"] is True and "outputPath" not in outcome.result.metadata


async def test_glob_shows_as_many_long_paths_as_fit(harness: Harness, long_paths: Path) -> None:
    outcome = await harness.ok("glob", {"pattern": "*"})
    assert outcome.result is not None
    output = outcome.result.output
    assert len(output.encode()) <= harness.env.limits.max_bytes
    shown = paths(output)
    assert 50 < len(shown) < 100 and shown[0].endswith("099_" + "n" * 240)  # newest first
    assert f"Showing {len(shown)} of 100 files" in output
    assert outcome.result.metadata == {"count": 100, "truncated": True}


async def test_read_of_a_folder_lists_as_many_long_names_as_fit(harness: Harness) -> None:
    for i in range(500):
        write(harness.root, f"flat/{i:03d}_" + "w" * 200)
    outcome = await harness.ok("read", {"filePath": "flat"})
    assert outcome.result is not None
    output = outcome.result.output
    assert len(output.encode()) <= harness.env.limits.max_bytes
    names = output.splitlines()[:-1]
    assert 200 < len(names) < 500 and names[0] == "000_" + "w" * 200
    assert output.endswith(f"\n... and {500 - len(names)} more entries (use glob or list to narrow down)")
    assert outcome.result.metadata == {"entries": 500, "truncated": True}


async def test_list_shows_fewer_entries_when_their_lines_pass_the_byte_limit(harness: Harness) -> None:
    harness.env.limits = OutputLimits(max_bytes=8 * 1024)
    for i in range(60):
        write(harness.root, f"{i:02d}_" + "w" * 200)
    outcome = await harness.ok("list", {})
    assert outcome.result is not None
    output = outcome.result.output
    assert len(output.encode()) <= 8 * 1024
    listed = [line for line in output.splitlines() if line.startswith("  ") and "w" * 200 in line]
    assert 20 < len(listed) < 60
    assert f"(Showing {len(listed)} of 60 entries." in output
    assert outcome.result.metadata == {"count": 60, "files": 60, "truncated": True}
