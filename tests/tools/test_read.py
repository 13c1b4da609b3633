"""read, todowrite/todoread, batch and question through the wrapper."""

from __future__ import annotations

import asyncio
import os
import tracemalloc
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lsp_bridge.documents import lsp_lines
from tools import Reply, Rule

from .conftest import Harness, make_harness

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000100e221bc330000000049454e44ae426082"
)


async def test_numbered_lines_offset_limit_and_footer(harness: Harness) -> None:
    (harness.root / "a.py").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    outcome = await harness.ok("read", {"filePath": "a.py", "offset": 3, "limit": 2})
    assert outcome.result is not None
    assert outcome.result.output == (
        "     3\tline 3\n     4\tline 4\n\n(Showing lines 3-4 of 10. Use offset=5 to continue reading.)"
    )
    whole = await harness.ok("read", {"filePath": str(harness.root / "a.py")})
    assert whole.result is not None and whole.result.output.endswith(
        "    10\tline 10\n\n(End of file: 10 lines.)"
    )
    assert harness.env.session.last_read(harness.root / "a.py") is not None


async def test_lines_break_where_editors_grep_and_servers_break_them(harness: Harness) -> None:
    # A form feed (a page break) and U+2028 inside lines: str.splitlines would break there too.
    (harness.root / "a.py").write_text("a = 1\n\x0c\nb = 2  # \u2028 x\nc = 3\n")
    outcome = await harness.ok("read", {"filePath": "a.py"})
    assert outcome.result is not None
    assert outcome.result.output.endswith("     4\tc = 3\n\n(End of file: 4 lines.)"), outcome.result.output
    found = await harness.ok("grep", {"pattern": "c = 3"})
    assert found.result is not None and found.result.output.endswith("a.py:\n  line 4: c = 3")


async def test_big_files_are_read_aside_and_huge_ones_refused(harness: Harness) -> None:
    big = "".join(f"row {i}\n" for i in range(300_000))  # ~2.7 MB: read in a worker thread
    (harness.root / "big.log").write_text(big)
    outcome = await harness.ok("read", {"filePath": "big.log", "offset": 299_999})
    assert outcome.result is not None
    assert outcome.result.output == "299999\trow 299998\n300000\trow 299999\n\n(End of file: 300000 lines.)"
    harness.human.replies = [Reply("once")]
    edited = await harness.ok(
        "edit", {"filePath": "big.log", "oldString": "row 299999\n", "newString": "end\n"}
    )
    assert edited.result is not None  # the read counted as seen
    assert (harness.root / "big.log").read_text().endswith("row 299998\nend\n")
    with (harness.root / "huge.log").open("wb") as huge:
        huge.truncate(65 * 1024 * 1024)  # sparse: nothing is written
    refused = await harness.call("read", {"filePath": "huge.log"})
    assert refused.error is not None and "read shows files up to 67108864 bytes. Use grep" in refused.error
    os.mkfifo(harness.root / "pipe")
    os.mkfifo(harness.root / "shot.png")  # an attachment's name does not make it a file
    for name, tool, args in (
        ("pipe", "read", {}),
        ("shot.png", "read", {}),
        ("pipe", "edit", {"oldString": "a", "newString": "b"}),
    ):
        fifo = await harness.call(tool, {"filePath": name, **args})  # refused, not waiting for a writer
        assert fifo.error is not None and "not a regular file" in fifo.error, fifo.error


