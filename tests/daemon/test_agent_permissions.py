"""An agent's permission rules hold through everything it starts: a read-only agent's subagents
stay read-only."""

from __future__ import annotations

from pathlib import Path

from daemon.scripted_model import ScriptedModel, Turn
from tools import Reply

from .looping import Human, make_loop, script, workspace

__all__ = ["workspace"]


async def test_a_plan_agent_cannot_edit_through_a_subagent(workspace: Path, fake: ScriptedModel) -> None:
    task = {"description": "write it", "prompt": "Create notes.txt", "subagent_type": "general"}
    write = {"filePath": "notes.txt", "content": "written by a subagent\n"}
    command = {"command": "touch made.txt", "description": "Make a file"}
    script(
        fake,
        Turn(tool_calls=[("task", task)]),
        Turn(tool_calls=[("write", write), ("bash", command)]),  # the subagent's step
        Turn(text="I could not."),  # the subagent's answer
        Turn(text="The subagent could not write."),
    )
    human = Human(Reply("once"), Reply("once"), Reply("once"))
    loop, _ = make_loop(workspace, fake, human, agent_name="plan")
    result = await loop.run_turn("plan it")
    assert result.stop_reason == "end"
    assert not (workspace / "notes.txt").exists() and not (workspace / "made.txt").exists()
    assert human.asked == []  # denied outright: nobody is asked to let a plan agent edit
    child_tools = {t["function"]["name"] for t in fake.requests[1]["tools"]}
    assert not child_tools & {"write", "edit", "multiedit", "apply_patch", "bash"}


async def test_an_agents_read_denials_hold_in_its_subagents(workspace: Path, fake: ScriptedModel) -> None:
    config = '[agents.guarded]\npermission = { read = { "secrets/*" = "deny" } }\n'
    (workspace / "lspilot.toml").write_text(config)
    (workspace / "secrets").mkdir()
    (workspace / "secrets" / "prod.txt").write_text("token = s3cr3t\n")
    (workspace / "notes.txt").write_text("token = placeholder\n")
    task = {"description": "find tokens", "prompt": "Where are tokens?", "subagent_type": "explore"}
    script(
        fake,
        Turn(tool_calls=[("task", task)]),
        Turn(tool_calls=[("grep", {"pattern": "token"}), ("read", {"filePath": "secrets/prod.txt"})]),
        Turn(text="Only in notes.txt."),
        Turn(text="notes.txt."),
    )
    loop, _ = make_loop(workspace, fake, Human(), agent_name="guarded")
    assert (await loop.run_turn("find tokens")).stop_reason == "end"
    grep, read = [m["content"] for m in fake.requests[2]["messages"] if m["role"] == "tool"]
    assert "notes.txt" in grep and "s3cr3t" not in grep
    assert "(1 file with matches was skipped: read rules deny it.)" in grep
    assert read.startswith("Error: Permission denied: read secrets/prod.txt (rule read 'secrets/*' = deny")
