"""Diagnostics after edits, from a real basedpyright on a copy of tests/fixtures/py_project."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from lsprotocol.types import Diagnostic

from lsp_bridge import Answer, Bridge
from tools import DiskChanges, PermissionRequest, Reply, Rule, ToolContext, execute

from ..lsp_bridge.test_protocol import scripted_servers
from .conftest import Harness, ScriptedHuman, make_harness

ONCE = Reply("once")
TYPE_ERROR = (
    'ERROR [8:22] Argument of type "Literal[42]" cannot be assigned to parameter "shapes" of type '
    '"list[Shape]" in function "total_area" "Literal[42]" is not assignable to "list[Shape]" (basedpyright)'
)


@pytest.fixture
def h(project: Callable[[str], Path], bridge_factory: Callable[..., Bridge], tmp_path: Path) -> Harness:
    root = project("py_project")
    harness = make_harness(root, tmp_path / "data")
    harness.env.bridge_factory = lambda: bridge_factory(root)
    harness.human.replies = [ONCE] * 20
    for name in ("app.py", "pkg/calc.py", "pkg/shapes.py"):
        harness.env.session.record_read(root / name)
    return harness


def output(outcome: object) -> str:
    result = getattr(outcome, "result", None)
    assert result is not None, getattr(outcome, "error", None)
    return result.output


async def test_edit_reports_exactly_the_new_error_and_nothing_once_fixed(h: Harness) -> None:
    broken = await h.ok(
        "edit", {"filePath": "app.py", "oldString": "total_area(shapes)", "newString": "total_area(42)"}
    )
    assert output(broken) == "Edited app.py: replaced 1 occurrence (line 8).\n" + (
        f"New problems in app.py after this change, please fix:\n{TYPE_ERROR}"
    )
    assert broken.result is not None
    assert broken.result.metadata["diagnostics"][str(h.root / "app.py")]["new"] == [TYPE_ERROR]
    fixed = await h.ok(
        "edit", {"filePath": "app.py", "oldString": "total_area(42)", "newString": "total_area(shapes)"}
    )
    assert output(fixed) == "Edited app.py: replaced 1 occurrence (line 8)."


async def test_an_edit_no_one_has_to_approve_is_diagnosed_the_same(
    project: Callable[[str], Path], bridge_factory: Callable[..., Bridge], tmp_path: Path
) -> None:
    # Allowed by the rules, the "after" pull is sent before the permission check and the write;
    # the result must be the same as when a human approves.
    root = project("py_project")
    h = make_harness(root, tmp_path / "data", rules=[Rule("edit", "*", "allow")])
    h.env.bridge_factory = lambda: bridge_factory(root)
    h.env.session.record_read(root / "app.py")
    for _ in range(2):  # the second time the "before" is known, so the pull is sent at once
        broken = await h.ok(
            "edit", {"filePath": "app.py", "oldString": "total_area(shapes)", "newString": "total_area(42)"}
        )
        assert output(broken).endswith(f"New problems in app.py after this change, please fix:\n{TYPE_ERROR}")
        fixed = await h.ok(
            "edit", {"filePath": "app.py", "oldString": "total_area(42)", "newString": "total_area(shapes)"}
        )
        assert output(fixed) == "Edited app.py: replaced 1 occurrence (line 8)."
    assert h.human.asked == []
    doc = h.env.bridge.documents.get(root / "app.py")
    assert doc is not None and not doc.overlay and doc.text == (root / "app.py").read_text()


async def test_a_protected_file_under_edit_allowed_keeps_none_of_its_text_with_the_server_while_asked(
    project: Callable[[str], Path],
    bridge_factory: Callable[..., Bridge],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Under edit = allow the "after" pull goes out before the protected check. While the user
    # decides, and after a refusal, the server has the disk's text; once approved, the change is
    # written and diagnosed as any other.
    root = project("py_project")
    helper = root / ".lspilot/tools/helper.py"
    helper.parent.mkdir(parents=True)
    helper.write_text("def helper() -> int:\n    return 1\n")
    h = make_harness(root, tmp_path / "data", rules=[Rule("edit", "*", "allow")])
    bridge = bridge_factory(root)
    h.env.bridge_factory = lambda: bridge
    h.env.session.record_read(helper)
    assert (await bridge.diagnostics_after_change(helper)).value == []  # the "before" is known
    pulled: list[str | None] = []
    overlaid: list[bool] = []
    pull, ask = bridge.diagnostics_after_change, h.human.permission

    async def recorded(path: Path, text: str | None = None) -> Answer[list[Diagnostic]]:
        pulled.append(text)
        return await pull(path, text)

    async def inspected(request: PermissionRequest) -> Reply:
        doc = bridge.documents.get(helper)
        overlaid.append(doc is not None and doc.overlay)
        return await ask(request)

    monkeypatch.setattr(bridge, "diagnostics_after_change", recorded)
    monkeypatch.setattr(h.human, "permission", inspected)
    change = {"filePath": ".lspilot/tools/helper.py", "oldString": "return 1", "newString": "return 'x'"}
    new_text = "def helper() -> int:\n    return 'x'\n"
    outcome = await h.call("edit", change)
    assert pulled == [new_text] and overlaid == [False]  # asked before the protected check
    assert outcome.error is not None and "rejected protected .lspilot/tools/helper.py" in outcome.error
    assert helper.read_text() == "def helper() -> int:\n    return 1\n"
    doc = bridge.documents.get(helper)
    assert doc is not None and not doc.overlay and doc.text == helper.read_text()
    assert (await bridge.diagnostics_after_change(helper)).value == []  # not 'x' for an int
    h.human.replies = [ONCE]
    approved = await h.ok("edit", change)
    assert helper.read_text() == new_text and overlaid == [False, False]
    assert pulled[-1] == new_text  # asked again once approved
    assert "New problems in .lspilot/tools/helper.py after this change" in output(approved)
    assert [a.permission for a in h.human.asked] == ["protected", "protected"]


async def test_old_errors_are_counted_not_repeated_even_when_lines_move(h: Harness) -> None:
    await h.ok(
        "edit", {"filePath": "app.py", "oldString": "total_area(shapes)", "newString": "total_area(42)"}
    )
    moved = await h.ok(
        "edit",
        {
            "filePath": "app.py",
            "oldString": "def main() -> None:\n",
            "newString": "def main() -> None:\n    x: int = 'a'\n",
        },
    )
    text = output(moved)
    assert "New problems in app.py after this change, please fix:\nERROR [6:14]" in text
    assert 'Type "Literal[\'a\']" is not assignable to declared type "int"' in text
    assert "[9:22]" not in text  # the old error, now a line further down, is not new
    assert "(app.py: 1 problem(s) that were there before are not shown.)" in text


async def test_write_reports_callers_it_broke_in_other_files(h: Harness) -> None:
    calc = h.root / "pkg/calc.py"
    renamed = calc.read_text().replace("total_area", "sum_area")
    outcome = await h.ok("write", {"filePath": "pkg/calc.py", "content": renamed})
    assert output(outcome) == (
        "Replaced pkg/calc.py (9 lines).\nNew problems in app.py after this change, please fix:\n"
        'ERROR [1:32] "total_area" is unknown import symbol (basedpyright)'
    )


async def test_apply_patch_reports_callers_it_broke(h: Harness) -> None:
    patch = (
        "*** Begin Patch\n*** Update File: pkg/shapes.py\n@@ class Square(Shape):\n"
        "-    def __init__(self, side: float) -> None:\n"
        "+    def __init__(self, side: float, unit: str) -> None:\n"
        "*** End Patch"
    )
    outcome = await h.ok("apply_patch", {"patchText": patch})
    text = output(outcome)
    assert text.startswith("Applied the patch:\n  M pkg/shapes.py\nNew problems in app.py after this change")
    assert 'ERROR [6:28] Argument missing for parameter "unit" (basedpyright)' in text


async def test_files_without_a_server_get_no_diagnostics(h: Harness) -> None:
    outcome = await h.ok("write", {"filePath": "notes.txt", "content": "hello\n"})
    assert output(outcome) == "Created notes.txt (1 line)."
    assert h.env.bridge.connections == []


async def test_warnings_only_when_configured(
    project: Callable[[str], Path], bridge_factory: Callable[..., Bridge], tmp_path: Path
) -> None:
    root = project("py_project")
    (root / "pyproject.toml").write_text(
        '[project]\nname = "fixture"\nversion = "0"\n\n[tool.basedpyright]\ntypeCheckingMode = "standard"\n'
        'reportUnusedExpression = "warning"\n'
    )
    for warnings in (False, True):
        harness = make_harness(root, tmp_path / f"data-{warnings}")
        harness.env.bridge_factory = lambda: bridge_factory(root)
        harness.env.settings = {"tools": {"edit": {"warnings": warnings}}}
        harness.human.replies = [ONCE]
        harness.env.session.record_read(root / "app.py")
        old = "print(describe(shapes))\n" if not warnings else "1 + 1\n"
        new = "1 + 1\n" if not warnings else "2 + 2\n    3 + 3\n"
        text = output(await harness.ok("edit", {"filePath": "app.py", "oldString": old, "newString": new}))
        if warnings:
            assert text == (
                "Edited app.py: replaced 1 occurrence (line 7).\n"
                "New problems in app.py after this change, please fix:\n"
                "WARN [7:5] Expression value is unused (basedpyright)\n"
                "WARN [8:5] Expression value is unused (basedpyright)"
            )
        else:
            assert text == "Edited app.py: replaced 1 occurrence (line 7)."
        await harness.env.close()


async def test_a_stop_while_diagnostics_are_awaited_still_reports_the_written_edit(
    tmp_path: Path, bridge_factory: Callable[..., Bridge]
) -> None:
    # The scripted server never answers the pull for a text with HANG in it, so the edit waits
    # for its diagnostics after writing; stopped then, the model must still learn that the file
    # changed.
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\n")
    h = make_harness(root, tmp_path / "data")
    h.env.bridge_factory = lambda: bridge_factory(root, servers=scripted_servers())
    h.env.session.record_read(root / "a.py")
    h.human.replies = [ONCE]
    ctx = ToolContext(h.env, "call-1")
    args = {"filePath": "a.py", "oldString": "x = 1", "newString": "x = 2  # HANG"}
    running = asyncio.create_task(execute(h.registry, "edit", args, ctx))
    async with asyncio.timeout(30):
        while (root / "a.py").read_text() == "x = 1\n":  # noqa: ASYNC110 - a file, not an event
            await asyncio.sleep(0.01)
    ctx.abort.set()
    outcome = await asyncio.wait_for(running, 10)
    assert output(outcome) == (
        "Edited a.py: replaced 1 occurrence (line 1).\n(a.py: diagnostics not checked: the call was stopped)"
    )
    assert (root / "a.py").read_text() == "x = 2  # HANG\n"


async def test_what_a_denied_file_holds_is_not_quoted_and_its_breakage_not_reported(h: Harness) -> None:
    # The lsp tool cut these already; the edit tools' report still quoted the denied file's value
    # ("Literal['s3cr3t']") and reported the errors in the denied file itself.
    (h.root / "pkg/vault.py").write_text(
        'from typing import Final\n\nfrom pkg.calc import total_area\n\nAPI_KEY: Final = "s3cr3t"\n'
        "print(total_area([]))\n"
    )
    h.env.permissions.rules.append(Rule("read", "pkg/vault.py", "deny"))
    imports = "from pkg.shapes import Circle, Square"
    uses = f"{imports}\nfrom pkg.vault import API_KEY\n\nKEY: int = API_KEY"
    text = output(await h.ok("edit", {"filePath": "app.py", "oldString": imports, "newString": uses}))
    assert "s3cr3t" not in text and 'Type "Literal[…]" is not assignable to declared type "int"' in text
    assert text.endswith("were left out of the messages.)")
    renamed = (h.root / "pkg/calc.py").read_text().replace("total_area", "sum_area")
    text = output(await h.ok("write", {"filePath": "pkg/calc.py", "content": renamed}))
    assert "app.py" in text and "vault" not in text


class EditorBuffers(DiskChanges):
    """The disk sink, with an editor holding ``paths`` open: the tools see its buffers, which
    are fed to the bridge as `lspilot serve` does."""

    def __init__(self, bridge: Bridge, paths: list[Path]) -> None:
        self.bridge = bridge
        self.buffers = {path: path.read_text() for path in paths}
        for path, text in self.buffers.items():
            bridge.open_document(path, text)

    def unsaved(self, path: Path) -> str | None:
        return self.buffers.get(path)

    def type(self, path: Path, text: str) -> None:
        self.buffers[path] = text
        self.bridge.update_document(path, text)


class TypesWhileAsked(ScriptedHuman):
    """Approves once, having typed ``typing`` (path: new text) into the editor after the
    change's "before" of ``watched`` was taken."""

    def __init__(self, editor: EditorBuffers, watched: Path, typing: dict[Path, str]) -> None:
        super().__init__()
        self.editor, self.watched, self.typing = editor, watched, typing

    async def permission(self, request: PermissionRequest) -> Reply:
        self.asked.append(request)
        text, known = self.editor.buffers[self.watched], self.editor.bridge.known_diagnostics
        async with asyncio.timeout(60):
            while known(self.watched, text) is None:  # noqa: ASYNC110 - the bridge has no event for it
                await asyncio.sleep(0.01)
        for path, typed in self.typing.items():
            self.editor.type(path, typed)
        return ONCE


