"""The lsp tool against typescript-language-server, clangd, and jedi-language-server (which has
no call hierarchy or implementation: the tool must say so, naming the capability)."""

from __future__ import annotations

from pathlib import Path
from typing import cast

from lsp_bridge import Bridge, UnsupportedOperation
from tests.conftest import position
from tests.tools.conftest import MakeHarness
from tests.tools.test_lsp_tool import at, error, lsp, spot
from tools._lsp_errors import bridge_error


async def test_typescript(lsp_harness: MakeHarness) -> None:
    h = lsp_harness("ts_project")
    root = h.root
    text, meta = await lsp(h, operation="goToImplementation", symbol="Shape")
    assert (
        text.splitlines()[0]
        == f"2 implementations of Shape at {at(root, 'src/shapes.ts', 'Shape')} in 1 file:"
    )
    assert [(loc["line"], loc["character"]) for loc in meta["locations"]] == [
        (spot(root, "src/shapes.ts", "Circle")["line"], spot(root, "src/shapes.ts", "Circle")["character"]),
        (spot(root, "src/shapes.ts", "Square")["line"], spot(root, "src/shapes.ts", "Square")["character"]),
    ]

    text, meta = await lsp(h, operation="findReferences", filePath="src/shapes.ts", symbol="Shape.area")
    assert meta["count"] == 4  # the declaration, two implementations, and the call in calc.ts
    assert f"{at(root, 'src/calc.ts', 'area()')}  return shapes.reduce(" in text

    text, meta = await lsp(h, operation="incomingCalls", symbol="totalArea")
    assert text.splitlines()[1] == "1 caller in 1 file:"
    assert f"  main (function) {at(root, 'src/main.ts', 'main')}" in text
    assert meta["calls"][0]["fromRanges"][0]["line"] == position(root / "src/main.ts", "totalArea(").line + 1

    text, meta = await lsp(h, operation="outgoingCalls", filePath="src/main.ts", symbol="main")
    assert sorted(c["name"] for c in meta["calls"]) == ["Circle", "Square", "totalArea"]

    # workspace/symbol gives whole declarations here; the tool still points at the name.
    text, _ = await lsp(h, operation="workspaceSymbol", query="totalArea")
    assert f"totalArea (function) {at(root, 'src/calc.ts', 'totalArea')}  export function" in text

    text, _ = await lsp(h, operation="hover", filePath="src/main.ts", symbol="Circle", line=5)
    assert "Circle" in text and "```typescript" in text


async def test_clangd(lsp_harness: MakeHarness) -> None:
    h = lsp_harness("c_project")
    root = h.root
    text, meta = await lsp(h, operation="findReferences", filePath="helper.c", symbol="helper")
    files = {loc["path"] for loc in meta["locations"]}
    assert {"a.c", "b.c", "main.c", "helper.c"} <= files
    assert f"{at(root, 'b.c', 'helper(3)')}  int use_b(void) {{ return helper(2) + helper(3); }}" in text

    text, meta = await lsp(h, operation="incomingCalls", filePath="helper.c", symbol="helper")
    assert sorted(c["name"] for c in meta["calls"]) == ["main", "use_a", "use_b"]
    use_b = next(c for c in meta["calls"] if c["name"] == "use_b")
    assert [r["character"] for r in use_b["fromRanges"]] == [
        spot(root, "b.c", "helper(2)")["character"],
        spot(root, "b.c", "helper(3)")["character"],
    ]
    text, _ = await lsp(h, operation="outgoingCalls", filePath="helper.c", symbol="helper")
    assert f"  twice (function) {at(root, 'helper.c', 'twice')}" in text

    main_c = root / "main.c"
    main_c.write_text(main_c.read_text().replace("helper(0)", "helper(0, 1)"))
    text, meta = await lsp(h, operation="diagnostics", filePath="main.c")
    errors = [d for d in meta["diagnostics"] if d["severity"] == "error"]
    assert errors and errors[0]["line"] == position(main_c, "helper(0, 1)").line + 1


async def test_unsupported_operations_name_the_capability(lsp_harness: MakeHarness) -> None:
    # auto_install off: a missing jedi-language-server fails here instead of being downloaded.
    servers = {"basedpyright": {"enabled": False}, "jedi-language-server": {"enabled": True}}
    h = lsp_harness("py_project", servers=servers, auto_install=False)
    message = await error(h, operation="incomingCalls", filePath="pkg/calc.py", symbol="total_area")
    assert message == (
        "incomingCalls is not supported by jedi-language-server, the language server for calc.py: "
        "it does not offer callHierarchyProvider. Instead, use findReferences to find where it is "
        "called, or grep."
    )
    message = await error(h, operation="goToImplementation", filePath="pkg/shapes.py", symbol="Shape")
    assert "does not offer implementationProvider" in message
    # What jedi does support still works through the same tool.
    _, meta = await lsp(h, operation="findReferences", filePath="pkg/calc.py", symbol="total_area")
    assert meta["count"] == 4


def test_a_capability_missing_for_the_symbol_lookup_is_named_as_such() -> None:
    # A server without documentSymbol made findReferences with symbol "not supported" (it is;
    # finding the symbol is not), and the advice read "Instead, use grep and read instead."
    lookup = UnsupportedOperation("textDocument/documentSymbol", "document_symbol_provider", ["srv"], "a.py")
    assert bridge_error(cast(Bridge, None), lookup, "findReferences", Path("/w/a.py")) == (
        "findReferences with symbol needs documentSymbol, which srv, the language server for a.py, "
        "does not offer (documentSymbolProvider). Instead, give filePath with line (and character)."
    )
    hover = UnsupportedOperation("textDocument/hover", "hover_provider", ["srv"], "a.py")
    assert bridge_error(cast(Bridge, None), hover, "hover", Path("/w/a.py")) == (
        "hover is not supported by srv, the language server for a.py: it does not offer "
        "hoverProvider. Instead, use grep and read."
    )
