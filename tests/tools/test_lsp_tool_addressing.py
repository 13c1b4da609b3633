"""Symbol addressing as servers name things: C++ methods defined out of line (clangd), TypeScript
overloads (typescript-language-server), call sites a server repeats, and the projects of a monorepo."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from lsp_bridge import Bridge
from tests.tools.conftest import Harness, MakeHarness, make_harness
from tests.tools.test_lsp_tool import at, error, lsp
from tools._lsp_resolve import MAX_PROJECTS

SHAPE_H = """#pragma once
namespace geo {
class Shape {
 public:
  int area() const;
  int scale(int by);
  int scale(double by);
  struct Nested {
    int depth() const;
  };
};
}  // namespace geo
"""
SHAPE_CPP = """#include "shape.h"

namespace geo {
int Shape::area() const { return 3; }
int Shape::scale(int by) { return area() * by; }
int Shape::scale(double by) { return area() * static_cast<int>(by); }
int Shape::Nested::depth() const { return 1; }
}  // namespace geo
"""
USE_CPP = """#include "shape.h"

int use() { return geo::Shape().scale(2) + geo::Shape::Nested().depth(); }
"""


def cpp_shapes(lsp_harness: MakeHarness) -> Harness:
    """A harness on the C++ project with SHAPE_H, SHAPE_CPP and USE_CPP and their compile commands."""
    h = lsp_harness("c_project")
    for name, text in (("shape.h", SHAPE_H), ("shape.cpp", SHAPE_CPP), ("use.cpp", USE_CPP)):
        (h.root / name).write_text(text)
    entries = [
        {"directory": str(h.root), "file": str(h.root / f), "arguments": ["c++", "-std=c++17", "-c", f]}
        for f in ("shape.cpp", "use.cpp")
    ]
    (h.root / "compile_commands.json").write_text(json.dumps(entries))
    return h


async def test_cpp_methods_defined_out_of_line_are_named_by_their_path(lsp_harness: MakeHarness) -> None:
    # clangd names such a method "Shape::area" inside namespace geo: geo::Shape::area and
    # Shape::area were "No symbol named ..." and suggested geo.Shape::area, which failed too.
    h = cpp_shapes(lsp_harness)

    for symbol in ("geo::Shape::area", "Shape::area", "area"):
        text, meta = await lsp(h, operation="findReferences", filePath="shape.cpp", symbol=symbol)
        assert meta["target"]["line"] == 4 and meta["count"] == 4, (symbol, text)
    text, meta = await lsp(h, operation="findReferences", symbol="geo::Shape::Nested::depth")
    assert {loc["path"] for loc in meta["locations"]} == {"shape.h", "shape.cpp", "use.cpp"}
    assert meta["target"] == {"path": "shape.cpp", "line": 7, "character": 20, "name": "Shape::Nested::depth"}
    # C++ overloads are different functions: candidates, each with its own line.
    text, meta = await lsp(h, operation="goToDefinition", filePath="shape.cpp", symbol="Shape::scale")
    assert meta["ambiguous"] and [c["line"] for c in meta["candidates"]] == [5, 6]


OVERLOADED = """export class Point {
  constructor(public x: number) {}
  move(by: number): Point;
  move(by: string): Point;
  move(by: number | string): Point {
    return new Point(this.x + Number(by));
  }
}