async def test_utf16_and_latin1_files_read_as_the_edit_tools_match_them(harness: Harness) -> None:
    (harness.root / "res.txt").write_bytes("\ufeffname = Zoë\r\ncount = 2\r\n".encode("utf-16-le"))
    utf16 = await harness.ok("read", {"filePath": "res.txt"})  # NUL bytes, but a UTF-16 BOM: text
    assert utf16.result is not None and utf16.result.output.startswith(
        "     1\tname = Zoë\n     2\tcount = 2\n"
    )
    assert utf16.result.metadata["encoding"] == "utf-16-le"
    (harness.root / "old.txt").write_bytes(b"caf\xe9 = 1\n")
    await harness.ok("read", {"filePath": "old.txt"})
    harness.human.replies = [Reply("once"), Reply("once")]
    for name, old, new in (("res.txt", "Zoë", "Zoé"), ("old.txt", "caf\xe9 = 1", "caf\xe9 = 2")):
        edited = await harness.ok("edit", {"filePath": name, "oldString": old, "newString": new})
        assert edited.result is not None  # what read showed is what the edit matched
    assert (harness.root / "res.txt").read_bytes().decode("utf-16") == "name = Zoé\r\ncount = 2\r\n"
    assert (harness.root / "old.txt").read_bytes() == b"caf\xe9 = 2\n"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=st.text(alphabet="ab\r\n\x0c\u2028", max_size=40),
    offset=st.integers(1, 12),
    limit=st.integers(1, 12),
)
async def test_a_window_of_lines_is_the_same_window_of_lsp_lines(
    harness: Harness, text: str, offset: int, limit: int
) -> None:
    (harness.root / "w.txt").write_bytes(text.encode())
    lines = lsp_lines(text)
    outcome = await harness.call("read", {"filePath": "w.txt", "offset": offset, "limit": limit})
    if lines and offset > len(lines):
        assert outcome.error == f"offset {offset} is past the end of w.txt, which has {len(lines)} lines."
        return
    assert outcome.result is not None
    shown = [
        row.split("\t", 1)[1] for row in outcome.result.output.split("\n\n(")[0].split("\n") if "\t" in row
    ]
    assert shown == lines[offset - 1 : offset - 1 + limit]
    assert outcome.result.metadata["lines"] == len(lines)


async def test_a_few_lines_of_a_file_of_millions_cost_little_memory(harness: Harness) -> None:
    (harness.root / "many.txt").write_bytes(b"x\n" * 2_000_000)  # 4 MB, two million lines
    tracemalloc.start()
    try:
        outcome = await harness.ok("read", {"filePath": "many.txt", "offset": 1000, "limit": 5})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert outcome.result is not None
    assert outcome.result.output.endswith(
        "(Showing lines 1000-1004 of 2000000. Use offset=1005 to continue reading.)"
    )
    assert peak < 20 * 1024 * 1024, peak  # a string per line would be over 100 MB


async def test_limits_long_lines_and_bytes(harness: Harness) -> None:
    (harness.root / "wide.txt").write_text("x" * 5000 + "\nshort\n")
    outcome = await harness.ok("read", {"filePath": "wide.txt"})
    assert outcome.result is not None
    first = outcome.result.output.split("\n")[0]
    assert first == "     1\t" + "x" * 2000 + "... (line cut at 2000 characters)"
    # Nothing said how to see the rest of a cut line (offset and limit count lines).
    assert outcome.result.output.endswith(
        "(End of file: 2 lines.)\n(1 line was cut at 2000 characters; read cannot show the rest. "
        "To see more of line 1: bash `sed -n 1p wide.txt | cut -c 2001-6000`, or grep for the text you need.)"
    )
    assert outcome.result.metadata["truncated"] is True
    (harness.root / "big.txt").write_text("".join(f"{i:0100d}\n" for i in range(3000)))
    big = await harness.ok("read", {"filePath": "big.txt"})
    assert big.result is not None
    shown = big.result.metadata["to"]
    assert 400 < shown < 2000  # the 50 KB cap stops it before the 2000-line limit
    assert f"Use offset={shown + 1} to continue" in big.result.output
    assert len(big.result.output.encode()) <= 50 * 1024 + 200
    # counted in bytes: a CJK file came back three times over the cap
    (harness.root / "wide.txt").write_text("".join("漢字" * 40 + "\n" for _ in range(3000)))
    cjk = await harness.ok("read", {"filePath": "wide.txt"})
    assert cjk.result is not None and 50 * 1024 - 300 < len(cjk.result.output.encode()) <= 50 * 1024 + 200
    past = await harness.call("read", {"filePath": "big.txt", "offset": 5000})
    assert past.error == "offset 5000 is past the end of big.txt, which has 3000 lines."


