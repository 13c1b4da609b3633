"""`lspilot serve`: navigate (locations for the editor, UTF-16 columns) and following the agent
(window/showDocument of what it reads, finds and changes)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from daemon.scripted_model import ScriptedModel, Turn
from lsp_bridge.documents import uri_to_path

from .serving import FULL, Editor, connect, workspace

__all__ = ["connect", "workspace"]  # the fixtures, shared with the other test_serve_* files


async def test_navigate_returns_locations_for_the_editor(
    connect: Callable[..., Any], workspace: Path
) -> None:
    (workspace / "b.py").write_text("from a import area\n\nprint(area(2))\n")
    editor: Editor = await connect("neovim", FULL)
    answer = await editor.command(
        "lspilot.navigate",
        {"operation": "findReferences", "uri": (workspace / "a.py").as_uri(), "symbol": "area"},
    )
    places = {(loc["path"], loc["line"]) for loc in answer["locations"]}
    assert {("a.py", 1), ("b.py", 1), ("b.py", 3)} <= places
    with pytest.raises(Exception, match="operation"):
        await editor.command(
            "lspilot.navigate", {"operation": "teleport", "uri": (workspace / "a.py").as_uri()}
        )


async def test_navigate_takes_the_editors_utf16_column(connect: Callable[..., Any], workspace: Path) -> None:
    # Each emoji is two UTF-16 units and one character: read as characters, the column pointed
    # six characters past `area`, at `(2))`, and nothing was found.
    line = "label = '🙂🙂🙂🙂🙂🙂'; print(area(2))"
    (workspace / "b.py").write_text(f"from a import area\n\n{line}\n")
    editor: Editor = await connect("neovim", FULL)
    column = len(line[: line.index("area(")].encode("utf-16-le")) // 2
    answer = await editor.command(
        "lspilot.navigate",
        {
            "operation": "goToDefinition",
            "uri": (workspace / "b.py").as_uri(),
            "position": {"line": 2, "character": column},
        },
    )
    assert [(loc["path"], loc["line"], loc["character"]) for loc in answer["locations"]] == [("a.py", 1, 5)]


def selection(shown: types.ShowDocumentParams) -> tuple[str, int, int, int, int]:
    """Where a showDocument request points: the file's name and its 0-based range."""
    assert shown.selection is not None and shown.take_focus is False and shown.external is False
    start, end = shown.selection.start, shown.selection.end
    return uri_to_path(shown.uri).name, start.line, start.character, end.line, end.character


async def test_following_shows_what_the_agent_reads_finds_and_changes(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    (workspace / "b.py").write_text("from a import area\n\n# é😀\nprint(area(2))  # 😀 area\n")
    references = {"operation": "findReferences", "filePath": "b.py", "line": 4, "symbol": "area"}
    edit = {"filePath": "a.py", "oldString": "3.14 * r", "newString": "3.14159 * r"}
    fake.turns.extend(
        [
            Turn(tool_calls=[("read", {"filePath": "b.py", "offset": 3})]),
            Turn(tool_calls=[("lsp", references)]),
            Turn(tool_calls=[("grep", {"pattern": "area"})]),  # nothing to show
            Turn(tool_calls=[("read", {"filePath": "a.py"})]),
            Turn(tool_calls=[("edit", edit)]),
            Turn(text="done"),
        ]
    )
    editor: Editor = await connect("neovim", {**FULL, "follow": True})
    editor.review_answers.append({"decision": "accept"})
    result = await editor.command("lspilot.ask", {"prompt": "more digits"})
    assert result["stopReason"] == "end"
    await editor.until(lambda: len(editor.shown) == 4)
    assert [selection(shown) for shown in editor.shown] == [
        ("b.py", 2, 0, 2, 0),  # read from line 3
        ("a.py", 0, 4, 0, 8),  # the first reference: the declaration's name
        ("a.py", 0, 0, 0, 0),
        ("a.py", 1, 0, 2, 0),  # the changed line
    ]


async def test_following_shows_nothing_while_a_review_is_pending(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    (workspace / "b.py").write_text("B = 1\n")
    edit = {"filePath": "a.py", "oldString": "3.14 * r", "newString": "3.14159 * r"}
    fake.turns.extend(
        [
            Turn(tool_calls=[("read", {"filePath": "a.py"})]),
            Turn(tool_calls=[("edit", edit), ("read", {"filePath": "b.py"})]),  # b.py: during the review
            Turn(text="done"),
        ]
    )
    editor: Editor = await connect("neovim", {**FULL, "follow": True})
    review = {"count": 0, "pending": False}
    arrived: list[tuple[str, bool]] = []  # (file shown, while a review was pending)

    async def slow_review(params: Any) -> dict[str, Any]:
        review["count"] += 1
        review["pending"] = True
        await asyncio.sleep(1)  # the user reads the diff
        review["pending"] = False
        return {"decision": "accept"}

    def show(params: types.ShowDocumentParams) -> types.ShowDocumentResult:
        arrived.append((uri_to_path(params.uri).name, bool(review["pending"])))
        return editor.show(params)

    features = editor.client.protocol.fm.features
    features["lspilot/reviewEdit"], features[types.WINDOW_SHOW_DOCUMENT] = slow_review, show
    result = await editor.command("lspilot.ask", {"prompt": "more digits"})
    assert result["stopReason"] == "end" and review["count"] == 1
    await editor.until(lambda: len(arrived) == 3)
    assert arrived[0] == ("a.py", False)  # the read before the review
    assert sorted(arrived[1:]) == [("a.py", False), ("b.py", False)]  # none while it was pending


async def test_following_is_switched_by_command_and_needs_a_client_that_shows_documents(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    (workspace / "b.py").write_text("x = '😀'; y = 1\n")
    references = {"operation": "findReferences", "filePath": "b.py", "symbol": "y"}
    fake.turns.extend(
        [
            Turn(tool_calls=[("lsp", references)]),
            Turn(text="not following"),
            Turn(tool_calls=[("lsp", references)]),
            Turn(text="following"),
        ]
    )
    editor: Editor = await connect("visual-studio-code", FULL)
    first = await editor.command("lspilot.ask", {"prompt": "where is y used?"})
    assert await editor.command("lspilot.follow", {"enabled": True}) == {"enabled": True}
    await editor.command("lspilot.ask", {"sessionId": first["sessionId"], "prompt": "again"})
    await editor.until(lambda: len(editor.shown) == 1)
    # y is at code point 9; 😀 before it is 2 UTF-16 units
    assert [selection(shown) for shown in editor.shown] == [("b.py", 0, 10, 0, 11)]
    assert await editor.command("lspilot.follow", {"enabled": False}) == {"enabled": False}

    blind: Editor = await connect("neovim", FULL, shows_documents=False)
    with pytest.raises(JsonRpcInvalidParams, match="cannot show documents"):
        await blind.command("lspilot.follow", {"enabled": True})
    assert await blind.command("lspilot.follow", {"enabled": False}) == {"enabled": False}