RENAME = 'ERROR [1:32] "total_area" is unknown import symbol (basedpyright)'


async def test_an_error_typed_in_a_caller_while_the_change_is_asked_is_not_the_changes(h: Harness) -> None:
    # app.py is open in the editor. While the rename of total_area is asked, the user types an
    # error of their own into app.py: only the broken import is the change's.
    app, calc = h.root / "app.py", h.root / "pkg/calc.py"
    h.env.changes = editor = EditorBuffers(h.env.bridge, [app])
    typed = app.read_text() + 'label: int = "shapes"\n'
    h.env.permissions.asker = TypesWhileAsked(editor, app, {app: typed})
    renamed = calc.read_text().replace("total_area", "sum_area")
    outcome = await h.ok("write", {"filePath": "pkg/calc.py", "content": renamed})
    assert output(outcome) == (
        f"Replaced pkg/calc.py (9 lines).\nNew problems in app.py after this change, please fix:\n{RENAME}\n"
        "(app.py: 1 problem(s) that were there before are not shown.)"
    )


async def test_a_change_the_editor_applied_as_it_was_confirmed_is_not_taken_as_before(h: Harness) -> None:
    # A client without lspilot's review applies the change itself as the user confirms it: by
    # the approval its buffer holds it, and a "before" taken then would count what it broke as old.
    app, calc = h.root / "app.py", h.root / "pkg/calc.py"
    h.env.changes = editor = EditorBuffers(h.env.bridge, [app, calc])
    typed = app.read_text() + 'label: int = "shapes"\n'
    renamed = calc.read_text().replace("total_area", "sum_area")
    h.env.permissions.asker = TypesWhileAsked(editor, app, {app: typed, calc: renamed})
    text = output(await h.ok("write", {"filePath": "pkg/calc.py", "content": renamed}))
    assert f"New problems in app.py after this change, please fix:\n{RENAME}\n" in text, text
