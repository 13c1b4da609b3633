"""The lsp tool against basedpyright on the Python fixture: every operation, symbol addressing,
positions checked against the fixture text, and errors that say what to do."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsp_bridge import Bridge
from tests.conftest import position
from tests.tools.conftest import Harness, MakeHarness
from tools import Rule
from tools._lsp_format import locations
from tools._lsp_source import Sources


def at(root: Path, relative: str, needle: str, nth: int = 0, offset: int = 0) -> str:
    """``path:line:col`` (1-based) of a needle in a fixture file, as the tool prints it."""
    pos = position(root / relative, needle, nth, offset)
    return f"{relative}:{pos.line + 1}:{pos.character + 1}"


def spot(root: Path, relative: str, needle: str, nth: int = 0, offset: int = 0) -> dict[str, Any]:
    pos = position(root / relative, needle, nth, offset)
    return {"path": relative, "line": pos.line + 1, "character": pos.character + 1}


async def lsp(harness: Harness, **args: Any) -> tuple[str, dict[str, Any]]:
    outcome = await harness.ok("lsp", {k: v for k, v in args.items() if v is not None})
    assert outcome.result is not None
    return outcome.result.output, outcome.result.metadata


async def error(harness: Harness, **args: Any) -> str:
    outcome = await harness.call("lsp", args)
    assert outcome.error is not None, outcome.result
    return outcome.error


async def test_references_and_definition_by_symbol_line_and_position(lsp_harness: MakeHarness) -> None:
    h = lsp_harness("py_project")
    root = h.root
    text, meta = await lsp(h, operation="findReferences", symbol="total_area")
    lines = text.splitlines()
    assert lines[0] == f"4 references to total_area at {at(root, 'pkg/calc.py', 'total_area')} in 2 files:"
    expected = [
        spot(root, "app.py", "total_area"),
        spot(root, "app.py", "total_area", nth=1),
        spot(root, "pkg/calc.py", "total_area"),
        spot(root, "pkg/calc.py", "total_area", nth=1),
    ]
    assert [{k: loc[k] for k in ("path", "line", "character")} for loc in meta["locations"]] == expected
    assert f"{at(root, 'app.py', 'total_area', 1)}  print(total_area(shapes))" in lines
    assert meta["complete"] and meta["count"] == 4
    # Grouped by file: a blank line before each file's block.
    first_in_calc = f"{at(root, 'pkg/calc.py', 'total_area')}  def total_area(shapes: list[Shape]) -> float:"
    assert lines[1] == "" and lines[lines.index(first_in_calc) - 1] == ""

    use = position(root / "app.py", "total_area", nth=1)
    text, meta = await lsp(
        h, operation="goToDefinition", filePath="app.py", line=use.line + 1, character=use.character + 1
    )
    assert text.splitlines()[0].startswith("1 definition of total_area")
    assert f"{at(root, 'pkg/calc.py', 'total_area')}  def total_area" in text
    assert meta["target"] == {**spot(root, "app.py", "total_area", 1), "name": "total_area"}

    # Only a line: `def` is skipped and the first name the server resolves is used.
    text, meta = await lsp(h, operation="findReferences", filePath="pkg/calc.py", line=use.line - 3)
    line = position(root / "pkg/calc.py", "def total_area").line + 1
    assert line == use.line - 3
    assert meta["target"]["name"] == "total_area" and meta["count"] == 4


async def test_symbol_addressing_nested_module_path_ambiguous_and_missing(lsp_harness: MakeHarness) -> None:
    h = lsp_harness("py_project")
    root = h.root
    _, meta = await lsp(h, operation="goToDefinition", symbol="Ball.Material.density")
    assert {k: meta["target"][k] for k in ("path", "line", "character")} == spot(
        root, "pkg/geometry.py", "density"
    )
    _, meta = await lsp(h, operation="hover", symbol="geometry/total_volume")
    assert meta["target"]["name"] == "total_volume"
    _, meta = await lsp(h, operation="goToDefinition", filePath="pkg/calc.py", symbol="pkg.calc.describe")
    assert meta["target"]["line"] == position(root / "pkg/calc.py", "def describe").line + 1
    _, meta = await lsp(h, operation="goToDefinition", filePath="pkg/geometry.py", symbol="ball.MASS")
    assert meta["target"]["name"] == "mass"

    text, meta = await lsp(h, operation="findReferences", filePath="pkg/geometry.py", symbol="volume")
    assert meta["ambiguous"] and meta["count"] == 0
    assert meta["complete"] and meta["notes"] == []  # missing: every answer's metadata has them
    assert text.splitlines()[0].startswith("'volume' matches 3 symbols; nothing was asked.")
    for owner, nth in (("Solid", 0), ("Cube", 1), ("Ball", 2)):
        assert f"{owner}.volume (method) {at(root, 'pkg/geometry.py', 'def volume', nth, 4)}" in text
    # In the workspace, `describe` is a function in calc.py and a method of Solid.
    text, meta = await lsp(h, operation="goToDefinition", symbol="describe")
    assert sorted(c["path"] for c in meta["candidates"]) == ["pkg/calc.py", "pkg/geometry.py"]

    # With a line: the name written on that line wins (Cube.volume, not the other two).
    cube = position(root / "pkg/geometry.py", "def volume", nth=1).line + 1
    _, meta = await lsp(h, operation="hover", filePath="pkg/geometry.py", symbol="volume", line=cube)
    assert meta["target"] == {**spot(root, "pkg/geometry.py", "def volume", 1, 4), "name": "volume"}
    text, meta = await lsp(h, operation="hover", filePath="pkg/geometry.py", symbol="Cube", line=cube)
    assert (
        f"'Cube' is not on line {cube}; used the declaration at {at(root, 'pkg/geometry.py', 'Cube')}" in text
    )

    # A name used (imported) in the file but declared elsewhere: its first use there.
    text, meta = await lsp(h, operation="goToDefinition", filePath="app.py", symbol="Square")
    imported = position(root / "app.py", "Square").line + 1
    assert f"(Square is not declared in app.py; used its first use, line {imported}.)" in text
    square = spot(root, "pkg/shapes.py", "class Square", 0, 6)
    end = {"endLine": square["line"], "endCharacter": square["character"] + len("Square")}
    assert meta["locations"][0] == {**square, **end}

    missing = await error(h, operation="findReferences", filePath="pkg/geometry.py", symbol="Cubes")
    assert missing.startswith("No symbol named 'Cubes' in pkg/geometry.py.")
    assert "Did you mean one of these?" in missing and "  Cube (class) pkg/geometry.py:" in missing


async def test_implementations_and_call_hierarchy(lsp_harness: MakeHarness) -> None:
    h = lsp_harness("py_project")
    root = h.root
    text, meta = await lsp(h, operation="goToImplementation", symbol="Solid.volume")
    found = {(loc["path"], loc["line"], loc["character"]) for loc in meta["locations"]}
    for nth in (1, 2):  # Cube.volume and Ball.volume
        s = spot(root, "pkg/geometry.py", "def volume", nth, 4)
        assert (s["path"], s["line"], s["character"]) in found
    assert "implementations of volume" in text.splitlines()[0]

    text, meta = await lsp(h, operation="incomingCalls", symbol="total_volume")
    lines = text.splitlines()
    assert lines[0] == f"total_volume (function) {at(root, 'pkg/geometry.py', 'total_volume')}"
    assert lines[1] == "1 caller in 1 file:"
    assert lines[2] == f"  report (function) {at(root, 'pkg/report.py', 'def report', 0, 4)}"
    assert lines[3] == f"      called at {at(root, 'pkg/report.py', 'total_volume', 1)}  " + (
        'return f"{len(solids)} solids, {total_volume(solids)} in all"'
    )
    call = meta["calls"][0]
    site = spot(root, "pkg/report.py", "total_volume", 1)
    assert call["name"] == "report" and call["fromPath"] == "pkg/report.py"
    assert call["fromRanges"] == [
        {
            "line": site["line"],
            "character": site["character"],
            "endLine": site["line"],
            "endCharacter": site["character"] + len("total_volume"),
        }
    ]

    text, meta = await lsp(h, operation="outgoingCalls", filePath="pkg/report.py", symbol="sample")
    assert {c["name"] for c in meta["calls"]} >= {"report", "Cube", "Ball"}
    assert (
        f"      called at {at(root, 'pkg/report.py', 'report([')}  return report([Cube(1.0), Ball(2.0)])"
        in text
    )

    text, meta = await lsp(
        h, operation="prepareCallHierarchy", filePath="pkg/geometry.py", symbol="Ball.mass"
    )
    assert text == f"mass (method) {at(root, 'pkg/geometry.py', 'mass')}"
    assert meta["items"][0]["name"] == "mass"


async def test_symbols_hover_and_diagnostics(lsp_harness: MakeHarness) -> None:
    h = lsp_harness("py_project")
    root = h.root
    text, meta = await lsp(h, operation="documentSymbol", filePath="pkg/geometry.py")
    material = position(root / "pkg/geometry.py", "Material")
    assert f"    Material (class) {material.line + 1}:{material.character + 1}" in text.splitlines()
    assert {"name": "density", "container": "Ball.Material"}.items() <= next(
        s for s in meta["symbols"] if s["name"] == "density"
    ).items()

    text, meta = await lsp(h, operation="workspaceSymbol", query="Cube")
    assert f"  Cube (class) {at(root, 'pkg/geometry.py', 'Cube')}  class Cube(Solid):" in text

    text, _ = await lsp(h, operation="hover", filePath="pkg/calc.py", symbol="total_area")
    assert "def total_area(shapes: list[Shape]) -> float" in text

    app = root / "app.py"
    text, meta = await lsp(h, operation="diagnostics", filePath="app.py")
    assert text.startswith("No errors or warnings in app.py") and meta["complete"]
    original = app.read_text()
    app.write_text(original.replace("total_area(shapes)", "total_area(42)"))
    text, meta = await lsp(h, operation="diagnostics")
    broken = position(app, "42")
    assert meta["diagnostics"][0]["path"] == "app.py"
    assert meta["diagnostics"][0]["line"] == broken.line + 1
    assert text.splitlines()[0].startswith("1 error in 1 file (checked ")
    assert f"app.py:{broken.line + 1}:{broken.character + 1}  error: " in text
    app.write_text(original)
    text, _ = await lsp(h, operation="diagnostics", filePath="app.py")
    assert text.startswith("No errors or warnings in app.py")


async def test_errors_say_what_to_do(lsp_harness: MakeHarness) -> None:
    h = lsp_harness("py_project")
    root = h.root
    (root / "README.md").write_text("# fixture\n")
    shapes = position(root / "app.py", "shapes = [")
    message = await error(h, operation="hover", filePath="app.py", line=shapes.line + 1, character=2)
    assert f"Character 2 is whitespace on line {shapes.line + 1}" in message
    assert f"shapes (character {shapes.character + 1})" in message and "Pass symbol" in message

    message = await error(h, operation="hover", filePath="app.py", line=99)
    assert "line 99 is outside app.py, which has 8 lines" in message

    message = await error(h, operation="hover", filePath="pkg/calcs.py", line=1)
    assert "File not found: pkg/calcs.py" in message and "pkg/calc.py" in message

    message = await error(h, operation="documentSymbol", filePath="README.md")
    assert "no language server is configured for README.md" in message and "Use grep and read" in message

    message = await error(h, operation="goToDefinition", filePath="app.py")
    assert "needs line (and character) or symbol" in message
    message = await error(h, operation="workspaceSymbol")
    assert "workspaceSymbol needs query" in message


async def test_files_the_read_rules_deny_are_not_shown(lsp_harness: MakeHarness) -> None:
    # The lsp tool only asked "lsp": a file read denies showed its outline, and its lines came
    # with references, symbols and call sites.
    h = lsp_harness("py_project")
    h.env.permissions.rules.append(Rule("read", "pkg/calc.py", "deny"))
    denied = await error(h, operation="documentSymbol", filePath="pkg/calc.py")
    assert denied.startswith("Permission denied: read pkg/calc.py")
    text, meta = await lsp(h, operation="findReferences", filePath="app.py", symbol="total_area")
    assert "pkg/calc.py" not in text and "def total_area" not in text
    assert text.startswith("2 references to total_area at app.py:1:32 in 1 file:")
    assert text.endswith("\n\n(2 results in files the read rules deny were left out.)")
    assert meta["skipped"] == 2 and {loc["path"] for loc in meta["locations"]} == {"app.py"}
    text, _ = await lsp(h, operation="workspaceSymbol", query="total")
    assert "total_area" not in text and "total_volume (function) pkg/geometry.py:35:5" in text
    text, _ = await lsp(h, operation="outgoingCalls", filePath="app.py", symbol="main")
    assert "pkg/calc.py" not in text and "3 callees in 2 files:" in text
    # Declared in the denied file: not "no function or method" there, and the line is not described.
    text, meta = await lsp(h, operation="incomingCalls", filePath="app.py", symbol="total_area")
    assert "The function or method at total_area at app.py:1:32 is in a file the read rules deny" in text
    assert "Line 1 of app.py" not in text and meta["skipped"] == 1
    missing = await error(h, operation="incomingCalls", symbol="total_area")
    assert "that may be shown" in missing and "read rules deny" in missing
    text, meta = await lsp(h, operation="diagnostics")
    assert meta["checked"] == 5 and meta["skipped"] == 1  # the note said "1 result ... left out"
    assert text.endswith("\n\n(1 file the read rules deny was not checked.)")


async def test_hover_on_a_name_defined_in_a_denied_file_is_withheld(lsp_harness: MakeHarness) -> None:
    # Hovering total_area in app.py showed the server's text from pkg/calc.py, which read denies:
    # its signature (and its docstring, or a constant's value, had it one).
    h = lsp_harness("py_project")
    root = h.root
    h.env.permissions.rules.append(Rule("read", "pkg/calc.py", "deny"))
    calc = root / "pkg/calc.py"
    docstring = '    """Secret sauce."""\n    return sum('
    calc.write_text(calc.read_text().replace("    return sum(", docstring, 1))
    text, meta = await lsp(h, operation="hover", filePath="app.py", symbol="total_area")
    assert "Secret sauce" not in text and "def total_area" not in text and "shapes:" not in text
    assert text.splitlines()[1] == (
        f"No hover shown for total_area at {at(root, 'app.py', 'total_area')}: it is defined in a file "
        "the read rules deny, and the lsp tool shows no more than read would (the server's text would "
        "show its signature and docs from there)."
    )
    assert meta["withheld"] and meta["count"] == 0
    # The module itself (its docstring would show) at a position, and a name used in a call.
    module = position(root / "app.py", "calc")
    text, _ = await lsp(
        h, operation="hover", filePath="app.py", line=module.line + 1, character=module.character + 1
    )
    withheld = f"No hover shown for calc at {at(root, 'app.py', 'calc')}: it is defined in a file"
    assert text.startswith(withheld)
    call = position(root / "app.py", "total_area", nth=1)
    text, _ = await lsp(
        h, operation="hover", filePath="app.py", line=call.line + 1, character=call.character + 1
    )
    assert "def total_area" not in text and "read rules deny" in text
    # Names defined in files read allows are shown as before.
    text, meta = await lsp(h, operation="hover", filePath="app.py", symbol="Circle")
    assert "class Circle" in text and "withheld" not in meta
    text, _ = await lsp(h, operation="hover", filePath="app.py", symbol="main")
    assert "def main() -> None" in text


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
    # of a line, past the end of the file. Columns are code points, clamped to the line.
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
        "a.py:10:1",
    ]
    assert [(r["line"], r["character"], r["endLine"], r["endCharacter"]) for r in meta["locations"]] == [
        (1, 1, 2, 4),
        (1, 10, 1, 11),
        (2, 3, 2, 6),
        (10, 1, 10, 1),
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


async def test_a_name_path_with_a_hash_finds_the_name_on_the_line(lsp_harness: MakeHarness) -> None:
    # With line, `Cube#volume` was not split as name paths are elsewhere, so the name written on
    # the line was missed and the declaration used, with a note saying it was not on the line.
    h = lsp_harness("py_project")
    cube = position(h.root / "pkg/geometry.py", "def volume", nth=1).line + 1
    text, meta = await lsp(h, operation="hover", filePath="pkg/geometry.py", symbol="Cube#volume", line=cube)
    assert "is not on line" not in text
    assert meta["target"] == {**spot(h.root, "pkg/geometry.py", "def volume", 1, 4), "name": "volume"}


async def test_outgoing_calls_of_a_function_that_calls_nothing(lsp_harness: MakeHarness) -> None:
    # "no callers" was said for outgoingCalls: the direction was guessed from the calls found.
    h = lsp_harness("py_project")
    text, meta = await lsp(h, operation="outgoingCalls", filePath="pkg/shapes.py", symbol="Circle.area")
    assert text.splitlines()[1] == "no callees" and meta["count"] == 0


async def test_a_line_where_no_name_answers_is_described_once(lsp_harness: MakeHarness) -> None:
    h = lsp_harness("py_project")
    (h.root / "quiet.py").write_text("x = 1\n# nothing here at all\n")
    text, _ = await lsp(h, operation="findReferences", filePath="quiet.py", line=2)
    assert text.count("Line 2 of quiet.py is: # nothing here at all") == 1


async def test_a_line_whose_first_name_is_defined_in_a_denied_file(lsp_harness: MakeHarness) -> None:
    # With only a line, a name the server answered for only in denied files was skipped as if
    # unknown, and its left-out result was counted under the next name's answer (len's here).
    h = lsp_harness("py_project")
    h.env.permissions.rules.append(Rule("read", "pkg/calc.py", "deny"))
    (h.root / "uses.py").write_text("from pkg.calc import total_area\n\ntotal_area([]) + len([])\n")
    text, meta = await lsp(h, operation="goToDefinition", filePath="uses.py", line=3)
    assert meta["target"]["name"] == "total_area" and meta["count"] == 0 and meta["skipped"] == 1
    assert text.startswith("No definitions of total_area at uses.py:3:1.") and "Line 3" not in text
