"""The lsp tool while its servers load and the workspace changes under it: answers from a server
still loading, files deleted between two questions (against basedpyright on the Python fixture)."""

from __future__ import annotations

from tests.tools.conftest import MakeHarness
from tests.tools.test_lsp_tool import error, lsp


async def test_a_server_still_loading_is_said_once(lsp_harness: MakeHarness) -> None:
    # Asked past ready_timeout, each file of workspace diagnostics added "basedpyright was still
    # busy ...", and the answer repeated it as often: four times here, fifty for a large project.
    h = lsp_harness("py_project", ready_timeout=0.0)
    busy = "basedpyright was still busy (its project load) after 0s; the answer may be incomplete"
    text, meta = await lsp(h, operation="diagnostics")
    assert meta["complete"] is False and meta["notes"] == [busy] and text.count(busy) == 1


async def test_a_new_file_open_in_the_editor_and_not_saved_yet_is_asked_about(
    lsp_harness: MakeHarness,
) -> None:
    # In serve mode the editor's buffers are the bridge's overlays, a new file too (read shows
    # its text); the lsp tool said "File not found: scratch.py" for it.
    h = lsp_harness("py_project")
    h.env.bridge.open_document(
        h.root / "scratch.py", "from app import main\n\n\ndef later() -> None:\n    main()\n"
    )
    text, meta = await lsp(h, operation="documentSymbol", filePath="scratch.py")
    assert [s["name"] for s in meta["symbols"]] == ["later"] and text.startswith("1 symbol in scratch.py")
    text, meta = await lsp(h, operation="goToDefinition", filePath="scratch.py", line=5)
    assert [(loc["path"], loc["line"]) for loc in meta["locations"]] == [("app.py", 5)]
    text, meta = await lsp(h, operation="diagnostics", filePath="scratch.py")
    assert meta["checked"] == 1 and text == "No errors or warnings in scratch.py."
    missing = await error(h, operation="documentSymbol", filePath="scratch2.py")
    assert missing.startswith("File not found: scratch2.py")


async def test_workspace_diagnostics_after_a_file_the_servers_had_open_was_deleted(
    lsp_harness: MakeHarness,
) -> None:
    # The deleted file was still among the bridge's documents (it drops them at its next
    # request), so workspace diagnostics listed it first and said "Nothing found yet, but the
    # answer may be incomplete: pkg/calc.py was not checked: file not found ... Ask again in a
    # moment", and counted it as checked.
    h = lsp_harness("py_project")
    await lsp(h, operation="findReferences", filePath="pkg/calc.py", symbol="total_area")
    (h.root / "pkg/calc.py").unlink()
    text, meta = await lsp(h, operation="diagnostics")
    assert meta["complete"] is True and meta["notes"] == [] and meta["checked"] == 5
    paths = {d["path"] for d in meta["diagnostics"]}
    assert paths == {"app.py"} and "pkg/calc.py" not in text and "Ask again" not in text
    assert 'Import "pkg.calc" could not be resolved' in text