async def test_a_missing_file_suggests_no_file_the_read_rules_deny(tmp_path: Path) -> None:
    # "File not found: secrets/prod.tx. Did you mean: secrets/prod.txt": a denied file's name.
    root = tmp_path / "ws"
    (root / "secrets").mkdir(parents=True)
    (root / "secrets/prod.txt").write_text("x\n")
    (root / "secrets/prod.txt.example").write_text("x\n")
    h = make_harness(root, tmp_path / "data", [Rule("read", "secrets/prod.txt", "deny")])
    outcome = await h.call("read", {"filePath": "secrets/prod.tx"})
    assert outcome.error is not None and outcome.error.startswith("File not found: secrets/prod.tx\n")
    assert "secrets/prod.txt.example" in outcome.error and "secrets/prod.txt\n" not in outcome.error + "\n"


async def test_text_in_an_8_bit_encoding_is_text_and_random_bytes_are_not(harness: Harness) -> None:
    # Russian in CP1251, Chinese in GBK, or UTF-8 with one stray byte were "a binary file":
    # every byte from 0x80 up counted against them, and the edit tools need a read first.
    russian = "Привет, мир! Это текстовый файл.\n" * 20
    for name, data in {
        "cp1251.txt": russian.encode("cp1251"),
        "gbk.txt": ("你好世界。这是一个文本文件。\n" * 20).encode("gbk"),
        "stray.txt": russian.encode() + b"\xff\n",
    }.items():
        (harness.root / name).write_bytes(data)
        outcome = await harness.call("read", {"filePath": name})
        assert outcome.error is None, (name, outcome.error)
    noise = bytes((i * 7919 + 13) % 255 + 1 for i in range(4000))  # no NUL, not UTF-8
    (harness.root / "noise.dat").write_bytes(noise)
    refused = await harness.call("read", {"filePath": "noise.dat"})
    assert refused.error is not None and "binary" in refused.error


async def test_what_the_file_system_refuses_is_said_as_it_is_not_as_a_fault(harness: Harness) -> None:
    # "The read tool failed unexpectedly (RuntimeError: Symlink loop ...). This is a fault in
    # lspilot", and the same for a path through a file or a name too long.
    (harness.root / "loop").symlink_to("loop")
    (harness.root / "file.txt").write_text("x\n")
    cases = {
        "loop": "Too many levels of symbolic links: loop",
        "file.txt/child": "Not a directory: file.txt/child",
        "n" * 300: f"File name too long: {'n' * 300}",
    }
    for name, said in cases.items():
        outcome = await harness.call("read", {"filePath": name})
        assert outcome.error == said
    listed = await harness.call("list", {"path": "loop"})
    assert listed.error is not None and "fault in lspilot" not in listed.error


async def test_directories_binaries_images(harness: Harness) -> None:
    (harness.root / "pkg").mkdir()
    (harness.root / "pkg" / "mod.py").write_text("")
    (harness.root / "z.txt").write_text("")
    listing = await harness.ok("read", {"filePath": "."})
    assert listing.result is not None and listing.result.output == "pkg/\nz.txt"
    (harness.root / "blob.bin").write_bytes(b"\x7fELF\x00\x01\x02" * 100)
    binary = await harness.call("read", {"filePath": "blob.bin"})
    assert binary.error is not None and binary.error.startswith("blob.bin is a binary file (700 bytes)")
    (harness.root / "latin1.txt").write_bytes("caf\xe9 cr\xe8me\n".encode("latin-1"))
    latin = await harness.ok("read", {"filePath": "latin1.txt"})  # mostly text: shown, not refused
    assert latin.result is not None and latin.result.output == (
        "     1\tcaf\xe9 cr\xe8me\n\n(End of file: 1 line.)\n"
        "(latin1.txt is not valid UTF-8 and is shown as Latin-1; the edit tools keep it so.)"
    )
    (harness.root / "dot.png").write_bytes(PNG)
    image = await harness.ok("read", {"filePath": "dot.png"})
    assert image.result is not None
    [attachment] = image.result.attachments
    assert (attachment.mime, attachment.data, attachment.filename) == ("image/png", PNG, "dot.png")


