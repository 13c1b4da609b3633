"""Files starting with a UTF-8 BOM: every position on their first line is where editors (which
hide the BOM) and the model see it, whether the server was sent the text or read the file itself.

basedpyright and clangd count a BOM as a column of the first line, in text they are sent and in
files they read from disk; typescript-language-server drops it when it reads a file.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from lsprotocol import types as lsp

from lsp_bridge import Answer, Bridge, Span
from lsp_bridge.documents import uri_to_path

Factory = Callable[..., Bridge]
BOM = "\ufeff"


async def test_first_line_positions_of_files_starting_with_a_bom_are_as_editors_count_them(
    tmp_path: Path, bridge_factory: Factory
) -> None:
    # The bridge sent a UTF-8 BOM as the text's first character, and basedpyright and clangd
    # counted it as a column, as they do in files they read from disk themselves: positions on
    # line 1 came one column to the right of where editors (which hide the BOM) and the model
    # see them, and the lines the bridge gave kept the BOM too.
    (tmp_path / "a.py").write_text(f"{BOM}from b import bar; y: int = ''\nbar()\n")
    (tmp_path / "b.py").write_text(f"{BOM}def bar(): pass\n")
    (tmp_path / "a.c").write_text(f"{BOM}int foo(void) {{ return 0; }}\n")
    (tmp_path / "b.c").write_text(f"{BOM}int foo(void);\nint x(void) {{ return foo(); }}\n")
    commands = [{"directory": str(tmp_path), "file": c, "arguments": ["cc", "-c", c]} for c in ("a.c", "b.c")]
    (tmp_path / "compile_commands.json").write_text(json.dumps(commands))
    bridge = bridge_factory(tmp_path)

    def found(answer: Answer[list[Span]]) -> list[tuple[str, int, int, int]]:
        assert answer.complete
        return sorted((uri_to_path(s[0]).name, s[1], s[2], s[4]) for s in answer.value)

    a_py, b_c = tmp_path / "a.py", tmp_path / "b.c"
    uses = await bridge.references(a_py, lsp.Position(line=1, character=0))  # b.py: read from disk
    assert found(uses) == [("a.py", 0, 14, 17), ("a.py", 1, 0, 3), ("b.py", 0, 4, 7)]
    assert found(await bridge.definition(a_py, lsp.Position(line=0, character=14))) == [("b.py", 0, 4, 7)]
    diagnostics = await bridge.diagnostics_after_change(a_py)
    assert [(d.range.start.line, d.range.start.character) for d in diagnostics.value] == [(0, 28)]
    uses = await bridge.references(b_c, lsp.Position(line=1, character=21))  # a.c: from the index
    assert found(uses) == [("a.c", 0, 4, 7), ("b.c", 0, 4, 7), ("b.c", 1, 21, 24)]
    assert found(await bridge.definition(b_c, lsp.Position(line=0, character=4))) == [("a.c", 0, 4, 7)]
    assert bridge.source_lines(a_py)[0] == "from b import bar; y: int = ''"
    assert bridge.source_lines(tmp_path / "b.py")[0] == "def bar(): pass"
    # typescript-language-server drops the BOM of a file it reads itself: nothing to move back.
    (tmp_path / "a.ts").write_text(f'{BOM}import {{ bar }} from "./b";\nbar();\n')
    (tmp_path / "b.ts").write_text(f"{BOM}export function bar() {{}}\n")
    (tmp_path / "tsconfig.json").write_text("{}")
    uses = await bridge.references(tmp_path / "a.ts", lsp.Position(line=1, character=0))
    assert found(uses) == [("a.ts", 0, 9, 12), ("a.ts", 1, 0, 3), ("b.ts", 0, 16, 19)]


async def test_a_bom_written_into_a_file_later_counts_from_the_next_answer(
    tmp_path: Path, bridge_factory: Factory
) -> None:
    # Whether an answer's files start with a BOM is kept between answers (hundreds of files are
    # named at once); a BOM added or removed on disk must move the columns at the next answer.
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("from b import bar\nbar()\n")
    b.write_text("def bar(): pass\n")
    bridge = bridge_factory(tmp_path)

    async def in_b() -> list[tuple[int, int, int]]:
        answer = await bridge.references(a, lsp.Position(line=1, character=0))
        assert answer.complete
        return [(s[1], s[2], s[4]) for s in answer.value if s[0] == b.as_uri()]

    assert await in_b() == [(0, 4, 7)]
    b.write_text(f"{BOM}def bar(): pass\n")
    assert await in_b() == [(0, 4, 7)]
    b.write_text("def bar(): pass\n")
    assert await in_b() == [(0, 4, 7)]


Place = tuple[str, int, int, int]


def _at(uri: str, span: lsp.Range) -> Place:
    """(file name, line, start column, end column) of a range."""
    return (uri_to_path(uri).name, span.start.line, span.start.character, span.end.character)


def _symbols(answer: Answer[list[lsp.SymbolInformation | lsp.WorkspaceSymbol]]) -> list[Place]:
    locations = [s.location for s in answer.value]
    return sorted(_at(loc.uri, loc.range) for loc in locations if isinstance(loc, lsp.Location))


def _items(answer: Answer[list[lsp.CallHierarchyItem]]) -> list[Place]:
    return [_at(item.uri, item.selection_range) for item in answer.value]


def _callers(answer: Answer[list[lsp.CallHierarchyIncomingCall]]) -> dict[Place, list[Place]]:
    """Each caller's name and the calls in it."""
    calls = [(call.from_, call.from_ranges) for call in answer.value]
    return {_at(item.uri, item.selection_range): [_at(item.uri, r) for r in spans] for item, spans in calls}


