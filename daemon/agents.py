"""Agents: a prompt, permission rules and a tool set. Built-ins plus those defined in config."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

from tools import Rule, rules_from_config

from .config import UsageError

BASE_PROMPT = """You are lspilot, a coding agent working inside the user's editor on the workspace below.
Use the tools to look before you change anything: read files, search with grep/glob, and use the lsp
tool (definitions, references, implementations, callers) rather than guessing how code connects.
Make the smallest change that does the job, in the style of the surrounding code. After an edit,
read the diagnostics the edit tools report and fix what you broke. Every change is reviewed by the
user; if they reject it with feedback, follow the feedback. Be brief: say what you did and why."""


@dataclass(frozen=True)
class Agent:
    name: str
    description: str
    prompt: str = BASE_PROMPT
    #: The built-in agent's own restrictions (plan: no edits, no commands).
    rules: tuple[Rule, ...] = ()
    #: ``[agents.NAME.permission]`` of each config file that has one, in the files' order
    #: (``Config.permission_rules`` places the project's and the user's apart).
    configured_rules: tuple[tuple[Path, tuple[Rule, ...]], ...] = ()
    tools: frozenset[str] | None = None  # None: every tool the permissions allow
    model: str | None = None
    subagent: bool = False
    max_steps: int = 50
    #: Where it was defined, for messages: ``"FILE: agents.NAME"``; empty for a built-in agent.
    source: str = ""


READ_ONLY = (Rule("edit", "*", "deny", "agent"), Rule("bash", "*", "deny", "agent"))

BUILTIN: dict[str, Agent] = {
    agent.name: agent
    for agent in (
        Agent("build", "The default agent: reads, edits, runs commands (asking first)."),
        Agent(
            "plan",
            "Read-only: explores and proposes a plan; cannot edit files or run commands.",
            BASE_PROMPT + "\nYou are in plan mode: do not change anything; end with a concrete plan.",
            rules=READ_ONLY,
        ),
        Agent(
            "explore",
            "Subagent for fast read-only searches across the codebase (read, grep, glob, list, lsp).",
            BASE_PROMPT + "\nAnswer the question you were given with paths and line numbers; change nothing.",
            rules=READ_ONLY,
            tools=frozenset({"read", "grep", "glob", "list", "lsp", "batch"}),
            subagent=True,
        ),
        Agent(
            "general",
            "Subagent for multi-step tasks that need the full tool set except todo and task.",
            subagent=True,
            rules=(Rule("task", "*", "deny", "agent"), Rule("todo", "*", "deny", "agent")),
        ),
    )
}


class AgentConfigError(ValueError):
    pass


def agents_from_config(table: dict[str, Any], file: Path) -> dict[str, Agent]:
    """``[agents.NAME]`` tables of ``file``: description, prompt, model, tools, permission,
    max_steps, subagent."""
    source = str(file)
    known = {"description", "prompt", "model", "tools", "permission", "max_steps", "subagent"}
    agents: dict[str, Agent] = {}
    for name, raw in table.items():
        if not isinstance(raw, dict):
            raise AgentConfigError(f"{source}: agents.{name} must be a table")
        spec = cast(dict[str, Any], raw)
        unknown = set(spec) - known
        if unknown:
            raise AgentConfigError(
                f"{source}: agents.{name}: unknown keys {sorted(unknown)}; known: {sorted(known)}"
            )
        base = BUILTIN.get(name, BUILTIN["build"])
        where = f"{source}: agents.{name}"
        for key in ("description", "prompt", "model"):
            if key in spec and not isinstance(spec[key], str):
                raise AgentConfigError(f"{where}.{key} must be a string, not {spec[key]!r}")
        tools = spec.get("tools")
        if tools is not None and not (
            isinstance(tools, list) and all(isinstance(t, str) for t in cast(list[Any], tools))
        ):
            raise AgentConfigError(f'{where}.tools must be a list of tool ids, e.g. ["read", "grep"]')
        steps = spec.get("max_steps", base.max_steps)
        if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
            raise AgentConfigError(f"{where}.max_steps must be a positive integer, not {steps!r}")
        subagent = spec.get("subagent", base.subagent)
        if not isinstance(subagent, bool):
            raise AgentConfigError(f"{where}.subagent must be true or false, not {subagent!r}")
        permission = spec.get("permission", {})
        if not isinstance(permission, dict):
            raise AgentConfigError(f'{where}.permission must be a table, e.g. {{ edit = "deny" }}')
        try:
            rules = rules_from_config(cast(dict[str, Any], permission), f"{source} agents.{name}")
        except ValueError as error:
            raise AgentConfigError(str(error)) from None
        agents[name] = Agent(
            name=name,
            description=spec.get("description", base.description),
            prompt=spec.get("prompt", base.prompt),
            rules=base.rules,
            configured_rules=((file, tuple(rules)),) if rules else (),
            tools=frozenset(cast(list[str], tools)) if tools is not None else base.tools,
            model=spec.get("model", base.model),
            subagent=subagent,
            max_steps=steps,
            source=where,
        )
    return agents


def configured_agents(layers: Iterable[tuple[Path, dict[str, Any]]]) -> dict[str, Agent]:
    """The built-in agents, overridden and extended by each config layer's ``[agents]`` in turn
    (an agent a later file defines again keeps the permission rules the earlier files gave it)."""
    agents = dict(BUILTIN)
    for file, table in layers:
        for name, agent in agents_from_config(table.get("agents", {}), file).items():
            earlier = agents[name].configured_rules if name in agents else ()
            agents[name] = replace(agent, configured_rules=(*earlier, *agent.configured_rules))
    return agents


def pick_agent(agents: dict[str, Agent], name: str | None) -> Agent:
    """``name`` (default: build), or a UsageError naming the agents there are."""
    chosen = name or "build"
    if chosen not in agents:
        raise UsageError(f"no agent called {chosen!r}; agents: {', '.join(sorted(agents))}")
    return agents[chosen]
