"""lsp_bridge against typescript-language-server (TypeScript 5) and clangd from the OS."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lsp_bridge import Bridge
from tests.conftest import position, where

from .conftest import errors_after_change

Factory = Callable[..., Bridge]


async def test_typescript_navigation_and_diagnostics(
    project: Callable[[str], Path], bridge_factory: Factory
) -> None:
    root = project("ts_project")
    bridge = bridge_factory(root)
    main, calc, shapes = root / "src/main.ts", root / "src/calc.ts", root / "src/shapes.ts"

    definition = await bridge.definition(main, position(main, "totalArea", nth=1))
    assert [where(root, loc) for loc in definition.value] == [("src/calc.ts", 3)]

    refs = await bridge.references(calc, position(calc, "totalArea"))
    assert sorted(where(root, loc) for loc in refs.value) == [
        ("src/calc.ts", 3),
        ("src/main.ts", 1),
        ("src/main.ts", 6),
    ]

    impls = await bridge.implementation(shapes, position(shapes, "Shape"))
    assert sorted(where(root, loc) for loc in impls.value) == [
        ("src/shapes.ts", 5),
        ("src/shapes.ts", 12),
    ]

    # typescript-language-server publishes without versions: the first publish after a
    # change is taken as its answer, so settle the one for the opened file first.
    assert (await bridge.diagnostics_after_change(main)).value == []
    original = main.read_text()
    main.write_text(original.replace("totalArea(shapes)", "totalArea(42)"))
    broken = await errors_after_change(bridge, main)
    assert [(d.range.start.line, d.source) for d in broken] == [(5, "typescript")]
    main.write_text(original)
    assert (await bridge.diagnostics_after_change(main)).value == []


async def test_clangd_cross_file_references_calls_and_diagnostics(
    project: Callable[[str], Path], bridge_factory: Factory
) -> None:
    root = project("c_project")
    bridge = bridge_factory(root)
    helper_c, main_c = root / "helper.c", root / "main.c"

    definition = await bridge.definition(main_c, position(main_c, "helper(0)"))
    assert {where(root, loc) for loc in definition.value} <= {("helper.c", 5), ("helper.h", 3)}
    assert definition.value

    refs = await bridge.references(helper_c, position(helper_c, "helper(int"))
    files = {where(root, loc)[0] for loc in refs.value}
    assert {"a.c", "b.c", "main.c"} <= files, refs
    assert sum(1 for loc in refs.value if where(root, loc)[0] == "b.c") == 2

    items = (await bridge.prepare_call_hierarchy(helper_c, position(helper_c, "helper(int"))).value
    assert [item.name for item in items] == ["helper"]
    outgoing = (await bridge.outgoing_calls(items[0])).value
    assert [call.to.name for call in outgoing] == ["twice"]
    incoming = (await bridge.incoming_calls(items[0])).value
    assert {call.from_.name for call in incoming} == {"use_a", "use_b", "main"}

    original = main_c.read_text()
    main_c.write_text(original.replace("helper(0)", "helper(0, 1)"))
    assert any(d.range.start.line == 5 for d in await errors_after_change(bridge, main_c))
    main_c.write_text(original)
    assert await errors_after_change(bridge, main_c) == []


async def test_typescript_diagnostics_see_files_changed_deleted_and_created_elsewhere(
    project: Callable[[str], Path], bridge_factory: Factory
) -> None:
    # typescript-language-server re-checks a document only when it changes: the publish for
    # main.ts's version was taken as its diagnostics after a file it imports was changed,
    # deleted or created on disk, so they stayed as they were before.
    root = project("ts_project")
    bridge = bridge_factory(root)
    main, calc, extra = root / "src/main.ts", root / "src/calc.ts", root / "src/extra.ts"
    original = calc.read_text()

    async def errors() -> list[str]:
        return [d.message for d in await errors_after_change(bridge, main)]

    assert await errors() == []
    main.write_text(
        main.read_text().replace('"./calc";', '"./calc";\nimport { more } from "./extra";\nmore();')
    )
    assert await errors() == ["Cannot find module './extra' or its corresponding type declarations."]
    extra.write_text("export function more(): void {}\n")
    assert await errors() == []
    calc.write_text(original.replace("shapes: Shape[]", "shapes: Shape[], scale: number"))
    assert await errors() == ["Expected 2 arguments, but got 1."]
    calc.unlink()
    assert await errors() == ["Cannot find module './calc' or its corresponding type declarations."]
    calc.write_text(original)  # tsserver takes it in a second or so later (new_file_delay)
    assert await errors() == []


async def test_clangd_diagnostics_see_a_header_changed_on_disk(
    project: Callable[[str], Path], bridge_factory: Factory
) -> None:
    root = project("c_project")
    bridge = bridge_factory(root)
    header, main_c = root / "helper.h", root / "main.c"
    original = header.read_text()

    async def errors() -> list[int]:
        return [d.range.start.line for d in await errors_after_change(bridge, main_c)]

    assert await errors() == []
    header.write_text(original.replace("int helper(int value);", "int helper(int value, int more);"))
    assert await errors() == [5]
    header.write_text(original)
    assert await errors() == []


async def test_diagnostics_asked_again_after_another_file_opened_are_complete(
    project: Callable[[str], Path], bridge_factory: Factory
) -> None:
    # Opening helper.c counted as a change: main.c was sent again with the same text, for which
    # neither server publishes, so the third answer waited 15 s and said it may be incomplete.
    for name, first, second in (
        ("c_project", "main.c", "helper.c"),
        ("ts_project", "src/main.ts", "src/calc.ts"),
    ):
        root = project(name)
        bridge = bridge_factory(root)
        answers = [await bridge.diagnostics_after_change(root / f) for f in (first, second, first)]
        assert [(a.value, a.complete, a.notes) for a in answers] == [([], True, [])] * 3, name
