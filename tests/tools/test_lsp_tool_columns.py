"""Where the lsp tool says things are: lines counted as LSP counts them, UTF-16 columns shown as
characters and clamped to the line, file names that are not UTF-8, the order of files, and a
column past the end of a line."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from lsp_bridge import Bridge
from tests.tools.conftest import MakeHarness
from tests.tools.test_lsp_tool import error, lsp
from tools._lsp_format import locations
from tools._lsp_source import Sources


async def test_source_lines_are_counted_as_lsp_counts_them(lsp_harness: MakeHarness) -> None:
    # A form feed (an old page break) is a line break to str.splitlines, not to LSP: the line
    # shown beside each location must still be the one the server means.
    h = lsp_harness("py_project")
    (h.root / "paged.py").write_text(
        "from pkg.calc import total_area\n# part one\x0c part two\n\n\n"
        "def both():\n    return total_area([])\n"
    )
    text, meta = await lsp(h, operation="findReferences", filePath="paged.py", symbol="total_area")
    assert "paged.py:6:12  return total_area([])" in text.splitlines()
    assert {"path": "paged.py", "line": 6, "character": 12} in [
        {k: loc[k] for k in ("path", "line", "character")} for loc in meta["locations"]
    ]


async def test_reference_columns_are_code_points_and_changed_files_are_read_again(
    lsp_harness: MakeHarness,
) -> None:
    # An emoji is two UTF-16 units to the server and one character to the model; a file that
    # changes on disk between two answers is shown as it is now.
    h = lsp_harness("py_project")
    emoji = h.root / "emoji.py"
    before = 'label = "\U0001f642\U0001f642"; area = '
    emoji.write_text(f"from pkg.calc import total_area\n\n{before}total_area([])\n")
    text, meta = await lsp(h, operation="findReferences", filePath="emoji.py", symbol="total_area")
    column = len(before) + 1
    assert f"emoji.py:3:{column}  {before}total_area([])" in text.splitlines()
    here = [loc for loc in meta["locations"] if loc["path"] == "emoji.py"]
    spans = [(loc["line"], loc["character"], loc["endLine"], loc["endCharacter"]) for loc in here]
    assert spans == [(1, 22, 1, 32), (3, column, 3, column + 10)]

    emoji.write_text("from pkg.calc import total_area\n\n\nresult = total_area([])  # moved\n")
    text, meta = await lsp(h, operation="findReferences", filePath="emoji.py", symbol="total_area")
    assert "emoji.py:4:10  result = total_area([])  # moved" in text.splitlines()
    assert [loc["line"] for loc in meta["locations"] if loc["path"] == "emoji.py"] == [1, 4]


async def test_locations_convert_columns_and_clamp_what_the_file_does_not_have(
    tmp_path: Path, bridge_factory: Callable[..., Bridge]
) -> None:
    # Spans as a server could send them: after a non-BMP character, across lines, past the end
    # of a line, past the end of the file. Columns are code points, clamped to the line; past the
    # end of the file, where there is no line to count on, the server's.
    (tmp_path / "a.py").write_text("x = '\U0001f642'; y\r\nz = 1\nw\n")
    uri = (tmp_path / "a.py").as_uri()
    spans = [(uri, 0, 10, 0, 11), (uri, 9, 2, 9, 4), (uri, 1, 2, 1, 99), (uri, 0, 0, 1, 3)]
    lines, meta = locations(Sources(tmp_path, bridge_factory(tmp_path)), spans, "use", "uses", "of y")
    assert lines == [
        "4 uses of y in 1 file:",
        "",
        "a.py:1:1  x = '\U0001f642'; y",
        "a.py:1:10  x = '\U0001f642'; y",
        "a.py:2:3  z = 1",
        "a.py:10:3",
    ]
    assert [(r["line"], r["character"], r["endLine"], r["endCharacter"]) for r in meta["locations"]] == [
        (1, 1, 2, 4),
        (1, 10, 1, 11),
        (2, 3, 2, 6),
        (10, 3, 10, 5),
    ]
    assert meta["files"] == 1 and not meta["capped"]


async def test_locations_in_files_whose_names_are_not_utf8_name_them_as_read_takes_them(
    tmp_path: Path, bridge_factory: Callable[..., Bridge]
) -> None:
    # A server's "caf%E9.py" came out as "caf\ufffd.py" (no such file), and a read rule naming
    # the file as the other tools show it ("caf\\xe9.py") did not keep its results out.
    latin = Path(os.fsdecode(os.path.join(os.fsencode(tmp_path), b"caf\xe9.py")))
    latin.write_bytes(b"x = 1\n")
    (tmp_path / "a.py").write_text("x = 2\n")
    spans = [(latin.as_uri(), 0, 0, 0, 1), ((tmp_path / "a.py").as_uri(), 0, 0, 0, 1)]
    assert "%E9" in spans[0][0]
    lines, _ = locations(Sources(tmp_path, bridge_factory(tmp_path)), spans, "use", "uses", "of x")
    assert lines[-1] == "caf\\xe9.py:1:1  x = 1"
    sources = Sources(tmp_path, bridge_factory(tmp_path), hidden=lambda shown: shown == "caf\\xe9.py")
    assert [span for span in spans if sources.shows_uri(span[0])] == spans[1:] and sources.left_out == 1


async def test_basedpyright_on_a_file_whose_name_is_not_utf8(lsp_harness: MakeHarness) -> None:
    # basedpyright reads "caf%E9.py" as the name "caf%E9.py" and sends it back as "caf%25E9.py":
    # its references were shown in a "caf%E9.py" at column 1 without their lines, and the
    # symbol could not be looked up ("the language server could not answer: file not found").
    h = lsp_harness("py_project")
    name = os.fsdecode(b"caf\xe9.py")
    (h.root / name).write_text("def cafefn() -> int:\n    return 1\n\n\nx = cafefn()\n")
    expected = ["caf\\xe9.py:1:5  def cafefn() -> int:", "caf\\xe9.py:5:5  x = cafefn()"]
    text, meta = await lsp(h, operation="findReferences", filePath=name, line=5, character=5)
    assert text.splitlines()[-2:] == expected, text
    text, meta = await lsp(h, operation="findReferences", symbol="cafefn")
    assert text.splitlines()[-2:] == expected, text
    assert meta["target"] == {"path": "caf\\xe9.py", "line": 1, "character": 5, "name": "cafefn"}


async def test_locations_sort_by_name_even_where_uris_sort_otherwise(
    tmp_path: Path, bridge_factory: Callable[..., Bridge]
) -> None:
    # A file outside the workspace is named by its absolute path, which sorts before the files
    # inside it whatever the URIs say; two URIs of one file stay two groups, ordered by URI.
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("a = 1\n")
    (tmp_path / "z.py").write_text("z = 1\nzz = 2\n")
    inside, outside = (root / "a.py").as_uri(), (tmp_path / "z.py").as_uri()
    spelled = inside.replace("/a.py", "/%61.py")
    spans = [
        (inside, 0, 0, 0, 1),
        (outside, 1, 0, 1, 2),
        (spelled, 0, 4, 0, 5),
        (outside, 0, 0, 0, 1),
    ]
    lines, meta = locations(Sources(root, bridge_factory(root)), spans, "use", "uses", "of x")
    far = str(tmp_path / "z.py")
    assert lines == [
        "4 uses of x in 3 files:",
        "",
        f"{far}:1:1  z = 1",
        f"{far}:2:1  zz = 2",
        "",
        "a.py:1:5  a = 1",
        "",
        "a.py:1:1  a = 1",
    ]
    assert [(r["path"], r["line"], r["character"]) for r in meta["locations"]] == [
        (far, 1, 1),
        (far, 2, 1),
        ("a.py", 1, 5),
        ("a.py", 1, 1),
    ]
    assert meta["files"] == 3 and not meta["capped"]


async def test_a_column_just_past_the_end_of_a_line_is_called_so(lsp_harness: MakeHarness) -> None:
    # It was called whitespace: only a column beyond that one counted as past the end.
    h = lsp_harness("py_project")
    line = (h.root / "app.py").read_text().splitlines()[5]
    message = await error(h, operation="hover", filePath="app.py", line=6, character=len(line) + 1)
    assert message.startswith(f"Character {len(line) + 1} is past the end of line 6,")


async def test_a_name_written_with_combining_marks_is_the_name_a_model_writes(
    lsp_harness: MakeHarness,
) -> None:
    # `café` written as e + U+0301 (text macOS decomposed): the model's `café` (é, one character)
    # was "No symbol named 'café' in src/n.ts. Did you mean one of these? café", a name on a line
    # was cut at the accent ("1 definition of cafe"), and the decomposed name was "not on line 2".
    h = lsp_harness("ts_project")
    nfd = "cafe\u0301"
    (h.root / "src/n.ts").write_text(f"export function {nfd}(): number {{ return 1; }}\n{nfd}();\n")
    text, meta = await lsp(h, operation="findReferences", filePath="src/n.ts", symbol="caf\u00e9")
    assert [(loc["line"], loc["character"]) for loc in meta["locations"]] == [(1, 17), (2, 1)]
    text, meta = await lsp(h, operation="goToDefinition", filePath="src/n.ts", line=2)
    assert meta["target"]["name"] == nfd and text.startswith(f"1 definition of {nfd} at src/n.ts:2:1")
    text, meta = await lsp(h, operation="findReferences", filePath="src/n.ts", symbol=nfd, line=2)
    assert "not on line" not in text and meta["target"]["line"] == 2
