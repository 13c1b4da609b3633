"""The user types in a file while its change is under review (`lspilot serve` with a scripted
editor): the accepted hunks land on top of what they typed when the two are on separate lines,
and nothing lands, the lines named, when they meet."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from daemon.scripted_model import ScriptedModel, Turn

from .serving import FULL, Editor, connect, tool_results, workspace

__all__ = ["connect", "workspace"]  # the fixtures, shared with test_serve

# Five functions, four lines each: `return N` is on line 4N - 2.
SOURCE = "".join(f"def f{n}():\n    return {n}\n\n\n" for n in range(1, 6))
# The model's proposal: hunks h1 (line 6) and h2 (line 14).
PROPOSAL = SOURCE.replace("return 2\n", "return 20\n").replace("return 4\n", "return 40\n")


async def proposing(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path, content: str, name: str = "neovim"
) -> tuple[Editor, str]:
    """a.py holds SOURCE, open in the editor ``name``; the model will read it, propose ``content``
    and say ok. The editor and a.py's URI."""
    (workspace / "a.py").write_text(SOURCE)
    fake.turns.extend(
        [
            Turn(tool_calls=[("read", {"filePath": "a.py"})]),
            Turn(tool_calls=[("write", {"filePath": "a.py", "content": content})]),
            Turn(text="ok"),
        ]
    )
    editor: Editor = await connect(name, FULL)
    editor.open(workspace / "a.py")
    return editor, (workspace / "a.py").as_uri()


def typed(text: str, line: int, new: str) -> str:
    """``text`` with its 1-based ``line`` replaced by ``new``."""
    lines = text.split("\n")
    lines[line - 1] = new
    return "\n".join(lines)


