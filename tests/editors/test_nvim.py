"""The Neovim plugin (editors/nvim) in a real headless Neovim, driven over msgpack-RPC by pynvim:
asking and the chat, permission prompts, cancelling, the daemon's life, :checkhealth. The review
is in test_nvim_review*.py, navigation and following in test_nvim_navigation.py.

The plugin starts the real daemon (`lspilot serve`) through ``vim.lsp.start``; the daemon runs
real litellm against the scripted model server and a real language server (basedpyright). The only
stand-ins are for the human: ``vim.ui.select`` / ``vim.ui.input`` answer as a user would.
Every wait is on a condition (``vim.wait`` inside Neovim), never a fixed sleep.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any, cast

from daemon.scripted_model import ScriptedModel, ToolCallScript, Turn
from tests.conftest import data_dir
from tests.editors.nvim_editor import (
    CHAT_HAS,
    EXTMARKS,
    MESSAGES_HAS,
    PLUGIN,
    TWO_FUNCTIONS,
    Editor,
    tool_results,
)


def test_ask_streams_the_answer_and_tool_calls_into_the_chat(editor: Editor, fake: ScriptedModel) -> None:
    fake.turns.extend([Turn(tool_calls=[("read", {"filePath": "a.py"})]), Turn(text="It computes an area.")])
    assert editor.lua("return vim.fn.getcompletion('Lspilot acc', 'cmdline')") == ["accept", "accept-all"]
    editor.lua("vim.cmd('1,2Lspilot ask what does a.py do?')")  # a range is sent as context
    editor.until(CHAT_HAS, "— done")
    chat = editor.chat()
    assert "what does a.py do?" in chat and "It computes an area." in chat
    assert "The user selected a.py:1-2" in chat and "return 3.14 * r * r" in chat
    assert "⚙ read a.py — completed" in chat
    assert chat.index("⚙ read a.py") < chat.index("It computes an area.")
    assert editor.lua("return require('lspilot').status()") == ""
    # The session can be picked again (the stubbed vim.ui.select is the user) and is redrawn.
    editor.lua("""
        vim.ui.select = function(items, opts, on_choice)
          _G.picked = {#items, opts.format_item(items[1])}
          on_choice(items[1])
        end
        local buf = vim.fn.bufnr('lspilot://chat')
        vim.bo[buf].modifiable = true
        vim.api.nvim_buf_set_lines(buf, 0, -1, false, {})
        vim.cmd('Lspilot sessions')
    """)
    editor.until(CHAT_HAS, "It computes an area.")
    assert editor.lua("return _G.picked[1]") == 1
    assert "⚙ read a.py — completed" in editor.chat() and "what does a.py do?" in editor.chat()


def test_a_tool_title_of_several_lines_is_one_chat_line(editor: Editor, fake: ScriptedModel) -> None:
    # A buffer line cannot hold a newline: the update failed and the call stayed "running".
    call = ("bash", {"command": "echo one", "description": "say\none"})
    fake.turns.extend([Turn(tool_calls=[call]), Turn(text="said it")])
    editor.lua("vim.ui.select = function(items, _, on_choice) on_choice(items[1]) end")  # allow once
    editor.ask("say one")
    assert editor.finished() == "end"
    assert "  ⚙ bash say one — completed" in editor.chat().splitlines(), editor.chat()


def test_a_retry_after_a_broken_stream_drops_the_broken_off_text(editor: Editor, fake: ScriptedModel) -> None:
    fake.turns.extend(
        [
            Turn(reasoning="Thinking about areas.", text="The area is computed by", cut_after_chunks=5),
            Turn(text="It computes an area."),
        ]
    )
    editor.ask("what does a.py do?")
    editor.until(CHAT_HAS, "— done")
    chat = editor.chat()
    assert "It computes an area." in chat and "_retrying_" in chat
    assert "Thinking about" not in chat and "The area" not in chat, chat
    assert chat.index("_retrying_") < chat.index("It computes an area.")


def test_a_permission_prompt_is_answered_through_vim_ui_select(editor: Editor, fake: ScriptedModel) -> None:
    read_env = Turn(tool_calls=[("read", {"filePath": ".env"})])
    fake.turns.extend([read_env, Turn(text="read it"), read_env, Turn(text="understood")])
    editor.lua("""
        _G.asked = {}
        _G.answers = {'allow_once', 'reject_once'}
        vim.ui.select = function(items, opts, on_choice)
          table.insert(_G.asked, {prompt = opts.prompt, names = vim.tbl_map(opts.format_item, items)})
          local want = table.remove(_G.answers, 1)
          for _, item in ipairs(items) do if item.optionId == want then return on_choice(item) end end
        end
        vim.ui.input = function(opts, on_confirm) on_confirm('secrets stay private') end
    """)
    editor.ask("read .env")
    assert editor.finished() == "end"
    assert "TOKEN=not-for-models" in tool_results(fake)[-1]
    asked = cast(list[dict[str, Any]], editor.lua("return _G.asked"))
    assert ".env" in asked[0]["prompt"] and len(asked[0]["names"]) == 4
    assert [n for n in asked[0]["names"] if "remembers" in n] == ["Always allow (remembers: .env)"]
    editor.ask("again")
    assert editor.finished() == "end"
    assert "secrets stay private" in tool_results(fake)[-1]
    assert editor.lua("return #_G.asked") == 2


def test_the_agent_s_questions_take_an_option_or_the_user_s_own_words(
    editor: Editor, fake: ScriptedModel
) -> None:
    """Through window/showMessageRequest, a question without options was "dismissed" at once
    and one with options had nowhere to type."""
    free = Turn(tool_calls=[("question", {"question": "Which database?"})])
    pick = Turn(tool_calls=[("question", {"question": "Port?", "options": ["5432", "3306"]})])
    fake.turns.extend([free, pick, pick, Turn(text="done")])
    editor.lua("""
        _G.seen, _G.picks = {}, {2, 3}
        vim.ui.input = function(opts, on_confirm)
          table.insert(_G.seen, opts.prompt)
          on_confirm(#_G.seen == 1 and 'SQLite, in a file' or '6543')
        end
        vim.ui.select = function(items, opts, on_choice)
          table.insert(_G.seen, opts.prompt .. ' | ' .. table.concat(items, ' | '))
          local index = table.remove(_G.picks, 1)
          on_choice(items[index], index)
        end
    """)
    editor.ask("set up the database")
    assert editor.finished() == "end"
    assert editor.lua("return _G.seen") == [
        "lspilot asks: Which database? ",
        "lspilot asks: Port? | 5432 | 3306 | Answer in your own words...",
        "lspilot asks: Port? | 5432 | 3306 | Answer in your own words...",
        "lspilot asks: Port? ",
    ]
    results = tool_results(fake)
    assert "SQLite, in a file" in results[-3] and "3306" in results[-2] and "6543" in results[-1]


def test_two_permission_prompts_at_once_are_asked_one_after_the_other(
    editor: Editor, fake: ScriptedModel, workspace: Path
) -> None:
    # The two reads run at once. A picker opened over another closes it without a choice
    # (telescope, snacks...), which stopped the turn; this vim.ui.select does the same.
    (workspace / "prod.env").write_text("TOKEN=two\n")
    reads: list[ToolCallScript] = [("read", {"filePath": ".env"}), ("read", {"filePath": "prod.env"})]
    fake.turns.extend([Turn(tool_calls=reads), Turn(text="read both")])
    editor.lua("""
        _G.asked = {}
        local close
        vim.ui.select = function(items, opts, on_choice)
          if close then close() end
          local done = false
          local function choose(choice) if not done then done = true; on_choice(choice) end end
          close = function() choose(nil) end
          table.insert(_G.asked, opts.prompt)
          vim.defer_fn(function() choose(items[1]) end, 500)  -- the user reads it, then allows
        end
    """)
    editor.ask("read the env files")
    assert editor.finished() == "end"
    told = "\n".join(tool_results(fake))
    assert "TOKEN=not-for-models" in told and "TOKEN=two" in told, told
    assert sorted(editor.lua("return _G.asked")) == [
        "lspilot asks: Read .env (read .env)",
        "lspilot asks: Read prod.env (read prod.env)",
    ]


def test_a_prompt_left_open_by_a_cancelled_turn_holds_up_no_later_prompt(
    editor: Editor, fake: ScriptedModel, workspace: Path
) -> None:
    """A picker that stays open (telescope's) kept the next turn's prompts waiting behind it."""
    fake.turns.extend([Turn(tool_calls=[("read", {"filePath": ".env"})])])
    editor.lua("""
        _G.asked, _G.pending = {}, {}
        vim.ui.select = function(items, opts, on_choice)
          table.insert(_G.asked, opts.prompt)
          table.insert(_G.pending, function() on_choice(items[1]) end)  -- stays open
        end
    """)
    editor.ask("read .env")
    editor.until("#_G.asked == 1")
    editor.lua("vim.cmd('Lspilot cancel')")
    assert editor.finished() == "cancelled"
    fake.turns.extend([Turn(tool_calls=[("read", {"filePath": "prod.env"})]), Turn(text="done")])
    (workspace / "prod.env").write_text("TOKEN=two\n")
    editor.ask("read prod.env")
    editor.until("#_G.asked == 2")  # shown while the stale picker is still open
    editor.lua("_G.pending[1](); _G.pending[2]()")  # the stale answer goes nowhere
    assert editor.finished() == "end"
    assert "TOKEN=two" in tool_results(fake)[-1]


def test_a_turn_streams_on_after_the_chat_buffer_is_wiped(editor: Editor, fake: ScriptedModel) -> None:
    fake.turns.extend([Turn(tool_calls=[("read", {"filePath": ".env"})]), Turn(text="read it")])
    editor.lua("""
        _G.allow = nil
        vim.ui.select = function(items, opts, on_choice) _G.allow = function() on_choice(items[1]) end end
    """)
    editor.ask("read .env")
    editor.until("_G.allow ~= nil")  # the permission prompt is up; the read is pending
    editor.lua("vim.cmd('bwipeout! lspilot://chat')")
    editor.lua("_G.allow()")
    assert editor.finished() == "end"
    chat = editor.chat()
    assert "⚙ read .env — completed" in chat and "read it" in chat, chat


def test_a_failed_turn_says_why_once_in_the_chat_and_out_loud_when_the_chat_is_closed(
    editor: Editor, fake: ScriptedModel
) -> None:
    # The chat said the error twice (its status, then the turn's end); with the chat not in a
    # window the user heard nothing at all: the status line was cleared at the turn's end.
    why = "The model call failed: BadRequestError: invalid api key"
    fake.turns.extend([Turn(error=401, error_message="invalid api key")] * 2)
    editor.ask("hello")
    assert editor.finished() == "error"
    assert editor.chat().count(why) == 1, editor.chat()
    assert "— error" in editor.chat()
    assert editor.errors() == []  # shown in the chat, not popped up as well
    editor.lua("vim.cmd('close ' .. vim.fn.bufwinnr('lspilot://chat'))")
    editor.lua("require('lspilot.config').options.chat.open_on_ask = false")
    editor.ask("hello again")
    assert editor.lua("return vim.wait(90000, function() return _G.result ~= nil end, 20)")  # not until():
    assert editor.lua("return _G.result.stopReason") == "error"  # it stops at the first error
    assert editor.errors() == [f"lspilot: the turn failed: {why}"]
    editor.lua("_G.errors = {}")


def test_checkhealth_reports_ok(editor: Editor) -> None:
    editor.lua("vim.cmd('checkhealth lspilot')")
    report = "\n".join(cast(list[str], editor.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)")))
    assert "ERROR" not in report, report
    expected_lines = (
        "OK Neovim 0.",
        "OK executable:",
        "OK daemon reachable: lspilot",
        "OK model: openai/scripted",
    )
    for expected in expected_lines:
        assert expected in report, report
    assert "OK basedpyright: available" in report and "log:" in report
    editor.lua("vim.cmd('Lspilot log')")
    assert editor.lua("return vim.api.nvim_buf_get_name(0)") == str(data_dir() / "logs" / "lspilot.log")


def test_checkhealth_without_the_executable_says_how_to_get_it(editor: Editor) -> None:
    # It said `pip install lspilot`: a package of that name on PyPI is not this repository's.
    editor.lua("require('lspilot.config').options.cmd = { 'no-such-lspilot', 'serve' }")
    editor.lua("vim.cmd('checkhealth lspilot')")
    report = "\n".join(cast(list[str], editor.lua("return vim.api.nvim_buf_get_lines(0, 0, -1, false)")))
    assert "ERROR `no-such-lspilot` not found" in report, report
    assert "pip install" not in report and ".venv/bin/lspilot" in report, report


def test_cancel_during_a_turn_stops_it_and_clears_pending_reviews(
    editor: Editor, fake: ScriptedModel
) -> None:
    edit = {"filePath": "a.py", "oldString": "3.14", "newString": "3.14159"}
    fake.turns.extend(
        [
            Turn(tool_calls=[("read", {"filePath": "a.py"})]),
            Turn(tool_calls=[("edit", edit)]),
        ]
    )
    editor.ask("more digits")
    editor.pending(1)
    assert editor.lua("return require('lspilot').status()") == "lspilot: waiting for review"
    editor.lua("vim.cmd('Lspilot cancel')")
    assert editor.finished() == "cancelled"
    assert editor.lua("return #require('lspilot').pending()") == 0
    assert editor.lua(EXTMARKS, "a.py") == []
    assert editor.buffer("a.py") == TWO_FUNCTIONS.splitlines()
    editor.until(CHAT_HAS, "— cancelled")
    assert editor.lua("return require('lspilot').status()") == ""

    # A turn stalled while streaming stops too.
    fake.turns.append(Turn(text="thinking it over", stall_after_chunks=2))
    editor.ask("take your time")
    editor.until(CHAT_HAS, "think")
    assert editor.lua("return require('lspilot').status()").startswith("lspilot: ")  # for a statusline
    editor.lua("require('lspilot').cancel()")
    assert editor.finished() == "cancelled"


def test_cancel_with_nothing_running_says_so(editor: Editor, fake: ScriptedModel) -> None:
    fake.turns.append(Turn(text="done"))
    editor.ask("hello")
    assert editor.finished() == "end"
    editor.lua("vim.cmd('Lspilot cancel')")
    editor.until(MESSAGES_HAS, "nothing is running")
    assert "lspilot: nothing is running in this chat's session" in editor.messages()


def test_a_second_ask_while_a_turn_runs_is_told_to_wait_or_cancel(
    editor: Editor, fake: ScriptedModel
) -> None:
    fake.turns.extend([Turn(text="thinking it over", stall_after_chunks=2), Turn(text="done")])
    editor.ask("take your time")
    editor.until(CHAT_HAS, "think")
    session = cast(str, editor.lua("return vim.tbl_values(require('lspilot.client').session)[1]"))
    editor.lua("require('lspilot').ask('and now?', {on_done = function(err) _G.refused = err end})")
    editor.until(MESSAGES_HAS, "still running")
    editor.until("_G.refused ~= nil")
    # The daemon refuses too (when the plugin did not know the turn runs): the same words.
    editor.lua("vim.cmd('messages clear'); require('lspilot.client').running = {}; _G.refused = nil")
    editor.lua("require('lspilot').ask('and now?', {on_done = function(err) _G.refused = err end})")
    editor.until("_G.refused ~= nil")
    editor.until(MESSAGES_HAS, "still running")
    messages = editor.messages()
    assert "a turn is still running in this chat; wait for it or :Lspilot cancel it" in messages
    assert session not in messages, messages
    editor.lua("vim.cmd('Lspilot cancel')")  # the first turn still answers to cancel
    assert editor.finished() == "cancelled"


def test_a_turn_of_another_session_runs_on_outside_the_chat_and_cancel_reaches_it(
    editor: Editor, fake: ScriptedModel
) -> None:
    fake.turns.extend(
        [
            Turn(text="an older answer"),
            Turn(tool_calls=[("read", {"filePath": ".env"})]),
            Turn(text="back in the older session"),
        ]
    )
    editor.ask("an older question")
    assert editor.finished() == "end"
    older = editor.lua("return _G.result.sessionId")
    editor.lua(
        """
        _G.older, _G.prompted = ..., false
        vim.ui.select = function(items, opts, on_choice)
          if opts.kind ~= 'lspilot_session' then _G.prompted = true return end  -- left open
          for _, s in ipairs(items) do if s.sessionId == _G.older then return on_choice(s) end end
        end
        """,
        older,
    )
    editor.lua(
        "require('lspilot').ask('read .env', {new_session = true, on_done = function(_, r) _G.other = r end})"
    )
    editor.until("_G.prompted")  # the new session's turn waits for the user
    editor.lua("_G.picked = nil; require('lspilot').sessions(function(id) _G.picked = id end)")
    editor.until("_G.picked ~= nil")  # ...who looks at the older session meanwhile
    editor.lua("vim.cmd('Lspilot cancel')")  # the chat's session runs nothing: the running turn stops
    editor.until("_G.other ~= nil")
    assert editor.lua("return _G.other.stopReason") == "cancelled"
    chat = editor.chat()
    assert "an older answer" in chat and "read .env" not in chat and "cancelled" not in chat, chat
    editor.ask("and now?")  # the session the chat shows, not the one that updated last
    assert editor.finished() == "end"
    assert editor.lua("return _G.result.sessionId") == older
    assert "back in the older session" in editor.chat()


def test_a_daemon_dying_mid_turn_ends_the_turn_and_the_next_ask_continues_the_session(
    editor: Editor, fake: ScriptedModel
) -> None:
    fake.turns.extend([Turn(text="thinking it over", stall_after_chunks=2), Turn(text="back again")])
    editor.lua("require('lspilot').ask('take your time', {on_done = function(err) _G.failed = err end})")
    editor.until(CHAT_HAS, "think")
    session = editor.lua("return vim.tbl_values(require('lspilot.client').session)[1]")
    [pid] = editor.lua("return vim.api.nvim_get_proc_children(vim.fn.getpid())")
    os.kill(pid, signal.SIGKILL)
    editor.until("_G.failed ~= nil")  # the ask is answered (with an error), not left waiting
    assert editor.lua("return _G.failed.exited") is True
    editor.until(CHAT_HAS, "— error: the daemon exited (signal 9)")
    assert editor.lua("return require('lspilot').status()") == ""
    editor.until("#vim.lsp.get_clients({name = 'lspilot'}) == 0")
    assert "the daemon exited with signal 9" in editor.messages()
    editor.ask("are you there?")  # a new daemon, the same conversation
    assert editor.finished() == "end"
    assert editor.lua("return _G.result.sessionId") == session
    prompts = [m["content"] for m in fake.requests[-1]["messages"] if m["role"] == "user"]
    assert "take your time" in prompts[0] and "are you there?" in prompts[-1], prompts


def test_old_neovim_is_told_the_plugin_needs_0_10(editor: Editor) -> None:
    message = editor.lua(f"""
        local has = vim.fn.has
        vim.fn.has = function(feature) if feature == 'nvim-0.10' then return 0 end return has(feature) end
        vim.g.loaded_lspilot = nil
        vim.api.nvim_del_user_command('Lspilot')
        local ok, err = pcall(dofile, '{PLUGIN}/plugin/lspilot.lua')
        vim.fn.has = has
        return vim.fn.exists(':Lspilot')
    """)
    assert message == 0
    assert "requires Neovim >= 0.10" in editor.messages()