def _related(diagnostics: list[lsp.Diagnostic]) -> list[Place]:
    return [_at(i.location.uri, i.location.range) for d in diagnostics for i in d.related_information or ()]


async def test_symbols_call_hierarchy_and_related_locations_in_bom_files_basedpyright_read(
    tmp_path: Path, bridge_factory: Factory
) -> None:
    # Only location answers were moved back: workspace symbols, call hierarchy items, the
    # fromRanges of incoming calls and diagnostics' related locations in files basedpyright
    # read from disk came one column right on line 1.
    a = tmp_path / "a.py"
    a.write_text(f"{BOM}import b, c, d, e\nb.bar(); c.caller(); d.other()\nclass B(e.A): x: str = ''\n")
    (tmp_path / "b.py").write_text(f"{BOM}def bar(): pass\n")
    (tmp_path / "c.py").write_text(f"{BOM}def caller(): import b; b.bar()\n")
    (tmp_path / "d.py").write_text(f"{BOM}def other(): import b; b.bar()\n")
    (tmp_path / "e.py").write_text(f"{BOM}class A: x: int = 0\n")
    bridge = bridge_factory(tmp_path)

    assert _symbols(await bridge.workspace_symbols("caller", near=a)) == [("c.py", 0, 4, 10)]
    callers = await bridge.prepare_call_hierarchy(a, lsp.Position(line=1, character=11))
    assert _items(callers) == [("c.py", 0, 4, 10)]
    assert [_at(item.uri, item.range) for item in callers.value] == [("c.py", 0, 4, 10)]
    outgoing = (await bridge.outgoing_calls(callers.value[0])).value  # opens c.py in the server
    assert [_at(call.to.uri, call.to.selection_range) for call in outgoing] == [("b.py", 0, 4, 7)]
    in_caller = [_at(callers.value[0].uri, r) for call in outgoing for r in call.from_ranges]
    assert in_caller == [("c.py", 0, 26, 29)]
    bars = await bridge.prepare_call_hierarchy(a, lsp.Position(line=1, character=2))
    assert _items(bars) == [("b.py", 0, 4, 7)]
    incoming = _callers(await bridge.incoming_calls(bars.value[0]))
    assert incoming[("d.py", 0, 4, 9)] == [("d.py", 0, 25, 28)]
    assert _related((await bridge.diagnostics_after_change(a)).value) == [("e.py", 0, 9, 10)]
    b = tmp_path / "b.py"
    symbols = (await bridge.document_symbols(b)).value  # open: sent without the BOM
    names = [_at(b.as_uri(), s.selection_range) for s in symbols if isinstance(s, lsp.DocumentSymbol)]
    assert names == [("b.py", 0, 4, 7)]


async def test_symbols_call_hierarchy_and_related_locations_in_bom_files_clangd_read(
    tmp_path: Path, bridge_factory: Factory
) -> None:
    (tmp_path / "h.h").write_text(f"{BOM}int foo(int a);\n")
    (tmp_path / "b.c").write_text(f"{BOM}int bar(void) {{ return 0; }}\n")
    (tmp_path / "c.c").write_text(f"{BOM}int bar(void); int caller(void) {{ return bar(); }}\n")
    a = tmp_path / "a.c"
    a.write_text(
        f'{BOM}#include "h.h"\nint bar(void); int caller(void);\n'
        "int main(void) { return bar() + caller(); }\nint foo(void);\n"
    )
    files = ("a.c", "b.c", "c.c")
    commands = [{"directory": str(tmp_path), "file": c, "arguments": ["cc", "-c", c]} for c in files]
    (tmp_path / "compile_commands.json").write_text(json.dumps(commands))
    bridge = bridge_factory(tmp_path)

    assert _symbols(await bridge.workspace_symbols("caller", near=a)) == [("c.c", 0, 19, 25)]
    callers = await bridge.prepare_call_hierarchy(a, lsp.Position(line=2, character=33))
    outgoing = (await bridge.outgoing_calls(callers.value[0])).value  # from the index: b.c not open
    assert [_at(call.to.uri, call.to.selection_range) for call in outgoing] == [("b.c", 0, 4, 7)]
    bars = await bridge.prepare_call_hierarchy(a, lsp.Position(line=2, character=25))
    incoming = _callers(await bridge.incoming_calls(bars.value[0]))
    assert incoming[("c.c", 0, 19, 25)] == [("c.c", 0, 41, 44)]
    assert _related((await bridge.diagnostics_after_change(a)).value) == [("h.h", 0, 4, 7)]
    again = await bridge.diagnostics_after_change(a)  # the same publish answers: moved only once
    assert _related(again.value) == [("h.h", 0, 4, 7)]