async def test_an_accepted_hunk_lands_on_top_of_what_the_user_typed_between_the_hunks(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    editor, uri = await proposing(connect, fake, workspace, PROPOSAL)
    mine = typed(SOURCE, 10, "    return 3  # typed")  # between the two hunks, 3 lines from each
    editor.while_reviewing = lambda: editor.change(uri, mine)
    editor.review_answers.append({"decision": "partial", "acceptedHunkIds": ["h2"]})
    assert (await editor.command("lspilot.ask", {"prompt": "bigger"}))["stopReason"] == "end"
    assert editor.buffers[uri][0] == mine.replace("return 4\n", "return 40\n")
    assert (workspace / "a.py").read_text() == SOURCE  # into the buffer, unsaved
    assert tool_results(fake)[-1] == (
        "Replaced a.py (20 lines).\nThe change to a.py did not land as proposed: The user applied "
        "hunks h2 and rejected h1. The user also edited a.py since the change was proposed (line 10 of "
        "the text the change was made on); their edits were kept and the accepted change applied "
        "around them. Read it again before changing it further."
    )
    call = [u for u in editor.updates if u["kind"] == "toolCall" and u["status"] == "completed"][-1]
    assert [f["status"] for f in call["metadata"]["files"]] == ["partial"]
    # The diff is what the change did: the user's own line is not in it as if the agent wrote it.
    changed = [line for line in call["metadata"]["diff"].splitlines() if line[:1] in "+-"]
    assert changed == ["--- a/a.py", "+++ b/a.py", "-    return 4", "+    return 40"]


async def test_an_edit_next_to_an_accepted_hunk_applies_nothing_and_names_the_lines(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    editor, uri = await proposing(connect, fake, workspace, PROPOSAL)
    mine = typed(SOURCE, 15, "# typed")  # the line right after h2
    editor.while_reviewing = lambda: editor.change(uri, mine)
    editor.review_answers.append({"decision": "accept"})
    assert (await editor.command("lspilot.ask", {"prompt": "bigger"}))["stopReason"] == "end"
    assert editor.applied == [] and editor.buffers[uri][0] == mine
    assert tool_results(fake)[-1] == (
        "Nothing was changed.\na.py is unchanged: a.py changed in the editor since the change was "
        "proposed, on or next to the lines the accepted change edits: the user edited line 15, next "
        "to the change of line 14 (line numbers of the text the change was made on); nothing was "
        "applied. Read it again."
    )


USERS_ERROR = typed(SOURCE, 10, '    y: int = "s"')  # typed in f3 during the review: a type error
BREAKS_F4 = SOURCE.replace("return 2\n", "return 20\n").replace("return 4\n", "return missing\n")


async def review_with_users_error(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path, answer: dict[str, Any]
) -> tuple[str, dict[str, Any]]:
    """The model proposes BREAKS_F4 (h1: line 6, fine; h2: line 14, an undefined name) while the
    user types USERS_ERROR; the reviewer gives ``answer``. What the model read and the
    diagnostics of the tool call's metadata."""
    editor, uri = await proposing(connect, fake, workspace, BREAKS_F4)
    editor.while_reviewing = lambda: editor.change(uri, USERS_ERROR)
    editor.review_answers.append(answer)
    assert (await editor.command("lspilot.ask", {"prompt": "go"}))["stopReason"] == "end"
    assert USERS_ERROR.split("\n")[9] in editor.buffers[uri][0]  # their line stayed
    call = [u for u in editor.updates if u["kind"] == "toolCall" and u["status"] == "completed"][-1]
    diagnostics = call["metadata"]["diagnostics"][str((workspace / "a.py").resolve())]
    return tool_results(fake)[-1], diagnostics


async def test_only_what_the_accepted_change_adds_to_the_users_edits_is_a_new_problem(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    told, diagnostics = await review_with_users_error(connect, fake, workspace, {"decision": "accept"})
    # The user's own type error (line 10) is theirs, not the change's: counted, not to be fixed.
    new = 'ERROR [14:12] "missing" is not defined (basedpyright)'
    assert told.endswith(
        f"New problems in a.py after this change, please fix:\n{new}\n"
        "(a.py: 1 problem(s) that were there before are not shown.)"
    ), told
    assert diagnostics == {"new": [new], "preexisting": 1, "note": ""}


async def test_an_accepted_hunk_adding_no_problem_reports_none_though_the_users_edit_has_one(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    answer = {"decision": "partial", "acceptedHunkIds": ["h1"]}
    told, diagnostics = await review_with_users_error(connect, fake, workspace, answer)
    assert "New problems" not in told, told
    assert told.endswith("(a.py: 1 problem(s) that were there before are not shown.)"), told
    assert diagnostics == {"new": [], "preexisting": 1, "note": ""}


async def test_a_proposal_the_user_edited_in_vs_code_lands_with_what_they_typed_in_the_file(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    editor, uri = await proposing(connect, fake, workspace, PROPOSAL, "visual-studio-code")
    mine = "# typed at the top\n" + SOURCE  # on the left side of the review diff, the real buffer
    editor.while_reviewing = lambda: editor.change(uri, mine)
    final = PROPOSAL.replace("return 20\n", "return 21\n")  # edited on the proposed side
    editor.review_answers.append({"decision": "accept", "finalText": final})
    assert (await editor.command("lspilot.ask", {"prompt": "bigger"}))["stopReason"] == "end"
    assert editor.buffers[uri][0] == "# typed at the top\n" + final
    told = tool_results(fake)[-1]
    assert "The user modified the proposal before accepting it" in told, told
    assert "The user also edited a.py since the change was proposed (before line 1 of the text" in told, told


AREA = "def area(r: float) -> float:\n    return 3.14 * r * r\n"
CALLER = "from a import area\n\n\ndef disc() -> float:\n    return area(2.0)\n"
WITH_UNIT = "def area(r: float, unit: str) -> float:\n    return 3.14 * r * r\n"


async def test_an_error_typed_in_a_caller_during_the_review_is_not_the_changes(
    connect: Callable[..., Any], fake: ScriptedModel, workspace: Path
) -> None:
    # b.py calls a.py's area; the model adds a parameter to it, which breaks the call in b.py,
    # while the user types a type error of their own into b.py's buffer (open, not saved). The
    # "before" of b.py runs while the review is up, so their typing may come before or after
    # it (tests/tools/test_edit_diagnostics.py types after it every time); either way the
    # error is theirs, and b.py's lines are those of the buffer the servers checked.
    (workspace / "a.py").write_text(AREA)
    (workspace / "b.py").write_text(CALLER)
    fake.turns.extend(
        [
            Turn(tool_calls=[("read", {"filePath": "a.py"})]),
            Turn(tool_calls=[("write", {"filePath": "a.py", "content": WITH_UNIT})]),
            Turn(text="ok"),
        ]
    )
    caller = (workspace / "b.py").as_uri()
    editor: Editor = await connect("neovim", FULL)
    editor.open(workspace / "b.py")
    mine = CALLER + '\n\nlabel: int = "disc"\n'  # line 8
    editor.while_reviewing = lambda: editor.change(caller, mine)
    editor.review_answers.append({"decision": "accept"})
    assert (await editor.command("lspilot.ask", {"prompt": "units"}))["stopReason"] == "end"
    assert (workspace / "a.py").read_text() == WITH_UNIT and editor.buffers[caller][0] == mine
    new = 'ERROR [5:12] Argument missing for parameter "unit" (basedpyright)'
    assert tool_results(fake)[-1] == (
        f"Replaced a.py (2 lines).\nNew problems in b.py after this change, please fix:\n{new}\n"
        "(b.py: 1 problem(s) that were there before are not shown.)"
    )
