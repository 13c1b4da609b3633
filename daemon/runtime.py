"""Putting a session together from the config: agents, model, tools, store and the loop."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsp_bridge import Bridge
from tools import Asker, ChangeSink, Rule, ToolEnv, ToolRegistry
from tools.context import shown_path
from tools.permission import PERMISSIONS, wildcard_match

from . import config as configuration
from . import tooling
from .agents import Agent, AgentConfigError, configured_agents, pick_agent
from .config import ConfigError, UsageError
from .loop import Listener, Loop
from .model import ModelSettings
from .redact import REDACTOR
from .store import Store, StoredSession


@dataclass
class Runtime:
    cfg: configuration.Config
    store: Store
    registry: ToolRegistry = field(init=False)
    #: The model each session runs with, so its subagents use the same one.
    models: dict[str, ModelSettings] = field(default_factory=dict[str, ModelSettings])

    def __post_init__(self) -> None:
        self.registry = tooling.registry(self.cfg)

    @classmethod
    def open(cls, root: Path) -> Runtime:
        return cls(configuration.load(root), Store(configuration.data_dir() / "lspilot.db"))

    def reloaded(self) -> Runtime:
        """The same store and sessions' models, with the configuration (and the tools) read again;
        turns already running keep what they started with."""
        fresh = Runtime(configuration.load(self.cfg.workspace), self.store)
        fresh.models = self.models
        return fresh

    def agents(self) -> dict[str, Agent]:
        try:
            return configured_agents(self.cfg.layers)
        except AgentConfigError as error:
            raise ConfigError(str(error)) from None

    def agent(self, name: str | None) -> Agent:
        return pick_agent(self.agents(), name)

    def _continuing(self, session_id: str, agent_name: str | None) -> Agent:
        """The agent a stored session goes on with: ``agent_name``, or the one it ran with (a plan
        session continued without --agent stays read-only)."""
        stored = self.store.session_agent(session_id) or "build"
        if agent_name is None and stored not in self.agents():
            raise UsageError(
                f"session {session_id} ran with the agent {stored!r}, which the config no longer "
                f"defines: name one to go on with (--agent; agents: {', '.join(sorted(self.agents()))})"
            )
        return self.agent(agent_name or stored)

    def model(self, agent: Agent, model: str | None = None, api_base: str | None = None) -> ModelSettings:
        """The model named for this turn, else the agent's own, else LSPILOT_MODEL, else the config's."""
        raw = self.cfg.raw
        name = model or agent.model or os.environ.get("LSPILOT_MODEL") or raw.get("model")
        if not name:
            raise ConfigError(
                "no model configured: set `model` in lspilot.toml, LSPILOT_MODEL, or pass --model "
                "(any litellm model name, e.g. anthropic/claude-sonnet-4-5 or ollama/qwen3)"
            )
        base = api_base or os.environ.get("LSPILOT_API_BASE") or raw.get("api_base")
        options: dict[str, Any] = dict(raw.get("provider_options", {}))
        REDACTOR.add_options(options)  # api_key, extra_headers' tokens: never in the logs
        if base:
            REDACTOR.add_url(str(base))  # nor a password or key in the api_base
        return ModelSettings(str(name), str(base) if base else None, options)

    def loop(
        self,
        asker: Asker,
        *,
        session_id: str | None = None,
        agent_name: str | None = None,
        agent: Agent | None = None,
        model: str | None = None,
        api_base: str | None = None,
        listeners: list[Listener] | None = None,
        bridge: Bridge | None = None,
        changes: ChangeSink | None = None,
        parent: ToolEnv | None = None,
    ) -> Loop:
        """A loop for a new or stored session. A stored session goes on with the agent it ran with
        unless another is named (then it runs with that one from now on), in this workspace if
        its own was moved; both are stored by its next turn, once that holds the session. A subagent's loop
        (``parent`` set) shares its parent's language servers, edit review and model."""
        if session_id is None:
            agent = agent or self.agent(agent_name)
        else:
            root = self.store.session_root(session_id)
            if root is None:
                raise UsageError(f"no session {session_id!r}")
            if root != self.cfg.workspace and root.exists():  # its history is of another project
                shown = shown_path(str(root))
                raise UsageError(
                    f"session {session_id} belongs to {shown}; continue it there (--root {shown})"
                )
            owner = self.store.session_parent(session_id)
            if parent is not None and owner != parent.session.id:  # not the user's, nor another's
                raise UsageError(f"no subagent session {session_id!r} of this session")
            if parent is None and owner is not None:  # its subagent's agent, without the parent's limits
                raise UsageError(
                    f"session {session_id} is a subagent's, of session {owner}: continue that one"
                )
            agent = agent or self._continuing(session_id, agent_name)
        if parent is not None:
            bridge = parent.bridge if parent.bridge_factory else None
            changes = parent.changes
            settings = self.models.get(parent.session.id) or self.model(agent)
        else:
            settings = self.model(agent, model, api_base)
        session = StoredSession(self.store, session_id or "")  # a new one is made last, below
        env = tooling.environment(
            self.cfg,
            session,
            asker,
            agent=agent,
            bridge=bridge,
            changes=changes,
        )
        if parent is not None:  # what the parent's agent may not do, its subagent may not either
            env.permissions.parent = parent.permissions
        if not agent.subagent and "task" not in self.registry.tools:
            from .task import Task  # noqa: PLC0415 - task imports the loop, as does this module

            self.registry.register(Task(self))
        tools = set(self.registry.tools) - {"invalid"}  # what answers a call of no known tool
        unknown = sorted((agent.tools or frozenset()) - tools)
        if agent.source and unknown:  # a typo would leave the agent without it, and nothing said so
            raise ConfigError(
                f"{agent.source}.tools: no tool called {', '.join(unknown)}; "
                f"tools: {', '.join(sorted(tools))}"
            )
        _check_permissions(env.permissions.rules, self.registry, self.cfg)
        if not session.id:  # only now: a turn refused above left an empty session behind
            session.id = self.store.create_session(
                self.cfg.workspace, agent.name, parent=parent.session.id if parent is not None else None
            )
        self.models[session.id] = settings
        return Loop(
            store=self.store,
            registry=self.registry,
            env=env,
            agent=agent,
            model=settings,
            listeners=listeners or [],
        )


def _check_permissions(rules: list[Rule], registry: ToolRegistry, cfg: configuration.Config) -> None:
    """A configured rule must name a permission there is (``bsh = "deny"`` would protect nothing):
    the engine's own, or a tool's (custom tools may bring their own). Not the rules of an untrusted
    workspace: its own tools, whose permissions they may name, are not loaded."""
    known = sorted({*PERMISSIONS, *(t.permission for t in registry.tools.values() if t.permission)})
    unchecked = {"default", "agent"}
    if not cfg.trusted:
        unchecked |= {str(file) for file in configuration.project_files(cfg.workspace)}
    for rule in rules:
        named = any(wildcard_match(name, rule.permission) for name in known)
        if named or rule.source in unchecked:
            continue
        file, _, agent = rule.source.partition(" agents.")
        where = f"{file}: agents.{agent}.permission" if agent else f"{file}: [permission]"
        raise ConfigError(f"{where} {rule.permission}: no such permission; permissions: {', '.join(known)}")
