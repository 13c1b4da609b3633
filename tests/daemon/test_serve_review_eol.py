"""A file with mixed line endings open in VS Code (`lspilot serve` with a scripted editor): VS Code
gives the document one line ending, the most common, and does not count that as a change, so
its buffer differs from the disk in line endings only. That is no edit of the user's: the agent
reads the disk, an accepted change goes to the disk with every other line's ending as it was
(VS Code reloads the document), and what the user does type still merges."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from daemon.scripted_model import ScriptedModel, Turn
from lsp_bridge.watch import InotifyWatcher

from .serving import FULL, Editor, connect, tool_results, workspace

__all__ = ["connect", "workspace"]  # the fixtures, shared with test_serve

CHUNKS = [f"def f{n}():\n    return {n}\n\n\n" for n in range(1, 6)]  # `return N` on line 4N - 2
# f3's four lines (9-12) end in LF, the others in CRLF.
MIXED = "".join(chunk if n == 3 else chunk.replace("\n", "\r\n") for n, chunk in enumerate(CHUNKS, 1))
UNSAVED_NOTE = "editor's unsaved text"


def as_vs_code_opens(text: str) -> str:
    """``text`` as VS Code holds it: one line ending, CRLF when more than half the lines have it."""
    crlf = text.count("\r\n")
    lf = text.replace("\r\n", "\n")
    return lf.replace("\n", "\r\n") if crlf > lf.count("\n") / 2 else lf


@pytest.fixture
async def reload(workspace: Path) -> AsyncIterator[Callable[[Editor, Path], None]]:
    """``reload(editor, path)``: from now on the editor reloads ``path``, as VS Code does a
    document it has not changed when its file changes on disk (a didChange with the new text,
    as VS Code holds it)."""
    watcher, loop = InotifyWatcher(workspace), asyncio.get_running_loop()
    clean: dict[Path, tuple[Editor, str]] = {}  # the editor and what it holds of a file it has not changed

    def changed() -> None:
        for path in watcher.drain():
            editor, held = clean.get(path, (None, None))
            if editor is not None and editor.buffers.get(path.as_uri(), ("",))[0] == held:
                clean[path] = (editor, as_vs_code_opens(path.read_bytes().decode()))
                editor.change(path.as_uri(), clean[path][1])

    def start(editor: Editor, path: Path) -> None:
        clean[path] = (editor, editor.buffers[path.as_uri()][0])

    loop.add_reader(watcher._fd, changed)  # pyright: ignore[reportPrivateUsage]
    yield start
    loop.remove_reader(watcher._fd)  # pyright: ignore[reportPrivateUsage]
    watcher.close()


@pytest.fixture
def source(workspace: Path) -> Path:
    """a.py, its lines ending as in MIXED."""
    path = workspace / "a.py"
    path.write_bytes(MIXED.encode())
    return path


@pytest.fixture
async def editor(connect: Callable[..., Any], fake: ScriptedModel, source: Path) -> Editor:
    """VS Code, connected; the model will read a.py and change `return 2` (h1, line 6) and
    `return 4` (h2, line 14)."""
    edits = [
        {"oldString": "return 2", "newString": "return 20"},
        {"oldString": "return 4", "newString": "return 40"},
    ]
    fake.turns.extend(
        [
            Turn(tool_calls=[("read", {"filePath": "a.py"})]),
            Turn(tool_calls=[("multiedit", {"filePath": "a.py", "edits": edits})]),
            Turn(text="ok"),
        ]
    )
    return await connect("visual-studio-code", FULL)


async def test_the_agent_reads_the_disk_and_only_the_accepted_line_changes_there(
    editor: Editor, fake: ScriptedModel, source: Path, reload: Callable[[Editor, Path], None]
) -> None:
    editor.open(source, as_vs_code_opens(MIXED))
    reload(editor, source)
    editor.review_answers.append({"decision": "partial", "acceptedHunkIds": ["h2"]})
    assert (await editor.command("lspilot.ask", {"prompt": "bigger"}))["stopReason"] == "end"
    assert editor.reviews[0]["oldText"] == MIXED  # the file as it is
    written = MIXED.replace("return 4\r\n", "return 40\r\n")
    assert source.read_bytes() == written.encode()
    assert editor.applied == [] and editor.buffers[source.as_uri()][0] == as_vs_code_opens(written)
    read, edited = tool_results(fake)
    assert UNSAVED_NOTE not in read, read
    assert edited.endswith(
        "The user applied hunks h2 and rejected h1. Read it again before changing it further."
    ), edited


async def test_a_file_opened_during_the_review_is_no_edit_of_the_users(
    editor: Editor, fake: ScriptedModel, source: Path, reload: Callable[[Editor, Path], None]
) -> None:
    def open_it() -> None:
        editor.open(source, as_vs_code_opens(MIXED))
        reload(editor, source)

    editor.while_reviewing = open_it
    editor.review_answers.append({"decision": "accept"})
    assert (await editor.command("lspilot.ask", {"prompt": "bigger"}))["stopReason"] == "end"
    written = MIXED.replace("return 2\r\n", "return 20\r\n").replace("return 4\r\n", "return 40\r\n")
    assert source.read_bytes() == written.encode()
    assert editor.buffers[source.as_uri()][0] == as_vs_code_opens(written)
    assert tool_results(fake)[-1].startswith("Applied 2 edits to a.py:"), tool_results(fake)[-1]
    assert "did not land" not in tool_results(fake)[-1], tool_results(fake)[-1]


async def test_what_the_user_types_in_such_a_file_merges_and_only_the_accepted_line_is_edited(
    editor: Editor, fake: ScriptedModel, source: Path
) -> None:
    uri = source.as_uri()
    editor.open(source, as_vs_code_opens(MIXED))
    mine = as_vs_code_opens(MIXED).replace("return 3", "return 3  # typed")  # line 10, in the LF lines
    editor.while_reviewing = lambda: editor.change(uri, mine)
    editor.review_answers.append({"decision": "partial", "acceptedHunkIds": ["h2"]})
    assert (await editor.command("lspilot.ask", {"prompt": "bigger"}))["stopReason"] == "end"
    assert editor.buffers[uri][0] == mine.replace("return 4\r\n", "return 40\r\n")
    [applied] = editor.applied
    assert [
        (e.range.start.line, e.range.end.line, e.range.end.character, e.new_text) for e in applied["edits"]
    ] == [
        (13, 13, 12, "    return 40")  # up to its ending, which stays
    ]
    assert source.read_bytes() == MIXED.encode()  # into the buffer, unsaved
    assert (
        "The user also edited a.py since the change was proposed (line 10 of the text"
        in tool_results(fake)[-1]
    )


async def test_a_command_is_not_told_that_such_a_file_is_unsaved(
    connect: Callable[..., Any], fake: ScriptedModel, source: Path
) -> None:
    fake.turns.extend(
        [Turn(tool_calls=[("bash", {"command": "cat a.py", "description": "Show a.py"})]), Turn(text="done")]
    )
    editor: Editor = await connect("visual-studio-code", FULL)
    editor.open(source, as_vs_code_opens(MIXED))
    editor.permission_answers.append({"optionId": "allow_once"})
    assert (await editor.command("lspilot.ask", {"prompt": "show a.py"}))["stopReason"] == "end"
    [told] = tool_results(fake)
    assert told.startswith("def f1():") and "Not saved in the editor" not in told, told


@pytest.mark.parametrize("typed", [False, True])
async def test_the_proposed_text_as_vs_code_sends_it_back_keeps_the_files_line_endings(
    editor: Editor, fake: ScriptedModel, source: Path, typed: bool
) -> None:
    # The review's proposed side is a VS Code document too: the text it answers with has one
    # line ending. ``typed``: the user also changed a line of it (`return 5`, line 18).
    proposed = MIXED.replace("return 2\r\n", "return 20\r\n").replace("return 4\r\n", "return 40\r\n")
    final = as_vs_code_opens(proposed)
    if typed:
        final, proposed = final.replace("return 5", "return 50"), proposed.replace("return 5", "return 50")
    editor.review_answers.append({"decision": "accept", "finalText": final})
    assert (await editor.command("lspilot.ask", {"prompt": "bigger"}))["stopReason"] == "end"
    assert source.read_bytes() == proposed.encode()
    told = tool_results(fake)[-1]
    assert ("The user modified the proposal before accepting it" in told) == typed, told


async def test_a_file_saved_with_the_editors_line_ending_during_the_review_is_said_so(
    editor: Editor, fake: ScriptedModel, source: Path
) -> None:
    saved = as_vs_code_opens(MIXED)

    def open_and_save() -> None:  # every line CRLF now, on disk too: the change is onto that text
        editor.open(source, saved)
        source.write_bytes(saved.encode())

    editor.while_reviewing = open_and_save
    editor.review_answers.append({"decision": "partial", "acceptedHunkIds": ["h2"]})
    assert (await editor.command("lspilot.ask", {"prompt": "bigger"}))["stopReason"] == "end"
    assert editor.buffers[source.as_uri()][0] == saved.replace("return 4\r\n", "return 40\r\n")
    assert tool_results(fake)[-1].endswith(
        "The user applied hunks h2 and rejected h1. The editor holds a.py with other line endings than "
        "the text the change was made on (nothing else differs); the accepted change was applied to "
        "the editor's text. Read it again before changing it further."
    ), tool_results(fake)[-1]
