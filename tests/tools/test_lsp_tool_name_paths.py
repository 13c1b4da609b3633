"""Names as the model reads them from the real servers: workspaceSymbol with a name path
(basedpyright, typescript-language-server, tsgo, clangd), call sites at the called name and
module callers named once (basedpyright, both TypeScript servers)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.tools.conftest import MakeHarness
from tests.tools.test_lsp_tool import at, error, lsp
from tests.tools.test_lsp_tool_addressing import cpp_shapes

TS_SERVERS = ("typescript-language-server", "tsgo")
POINT = """export class Point {
  constructor(public x: number) {}
  move(by: number): Point {
    return new Point(this.x + by);
  }
}

export function useIt(p: Point): number {
  return p.move(1).x + p
    .move(2).x;
}

useIt(new Point(1));
"""


def only(server: str) -> dict[str, dict[str, bool]]:
    """Servers config with one of the TypeScript servers enabled."""
    return {name: {"enabled": name == server} for name in TS_SERVERS}


def found(meta: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(s["path"], s["container"], s["name"]) for s in meta.get("symbols", [])]


async def test_workspace_symbols_by_name_path_with_basedpyright(lsp_harness: MakeHarness) -> None:
    # Servers match plain names: "Solid.describe" and "pkg.calc.describe" found nothing at all.
    h = lsp_harness("py_project")
    _, meta = await lsp(h, operation="workspaceSymbol", query="describe")
    assert found(meta) == [("pkg/calc.py", "", "describe"), ("pkg/geometry.py", "Solid", "describe")]
    for query in ("pkg.calc.describe", "calc.describe", "pkg/calc.describe"):
        text, meta = await lsp(h, operation="workspaceSymbol", query=query)
        assert found(meta) == [("pkg/calc.py", "", "describe")], text
        assert text.splitlines()[0] == f"1 symbol match {query!r}:"
    text, meta = await lsp(h, operation="workspaceSymbol", query="Solid.describe")
    assert text.splitlines()[
        1
    ] == f"  Solid.describe (method) {at(h.root, 'pkg/geometry.py', 'describe')}  " + (
        "def describe(self) -> str:"
    )
    _, meta = await lsp(h, operation="workspaceSymbol", query="Ball.Material.dens")  # the last name: a part
    assert found(meta) == [("pkg/geometry.py", "Ball.Material", "density")]

    text, meta = await lsp(h, operation="workspaceSymbol", query="Cube.describe")
    assert meta["count"] == 0
    assert text == (
        "No symbols match 'Cube.describe'; 'describe' alone matches describe (pkg/calc.py), "
        "Solid.describe (pkg/geometry.py)."
    )

    for query in ("*", "Solid.*"):
        message = await error(h, operation="workspaceSymbol", query=query)
        assert message == (
            f"workspaceSymbol needs query: the name, or part of it, to look for; {query!r} does not end "
            "with one (servers match names, not patterns). To list a file's symbols, use documentSymbol "
            "with filePath."
        )
    message = await error(h, operation="workspaceSymbol", query="  ")
    assert message.startswith("workspaceSymbol needs query: the name, or part of it, to look for. ")


@pytest.mark.parametrize("server", TS_SERVERS)
async def test_workspace_symbols_by_name_path_with_typescript(lsp_harness: MakeHarness, server: str) -> None:
    # typescript-language-server names no container for a method: its file's documentSymbol does.
    h = lsp_harness("ts_project", servers=only(server))
    for query, expected in (
        ("Circle.area", [("src/shapes.ts", "Circle", "area")]),
        ("src.shapes.Square.area", [("src/shapes.ts", "Square", "area")]),
        ("shapes.Circle", [("src/shapes.ts", "", "Circle")]),
        ("calc.total", [("src/calc.ts", "", "totalArea")]),
    ):
        text, meta = await lsp(h, operation="workspaceSymbol", query=query)
        assert found(meta) == expected, text


async def test_workspace_symbols_by_name_path_with_clangd(lsp_harness: MakeHarness) -> None:
    h = cpp_shapes(lsp_harness)
    for query in ("geo::Shape::Nested::depth", "Nested::depth", "Shape.Nested.depth"):
        text, meta = await lsp(h, operation="workspaceSymbol", query=query)
        assert found(meta) == [("shape.cpp", "geo.Shape.Nested", "depth")], text
    _, meta = await lsp(h, operation="workspaceSymbol", query="Nested::area")
    assert meta["count"] == 0


async def test_a_module_caller_is_named_once_with_basedpyright(lsp_harness: MakeHarness) -> None:
    # basedpyright names it "(module) bom.py": the line read "(module) bom.py (module) bom.py:1:1".
    h = lsp_harness("py_project")
    (h.root / "bom.py").write_text("from pkg.calc import total_area\n\nprint(total_area([]))\n")
    text, meta = await lsp(h, operation="incomingCalls", symbol="total_area")
    assert "  bom.py (module) bom.py:1:1" in text.splitlines()
    assert [c["name"] for c in meta["calls"] if c["path"] == "bom.py"] == ["bom.py"]


@pytest.mark.parametrize("server", TS_SERVERS)
async def test_typescript_call_sites_point_at_the_called_name(lsp_harness: MakeHarness, server: str) -> None:
    # Outgoing calls started at the call's expression: `p` of `p.move(1)`, and the line before
    # `.move(2)` in a chain, while incoming calls named the same sites at `move`.
    h = lsp_harness("ts_project", servers=only(server))
    root = h.root
    (root / "src/point.ts").write_text(POINT)
    sites = [at(root, "src/point.ts", "move(1)"), at(root, "src/point.ts", "move(2)")]
    for operation, symbol, other in (
        ("outgoingCalls", "useIt", "move"),
        ("incomingCalls", "Point.move", "useIt"),
    ):
        text, meta = await lsp(h, operation=operation, symbol=symbol)
        called = [row.split()[2] for row in text.splitlines() if row.startswith("      called at ")]
        assert called == sites, text
        ranges = next(c["fromRanges"] for c in meta["calls"] if c["name"] == other)
        assert [f"src/point.ts:{r['line']}:{r['character']}" for r in ranges] == sites
        assert [(r["endLine"], r["endCharacter"] - r["character"]) for r in ranges] == [
            (9, len("move")),
            (10, len("move")),
        ]

    # A module calling at its top level: its file, relative (tsgo named it by its absolute path).
    text, meta = await lsp(h, operation="incomingCalls", symbol="useIt")
    name = {"typescript-language-server": "point.ts", "tsgo": "src/point.ts"}[server]
    assert f"  {name} (module) src/point.ts:1:1" in text.splitlines(), text
    assert str(root) not in text and str(root) not in json.dumps(meta["calls"])
    assert f"      called at {at(root, 'src/point.ts', 'useIt(new')}  useIt(new Point(1));" in text
