"""The system prompt: the agent's prompt, the environment, and the project's own instructions."""

from __future__ import annotations

import asyncio
import platform
import time
from pathlib import Path

from tools.context import shown_path

from .agents import Agent

INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md", ".lspilot/instructions.md")
MAX_INSTRUCTIONS = 20_000
GIT_TIMEOUT = 5.0


async def git_summary(root: Path) -> str:
    """``git status --short --branch``, cut to 21 lines; run without blocking the daemon's loop."""
    try:
        git = await asyncio.create_subprocess_exec(
            *("git", "-C", str(root), "status", "--short", "--branch"),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
    except OSError:
        return "unknown"
    try:
        out, _ = await asyncio.wait_for(git.communicate(), GIT_TIMEOUT)
    except TimeoutError:
        git.kill()
        await git.wait()
        return "unknown (git status took too long)"
    if git.returncode != 0:
        return "not a git repository"
    lines = out.decode(errors="replace").splitlines()
    more = f"\n... and {len(lines) - 21} more changed files" if len(lines) > 21 else ""
    return "\n".join(lines[:21]) + more


async def system_prompt(agent: Agent, root: Path) -> str:
    sections = [
        agent.prompt,
        "<environment>\n"
        f"Workspace root: {shown_path(str(root))}\n"  # a root that is not UTF-8 as the tools show it
        f"Platform: {platform.system().lower()} {platform.machine()}\n"
        f"Date: {time.strftime('%Y-%m-%d')}\n"
        f"Git status:\n{await git_summary(root)}\n"
        "</environment>",
    ]
    for name in INSTRUCTION_FILES:
        file = root / name
        if file.is_file():
            text = file.read_text(errors="replace")[:MAX_INSTRUCTIONS]
            sections.append(f'<instructions from="{name}">\n{text.strip()}\n</instructions>')
    return "\n\n".join(sections)