async def test_missing_file_suggests_close_names(harness: Harness) -> None:
    (harness.root / "src" / "deep").mkdir(parents=True)
    (harness.root / "src" / "geometry.py").write_text("")
    (harness.root / "src" / "deep" / "config.toml").write_text("")
    (harness.root / "README.md").write_text("")
    outcome = await harness.call("read", {"filePath": "src/geometri.py"})
    assert outcome.error is not None
    assert outcome.error.startswith(
        "File not found: src/geometri.py\nDid you mean one of these?\n  src/geometry.py"
    )
    elsewhere = await harness.call("read", {"filePath": "config.toml"})
    assert elsewhere.error is not None and "  src/deep/config.toml" in elsewhere.error
    nothing = await harness.call("read", {"filePath": "qqqqqqqq.zzz"})
    assert nothing.error == "File not found: qqqqqqqq.zzz"


async def test_names_that_are_not_utf8_round_trip_through_read_and_edit(harness: Harness) -> None:
    # A folder listing held lone surrogates ("caf\udce9.py"), which no JSON or UTF-8 carries, and
    # no way to name such a file back.
    root = os.fsencode(harness.root)
    for name in (b"caf\xe9.py", b"back\\slash\xe9.txt"):
        Path(os.fsdecode(os.path.join(root, name))).write_bytes(b"x = 1\n")
    listing = await harness.ok("read", {"filePath": "."})
    assert listing.result is not None
    assert listing.result.output == "back\\\\slash\\xe9.txt\ncaf\\xe9.py"
    read = await harness.ok("read", {"filePath": "back\\\\slash\\xe9.txt"})
    assert read.result is not None and read.result.title == "back\\\\slash\\xe9.txt"
    # The same file as an absolute path, and as a file:// URI percent-encoding the byte.
    absolute = await harness.ok("read", {"filePath": f"{harness.root}/caf\\xe9.py"})
    assert absolute.result is not None and absolute.result.title == "caf\\xe9.py"
    uri = await harness.ok("read", {"filePath": f"file://{harness.root}/caf%E9.py"})
    assert uri.result is not None and uri.result.title == "caf\\xe9.py"
    # Escaped UTF-8 bytes are the character itself (the name permission rules see), and an
    # escape that names no file is a Windows separator as before.
    (harness.root / "cr\u00e8me.txt").write_text("y\n")
    utf8 = await harness.ok("read", {"filePath": "cr\\xc3\\xa8me.txt"})
    assert utf8.result is not None and utf8.result.title == "cr\u00e8me.txt"
    (harness.root / "build" / "x86").mkdir(parents=True)
    (harness.root / "build" / "x86" / "a.txt").write_text("z\n")
    windows = await harness.ok("read", {"filePath": "build\\x86\\a.txt"})
    assert windows.result is not None and windows.result.title == "build/x86/a.txt"
    # The edit tools resolve paths the same way.
    harness.human.replies = [Reply("once")]
    await harness.ok("read", {"filePath": "caf\\xe9.py"})
    edit = await harness.ok("edit", {"filePath": "caf\\xe9.py", "oldString": "x = 1", "newString": "x = 2"})
    assert edit.result is not None and "caf\\xe9.py" in edit.result.title
    assert Path(os.fsdecode(os.path.join(root, b"caf\xe9.py"))).read_bytes() == b"x = 2\n"


async def test_todos_are_per_session(harness: Harness) -> None:
    todos = [
        {"id": "1", "content": "write tests", "status": "completed"},
        {"id": "2", "content": "fix bug", "status": "in_progress", "priority": "high"},
    ]
    written = await harness.ok("todowrite", {"todos": todos})
    assert written.result is not None and written.result.title == "1 open tasks"
    read = await harness.ok("todoread", {})
    assert read.result is not None
    assert read.result.output == "[x] write tests (medium, id 1)\n[~] fix bug (high, id 2)"
    dup = await harness.call("todowrite", {"todos": [todos[0], todos[0]]})
    assert dup.error == "Task ids must be unique; repeated: 1."
    bad = await harness.call("todowrite", {"todos": [{"id": "3", "content": "x", "status": "done"}]})
    assert bad.error is not None and "todos.0.status" in bad.error


