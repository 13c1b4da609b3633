"""The lsp tool against basedpyright on the Python fixture: every operation, symbol addressing,
positions checked against the fixture text, and errors that say what to do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import position
from tests.tools.conftest import Harness, MakeHarness


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
