"""Wiring tools into a session: the registry, the permission engine and the tool environment."""

from __future__ import annotations

import os

from lsp_bridge import Bridge
from tools import (
    ApprovalStore,
    Asker,
    ChangeSink,
    DiskChanges,
    PermissionEngine,
    SessionState,
    ToolEnv,
    ToolRegistry,
    load_registry,
)

from . import config as configuration
from .agents import BUILTIN, Agent
from .redact import REDACTOR, scrub_outcome


def registry(cfg: configuration.Config) -> ToolRegistry:
    """The built-in and custom tools (the project's only in a workspace the user trusts); their
    results never carry a secret from the environment."""
    tools = load_registry(cfg.workspace, configuration.user_config_dir() / "tools", project=cfg.trusted)
    REDACTOR.add_environment(os.environ)
    tools.add_hooks(after=scrub_outcome)
    return tools


def environment(
    cfg: configuration.Config,
    session: SessionState,
    asker: Asker,
    *,
    agent: Agent = BUILTIN["build"],
    bridge: Bridge | None = None,
    changes: ChangeSink | None = None,
) -> ToolEnv:
    """A session's tool environment; ``bridge`` shares one set of language servers between sessions
    (the editor server's), otherwise the session starts its own on first use; ``changes`` is where
    edits go (default: an ``edit`` ask, then the disk)."""
    data = configuration.data_dir()
    engine = PermissionEngine(
        cfg.permission_rules(agent), ApprovalStore.for_project(data, cfg.workspace), asker
    )
    bridge_config = cfg.bridge()
    return ToolEnv(
        root=cfg.workspace,
        session=session,
        permissions=engine,
        data_dir=data,
        limits=cfg.output_limits(),
        agent=agent.name,
        bridge_factory=(lambda: bridge) if bridge else lambda: Bridge(cfg.workspace, bridge_config),
        owns_bridge=bridge is None,
        changes=changes or DiskChanges(),
        settings=cfg.raw,
    )
