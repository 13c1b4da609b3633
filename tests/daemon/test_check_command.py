"""`lspilot check-command`: the asks a command raises and the decision under the real config files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tools import ApprovalStore

from .conftest import lspilot


@pytest.fixture
def workspace(empty_workspace: Path) -> Path:
    return empty_workspace.resolve()


def check(root: Path, command: str, *flags: str) -> dict[str, Any]:
    done = lspilot("check-command", command, "--root", str(root), "--json", *flags)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_json_lists_the_requests_and_the_decision(workspace: Path) -> None:
    (workspace / "lspilot.toml").write_text('[permission]\nbash = { "git log *" = "allow" }\n')
    assert check(workspace, "git log --oneline") == {
        "requests": [
            {
                "permission": "bash",
                "patterns": ["git log --oneline"],
                "always": ["git log *"],
                "alwaysRefused": [],
            }
        ],
        "decision": "allow",
    }
    outside = workspace.parent
    assert check(workspace, "git log > ../log.txt") == {
        "requests": [
            {
                "permission": "external_directory",
                "patterns": [f"{outside}/*"],
                "always": [f"{outside}/*"],
                # the folder holding the workspace: "always" there counts as "once"
                "alwaysRefused": [
                    {
                        "pattern": f"{outside}/*",
                        "reason": f"it would allow everything in the workspace ({workspace.resolve()})",
                    }
                ],
            },
            {"permission": "bash", "patterns": ["git log"], "always": ["git log *"], "alwaysRefused": []},
        ],
        "decision": "ask",
    }


def test_a_deny_anywhere_decides(workspace: Path) -> None:
    (workspace / "lspilot.toml").write_text('[permission]\nbash = { "*" = "allow", "rm *" = "deny" }\n')
    assert check(workspace, "ls")["decision"] == "allow"
    assert check(workspace, "ls && sudo rm -rf build")["decision"] == "deny"
    assert check(workspace, "echo $(r\\m -rf build)")["decision"] == "deny"


def test_the_users_rules_win_over_the_projects(workspace: Path, tmp_path: Path) -> None:
    (workspace / "lspilot.toml").write_text('[permission]\nbash = "allow"\n')
    (tmp_path / "user-config").mkdir()
    (tmp_path / "user-config" / "config.toml").write_text('[permission]\nbash = { "git push *" = "deny" }\n')
    assert check(workspace, "git status")["decision"] == "allow"
    assert check(workspace, "git push origin main")["decision"] == "deny"


def test_the_agents_rules_apply(workspace: Path) -> None:
    (workspace / "lspilot.toml").write_text('[permission]\nexternal_directory = "allow"\n')
    assert check(workspace, "ls")["decision"] == "ask"
    assert check(workspace, "ls", "--agent", "plan")["decision"] == "deny"


def test_plan_stays_read_only_whatever_the_config_allows_all_agents(workspace: Path, tmp_path: Path) -> None:
    # The agent's rules came before every config file's, so `bash = "allow"` (meant for build)
    # let plan run `rm -rf src`. Only the user's rules for the agent itself can loosen it; a
    # repository's cannot, neither for plan nor against the user's own rules.
    user = tmp_path / "user-config"
    user.mkdir()
    (user / "config.toml").write_text('[permission]\nbash = "allow"\nedit = "allow"\n')
    assert check(workspace, "rm -rf src")["decision"] == "allow"
    assert check(workspace, "rm -rf src", "--agent", "plan")["decision"] == "deny"
    (workspace / "lspilot.toml").write_text(
        '[agents.plan.permission]\nbash = { "pytest *" = "allow" }\n'
        '[agents.build.permission]\nbash = { "git push *" = "allow" }\n'
    )
    assert check(workspace, "pytest -q", "--agent", "plan")["decision"] == "deny"
    (user / "config.toml").write_text(
        '[permission]\nbash = { "git push *" = "ask" }\n'
        '[agents.plan.permission]\nbash = { "pytest *" = "allow" }\n'
    )
    assert check(workspace, "pytest -q", "--agent", "plan")["decision"] == "allow"
    assert check(workspace, "rm -rf src", "--agent", "plan")["decision"] == "deny"
    assert check(workspace, "git push origin main")["decision"] == "ask"


def test_an_agent_without_the_bash_tool_runs_no_command(workspace: Path) -> None:
    # Its asks were reported as for any agent ("ask"), though it cannot run a command at all.
    (workspace / "lspilot.toml").write_text('[agents.explorer]\ntools = ["read", "grep"]\n')
    assert check(workspace, "git status")["decision"] == "ask"
    assert check(workspace, "git status", "--agent", "explorer")["decision"] == "deny"
    assert check(workspace, "git status", "--agent", "explore")["decision"] == "deny"


def test_remembered_always_approvals_count(workspace: Path, tmp_path: Path) -> None:
    ApprovalStore.for_project(tmp_path / "data", workspace).add("bash", ["npm test *"])
    assert check(workspace, "npm test -- --watch=false")["decision"] == "allow"
    assert check(workspace, "npm install")["decision"] == "ask"


def test_text_output_names_the_deciding_rule(workspace: Path) -> None:
    (workspace / "lspilot.toml").write_text('[permission]\nbash = { "git log *" = "allow" }\n')
    done = lspilot("check-command", "git log | head -3", "--root", str(workspace), check=True)
    lines = done.stdout.splitlines()
    assert lines[0] == "bash"
    assert (
        lines[1] == f"  allow  git log    (rule bash 'git log *' = allow from {workspace / 'lspilot.toml'})"
    )
    assert lines[2] == "  ask    head -3    (rule bash '*' = ask from default)"
    assert lines[-2:] == ["  'always' remembers: git log *, head *", "decision: ask"]


def test_an_unknown_agent_is_a_usage_error(workspace: Path) -> None:
    done = lspilot("check-command", "ls", "--root", str(workspace), "--agent", "nobody")
    assert done.returncode == 2 and "no agent called 'nobody'" in done.stderr


@pytest.mark.parametrize("command", ["", " \n\t"])
def test_an_empty_command_is_refused(workspace: Path, command: str) -> None:
    # It was checked as a command: one bash ask with an empty pattern, "decision: ask", exit 0.
    for flags in ([], ["--json"]):
        done = lspilot("check-command", command, "--root", str(workspace), *flags)
        assert (done.returncode, done.stdout) == (2, "")
        assert done.stderr == (
            "lspilot check-command: the command is empty; give the shell command to check, "
            "e.g. lspilot check-command 'git push'\n"
        )


def test_the_module_imports_no_tools() -> None:
    code = "import sys, daemon.check_command; print('tools' in sys.modules, 'tree_sitter' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]
