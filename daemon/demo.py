"""`lspilot demo`: lsp_bridge, then one agent turn, on a copy of the bundled sample project.

Part one asks basedpyright for definitions, cross-file references, implementations and call
hierarchy, then edits a file to introduce a type error, shows the diagnostics of exactly that
version, fixes it and shows they are gone. Part two is a whole agent turn (see ``demo_turn``).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from lsprotocol import types as lsp

from lsp_bridge import Answer, Bridge, BridgeConfig, Span, span_start
from lsp_bridge.documents import uri_to_path

from . import demo_turn

SAMPLE = Path(__file__).with_name("sample")
T = TypeVar("T")


def _position(path: Path, needle: str, nth: int = 0) -> lsp.Position:
    """Where the ``nth`` occurrence of ``needle`` starts in ``path`` (ASCII sample files)."""
    text = path.read_text()
    offset = -1
    for _ in range(nth + 1):
        offset = text.index(needle, offset + 1)
    line = text.count("\n", 0, offset)
    return lsp.Position(line=line, character=offset - (text.rfind("\n", 0, offset) + 1))


class Printer:
    def __init__(self, root: Path) -> None:
        self.root = root

    def where(self, uri: str, pos: lsp.Position) -> str:
        path = uri_to_path(uri)
        source = path.read_text().splitlines()[pos.line].strip()
        rel = path.relative_to(self.root)
        return f"{rel}:{pos.line + 1}:{pos.character + 1}  {source}"

    def locations(self, spans: list[Span]) -> None:
        for span in spans:
            print("    " + self.where(span[0], span_start(span)))


def _problems(diagnostics: list[lsp.Diagnostic]) -> list[lsp.Diagnostic]:
    """Errors and warnings (not hints such as "import not accessed")."""
    serious = (lsp.DiagnosticSeverity.Error, lsp.DiagnosticSeverity.Warning)
    return [d for d in diagnostics if d.severity in serious]


async def _timed(title: str, question: Callable[[], Awaitable[Answer[T]]]) -> Answer[T]:
    started = time.perf_counter()
    answer = await question()
    took = (time.perf_counter() - started) * 1000
    print(f"\n== {title}  ({took:.0f} ms)")
    for note in answer.notes:
        print(f"    note: {note}")
    return answer


async def run(config: BridgeConfig) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="lspilot-demo-"))
    root = workdir / "sample"
    shutil.copytree(SAMPLE, root)
    try:
        await tour(root, config)
        print()
        return await demo_turn.run(root)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


async def tour(root: Path, config: BridgeConfig) -> None:
    main, shapes, total = root / "main.py", root / "geometry/shapes.py", root / "geometry/total.py"
    show = Printer(root)
    print(f"lspilot demo, part 1: lsp_bridge driving basedpyright on a copy of the sample in {root}")
    async with Bridge(root, config) as bridge:
        answer = await _timed(
            "definition of total_area, from main.py",
            lambda: bridge.definition(main, _position(main, "total_area", 1)),
        )
        show.locations(answer.value)

        answer = await _timed(
            "references to Shape across files",
            lambda: bridge.references(shapes, _position(shapes, "Shape")),
        )
        show.locations(answer.value)

        answer = await _timed(
            "implementations of Shape.area",
            lambda: bridge.implementation(shapes, _position(shapes, "area(self)")),
        )
        show.locations(answer.value)

        items = await _timed(
            "call hierarchy of total_area",
            lambda: bridge.prepare_call_hierarchy(total, _position(total, "total_area")),
        )
        for item in items.value:
            incoming = await bridge.incoming_calls(item)
            outgoing = await bridge.outgoing_calls(item)
            print(f"    {item.name}")
            for call in incoming.value:
                print(
                    f"      called by {call.from_.name}:  "
                    + show.where(call.from_.uri, call.from_ranges[0].start)
                )
            for callee in sorted({call.to.name for call in outgoing.value}):
                print(f"      calls {callee}")

        original = main.read_text()
        main.write_text(original.replace("total_area(shapes)", "total_area(shapes[0])"))
        diagnostics = await _timed(
            "diagnostics after an edit that passes one Shape where a list is expected",
            lambda: bridge.diagnostics_after_change(main),
        )
        for diag in _problems(diagnostics.value):
            print(f"    {show.where(main.as_uri(), diag.range.start)}")
            print(f"      {diag.severity.name if diag.severity else 'note'}: {diag.message.splitlines()[0]}")

        main.write_text(original)
        diagnostics = await _timed(
            "diagnostics after fixing it", lambda: bridge.diagnostics_after_change(main)
        )
        print(f"    {len(_problems(diagnostics.value))} errors or warnings")
    print("\nlanguage servers stopped")
