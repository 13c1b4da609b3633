"""lsp_bridge against basedpyright on a multi-file Python project."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lsp_bridge import Bridge
from tests.conftest import position, where

from .conftest import errors, errors_after_change

Factory = Callable[..., Bridge]


async def test_definition_and_references_cross_file(
    project: Callable[[str], Path], bridge_factory: Factory
) -> None:
    root = project("py_project")
    bridge = bridge_factory(root)
    app = root / "app.py"

    definition = await bridge.definition(app, position(app, "total_area", nth=1))
    assert [where(root, loc) for loc in definition.value] == [("pkg/calc.py", 4)]
    assert definition.complete

    calc = root / "pkg/calc.py"
    refs = await bridge.references(calc, position(calc, "total_area"))
    assert sorted(where(root, loc) for loc in refs.value) == [
        ("app.py", 1),
        ("app.py", 8),
        ("pkg/calc.py", 4),
        ("pkg/calc.py", 9),
    ]


async def test_implementation_and_call_hierarchy(
    project: Callable[[str], Path], bridge_factory: Factory
) -> None:
    root = project("py_project")
    bridge = bridge_factory(root)
    shapes, calc = root / "pkg/shapes.py", root / "pkg/calc.py"

    impls = await bridge.implementation(shapes, position(shapes, "area"))
    assert {where(root, loc) for loc in impls.value} >= {
        ("pkg/shapes.py", 10),
        ("pkg/shapes.py", 18),
    }

    items = (await bridge.prepare_call_hierarchy(calc, position(calc, "total_area"))).value
    assert [item.name for item in items] == ["total_area"]
    incoming = (await bridge.incoming_calls(items[0])).value
    assert sorted(call.from_.name for call in incoming) == ["describe", "main"]
    outgoing = (await bridge.outgoing_calls(items[0])).value
    assert "area" in {call.to.name for call in outgoing}


async def test_workspace_symbols(project: Callable[[str], Path], bridge_factory: Factory) -> None:
    root = project("py_project")
    bridge = bridge_factory(root)
    symbols = (await bridge.workspace_symbols("Square", near=root / "app.py")).value
    found = {(s.name, Path(s.location.uri).name) for s in symbols if hasattr(s.location, "range")}
    assert ("Square", "shapes.py") in found


async def test_diagnostics_follow_each_change(
    project: Callable[[str], Path], bridge_factory: Factory
) -> None:
    root = project("py_project")
    bridge = bridge_factory(root)
    app = root / "app.py"
    original = app.read_text()

    assert await errors_after_change(bridge, app) == []

    app.write_text(original.replace("total_area(shapes)", "total_area(42)"))
    broken = await errors_after_change(bridge, app)
    assert len(broken) == 1
    assert broken[0].range.start.line == 7
    assert "total_area" in broken[0].message

    app.write_text(original)
    assert await errors_after_change(bridge, app) == []


async def test_diagnostics_asked_while_the_server_still_loads_are_pulled_once_it_can(
    project: Callable[[str], Path], bridge_factory: Factory
) -> None:
    # basedpyright registers pull diagnostics as its load ends and publishes nothing meanwhile.
    # Asked past ready_timeout (a server slow to start), the bridge waited diagnostics_timeout
    # (15 s) for a publish that never came, then answered "no errors" with "published no
    # diagnostics for version 1"; workspace diagnostics waited so for every file.
    root = project("py_project")
    bridge = bridge_factory(root, ready_timeout=0.0)
    app = root / "app.py"
    app.write_text(app.read_text().replace("total_area(shapes)", "total_area(42)"))
    answer = await bridge.diagnostics_after_change(app)
    assert [(d.range.start.line, "total_area" in d.message) for d in errors(answer.value)] == [(7, True)]
    assert not answer.complete and len(answer.notes) == 1
    assert answer.notes[0].startswith("basedpyright was still busy (its project load)")


async def test_overlay_text_wins_over_disk(project: Callable[[str], Path], bridge_factory: Factory) -> None:
    root = project("py_project")
    bridge = bridge_factory(root)
    app = root / "app.py"
    unsaved = app.read_text() + "\nundefined_name_here()\n"
    bridge.open_document(app, unsaved)
    assert any("undefined_name_here" in d.message for d in await errors_after_change(bridge, app))
    bridge.close_document(app)
    assert await errors_after_change(bridge, app) == []


async def test_an_editors_unsaved_text_is_what_questions_about_other_files_see(
    project: Callable[[str], Path], bridge_factory: Factory
) -> None:
    # The editor's unsaved text reached the server only when a question was about that very file:
    # references asked from calc.py came from app.py on disk, and missed an unsaved new file.
    root = project("py_project")
    bridge = bridge_factory(root)
    app, calc, new = root / "app.py", root / "pkg/calc.py", root / "new.py"
    await bridge.references(calc, position(calc, "total_area"))  # the server has loaded
    bridge.open_document(app, "# two new lines\n# at the top\n" + app.read_text())
    bridge.open_document(new, "from pkg.calc import total_area\n\ntotal_area([])\n")
    refs = await bridge.references(calc, position(calc, "total_area"))
    assert sorted(where(root, loc) for loc in refs.value) == [
        ("app.py", 3),
        ("app.py", 10),
        ("new.py", 1),
        ("new.py", 3),
        ("pkg/calc.py", 4),
        ("pkg/calc.py", 9),
    ]


async def test_outside_edit_on_disk_is_seen_by_next_request(
    project: Callable[[str], Path], bridge_factory: Factory
) -> None:
    root = project("py_project")
    bridge = bridge_factory(root)
    calc = root / "pkg/calc.py"
    before = await bridge.references(calc, position(calc, "total_area"))
    assert len(before.value) == 4

    # Another program edits an open file and creates a new one; nobody tells the bridge.
    app = root / "app.py"
    app.write_text(app.read_text() + "    print(total_area([]))\n")
    (root / "extra.py").write_text("from pkg.calc import total_area\n\ntotal_area([])\n")

    after = await bridge.references(calc, position(calc, "total_area"))
    assert sorted(where(root, loc) for loc in after.value) == [
        ("app.py", 1),
        ("app.py", 8),
        ("app.py", 9),
        ("extra.py", 1),
        ("extra.py", 3),
        ("pkg/calc.py", 4),
        ("pkg/calc.py", 9),
    ]


async def test_a_load_log_sent_before_files_were_created_does_not_end_the_rescan(
    project: Callable[[str], Path], bridge_factory: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # basedpyright logs "Found N source files" twice at start; the second can arrive after the
    # bridge saw new files, and must not pass for the log of the rescan that finds them.
    root = project("py_project")
    bridge = bridge_factory(root)
    calc = root / "pkg/calc.py"
    assert len((await bridge.references(calc, position(calc, "total_area"))).value) == 4
    conn = bridge.connections[0]
    expect_rescan = conn.loading.expect_rescan
    ready_after_late_log: list[bool] = []

    def rescan_then_late_log() -> None:
        expect_rescan()
        conn.rpc.on_message(
            {
                "jsonrpc": "2.0",
                "method": "window/logMessage",
                "params": {"type": 4, "message": "Found 6 source files"},
            }
        )
        ready_after_late_log.append(conn.loading.ready)

    monkeypatch.setattr(conn.loading, "expect_rescan", rescan_then_late_log)
    (root / "extra.py").write_text("from pkg.calc import total_area\n\ntotal_area([])\n")

    after = await bridge.references(calc, position(calc, "total_area"))
    assert ready_after_late_log == [False]
    assert {where(root, loc) for loc in after.value} >= {("extra.py", 1), ("extra.py", 3)}
    assert after.complete