async def test_batch_runs_calls_concurrently_and_reports_each(harness: Harness) -> None:
    (harness.root / "a.txt").write_text("alpha\n")
    calls = [
        {"tool": "read", "parameters": {"filePath": "a.txt"}},
        {"tool": "read", "parameters": {"filePath": "missing.txt"}},
        {"tool": "todoread", "parameters": {}},
    ]
    outcome = await harness.ok("batch", {"tool_calls": calls})
    assert outcome.result is not None
    assert outcome.result.title == "2/3 calls succeeded"
    assert "<result index=0 tool=read status=ok>\n     1\talpha" in outcome.result.output
    assert (
        "<result index=1 tool=read status=error>\nError: File not found: missing.txt" in outcome.result.output
    )
    nested = await harness.call(
        "batch", {"tool_calls": [{"tool": "batch", "parameters": {"tool_calls": []}}]}
    )
    assert nested.error == "batch cannot contain batch; list the tools directly."
    too_many = await harness.call("batch", {"tool_calls": [calls[2]] * 11})
    assert too_many.error is not None and "at most 10 items" in too_many.error


async def test_batch_calls_only_what_the_agent_may_and_a_rejection_in_it_ends_the_turn(
    tmp_path: Path,
) -> None:
    # batch ran any tool: todowrite and question with their permissions denied outright (never
    # offered), a subagent's task through an agent not given it; and a rejection without feedback
    # inside it did not end the turn.
    root = tmp_path / "ws"
    root.mkdir()
    h = make_harness(root, tmp_path / "data", [Rule("todo", "*", "deny", "agent")])
    todo = {"tool": "todowrite", "parameters": {"todos": [{"id": "1", "content": "x", "status": "pending"}]}}
    outcome = await h.ok("batch", {"tool_calls": [todo, {"tool": "todoread", "parameters": {}}]})
    assert outcome.result is not None and outcome.result.title == "0/2 calls succeeded"
    assert "Error: the todowrite tool is not available to the build agent." in outcome.result.output
    assert h.env.session.todos() == []
    h.env.tools = frozenset({"read", "batch"})  # as the agent loop sets them: an agent's own list
    outcome = await h.ok("batch", {"tool_calls": [{"tool": "glob", "parameters": {"pattern": "*"}}]})
    assert outcome.result is not None and "the glob tool is not available" in outcome.result.output
    assert not outcome.stops_turn
    (root / ".env").write_text("TOKEN=abc\n")
    h.human.replies = [Reply("reject")]
    read_env = {"tool": "read", "parameters": {"filePath": ".env"}}
    missing = {"tool": "read", "parameters": {"filePath": "x"}}
    outcome = await h.ok("batch", {"tool_calls": [read_env, missing]})
    assert outcome.stops_turn


async def test_question_goes_to_whoever_answers(harness: Harness) -> None:
    harness.human.answers.append("use PostgreSQL")
    outcome = await harness.ok(
        "question", {"question": "Which database?", "options": ["SQLite", "PostgreSQL"]}
    )
    assert outcome.result is not None and outcome.result.output == "The user answered: use PostgreSQL"
    assert harness.human.questions == ["Which database?"]


async def test_reads_can_run_concurrently(harness: Harness) -> None:
    for i in range(5):
        (harness.root / f"f{i}.txt").write_text(f"{i}\n")
    outcomes = await asyncio.gather(*(harness.call("read", {"filePath": f"f{i}.txt"}) for i in range(5)))
    assert [o.result.output.split("\t")[1].split("\n")[0] for o in outcomes if o.result] == list("01234")


def test_read_description_sits_beside_the_tool() -> None:
    from tools.read import Read  # noqa: PLC0415

    assert Read.description == (Path(__file__).parents[2] / "tools" / "read.md").read_text().strip()