export function useIt(p: Point): number {
  return p.move(1).x + p.move("2").x;
}
"""


async def test_typescript_overloads_are_one_symbol_and_call_sites_are_shown_once(
    lsp_harness: MakeHarness,
) -> None:
    # Point.move matched its three declarations and nothing was asked, though they are one
    # method; its calls were listed once per overload (the same call site two or three times).
    h = lsp_harness("ts_project")
    (h.root / "src/point.ts").write_text(OVERLOADED)
    text, meta = await lsp(h, operation="findReferences", symbol="Point.move")
    assert "ambiguous" not in meta and meta["count"] == 5
    assert meta["target"]["line"] == 5  # the implementation: only it has callees
    text, meta = await lsp(h, operation="outgoingCalls", symbol="Point.move")
    assert [c["name"] for c in meta["calls"]] == ["Point"]

    text, meta = await lsp(h, operation="outgoingCalls", symbol="useIt")
    lines = text.splitlines()
    move = lines.index(f"  move (method) {at(h.root, 'src/point.ts', 'move')}")
    line = '  return p.move(1).x + p.move("2").x;'
    sites = [row for row in lines[move + 1 :] if row.startswith("      called at src/point.ts:11:")]
    assert sites == [
        f"      called at src/point.ts:11:12  {line.strip()}",
        f"      called at src/point.ts:11:26  {line.strip()}",
    ]
    ranges = [
        (r["line"], r["character"]) for c in meta["calls"] if c["name"] == "move" for r in c["fromRanges"]
    ]
    assert ranges == [(11, 12), (11, 26)]  # at `move`, not the `p` of `p.move`


async def test_a_monorepo_has_every_project_searched(
    tmp_path: Path, bridge_factory: Callable[..., Bridge]
) -> None:
    # Each package with its own pyproject.toml gets its own basedpyright; workspace symbols were
    # asked of one file per server kind, so names in every other package were "No symbol named".
    root = tmp_path / "mono"
    for package, text in (("alpha", "def from_alpha() -> int:\n    return 1\n"), ("beta", BETA)):
        (root / package).mkdir(parents=True)
        (root / package / "pyproject.toml").write_text(f'[project]\nname = "{package}"\n')
        (root / package / f"{package}_mod.py").write_text(text)
    h = make_harness(root, tmp_path / "data")
    h.env.bridge_factory = lambda: bridge_factory(root)
    text, meta = await lsp(h, operation="workspaceSymbol", query="from_")
    assert [(s["path"], s["name"]) for s in meta["symbols"]] == [
        ("alpha/alpha_mod.py", "from_alpha"),
        ("beta/beta_mod.py", "from_beta"),
    ]
    text, meta = await lsp(h, operation="findReferences", symbol="from_beta")
    assert [(loc["path"], loc["line"]) for loc in meta["locations"]] == [
        ("beta/beta_mod.py", 1),
        ("beta/beta_mod.py", 5),
    ]


BETA = "def from_beta() -> int:\n    return 2\n\n\nfrom_beta()\n"


async def test_a_monorepo_past_the_project_limit_names_the_projects_not_searched(
    tmp_path: Path, bridge_factory: Callable[..., Bridge]
) -> None:
    # Nine packages, one basedpyright each: the first MAX_PROJECTS (8) are asked. A name only in
    # the ninth was "not found ... The language server was still loading", and a symbol found
    # with no callers said "Nothing found yet ... Ask again in a moment": asking again searches
    # the same eight.
    root = tmp_path / "mono"
    for i in range(MAX_PROJECTS + 1):
        (root / f"pkg{i}").mkdir(parents=True)
        (root / f"pkg{i}" / "pyproject.toml").write_text(f'[project]\nname = "pkg{i}"\n')
        (root / f"pkg{i}" / f"mod{i}.py").write_text(f"def shared_{i}() -> int:\n    return {i}\n")
    h = make_harness(root, tmp_path / "data")
    h.env.bridge_factory = lambda: bridge_factory(root)
    unsearched = "1 more project was not searched (pkg8); give filePath in one of them to search it"
    text, meta = await lsp(h, operation="workspaceSymbol", query="shared")
    assert [s["path"] for s in meta["symbols"]] == [f"pkg{i}/mod{i}.py" for i in range(8)]
    assert text.endswith(f"\n\n({unsearched}.)") and "incomplete" not in text
    assert meta["complete"] is False and meta["notes"] == [unsearched]
    text, meta = await lsp(h, operation="workspaceSymbol", query="shared_8")
    assert text == f"No symbols match 'shared_8' in the first 8 projects.\n\n({unsearched}.)"
    missing = await error(h, operation="findReferences", symbol="shared_8")
    assert missing == f"No symbol named 'shared_8' in the first 8 projects of the workspace. {unsearched}."
    text, meta = await lsp(h, operation="incomingCalls", symbol="shared_3")
    assert text.startswith(
        f"(found in the first 8 projects; {unsearched}.)\nshared_3 (function) pkg3/mod3.py"
    )
    assert "no callers" in text and "Ask again" not in text and meta["complete"] is True
    text, meta = await lsp(h, operation="goToDefinition", filePath="pkg8/mod8.py", symbol="shared_8")
    assert meta["locations"][0]["path"] == "pkg8/mod8.py" and meta["complete"] is True


async def test_a_symlink_to_a_source_file_adds_no_second_candidate(lsp_harness: MakeHarness) -> None:
    # link_calc.py -> pkg/calc.py: total_area was "ambiguous" between two candidates both shown
    # as plain total_area (one declaration, reached by two names), and workspaceSymbol listed it twice.
    h = lsp_harness("py_project")
    (h.root / "link_calc.py").symlink_to("pkg/calc.py")
    text, meta = await lsp(h, operation="findReferences", symbol="total_area")
    assert "ambiguous" not in meta, text
    assert meta["target"]["path"] == "pkg/calc.py"
    text, meta = await lsp(h, operation="workspaceSymbol", query="total_area")
    assert [s["path"] for s in meta["symbols"] if s["name"] == "total_area"] == ["pkg/calc.py"], text
