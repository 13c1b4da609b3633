"""The system prompt: the agent's prompt, the environment, and the project's own instructions."""

from __future__ import annotations

import platform
import subprocess
import time
from pathlib import Path

from .agents import Agent

INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md", ".lspilot/instructions.md")
MAX_INSTRUCTIONS = 20_000


def git_summary(root: Path) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "status", "--short", "--branch"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    if done.returncode != 0:
        return "not a git repository"
    lines = done.stdout.splitlines()
    more = f"\n... and {len(lines) - 21} more changed files" if len(lines) > 21 else ""
    return "\n".join(lines[:21]) + more


def system_prompt(agent: Agent, root: Path) -> str:
    sections = [
        agent.prompt,
        "<environment>\n"
        f"Workspace root: {root}\n"
        f"Platform: {platform.system().lower()} {platform.machine()}\n"
        f"Date: {time.strftime('%Y-%m-%d')}\n"
        f"Git status:\n{git_summary(root)}\n"
        "</environment>",
    ]
    for name in INSTRUCTION_FILES:
        file = root / name
        if file.is_file():
            text = file.read_text(errors="replace")[:MAX_INSTRUCTIONS]
            sections.append(f'<instructions from="{name}">\n{text.strip()}\n</instructions>')
    return "\n\n".join(sections)
