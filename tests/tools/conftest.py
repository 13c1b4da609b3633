"""A tool environment on a temporary workspace, with a scripted stand-in for the human."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from lsp_bridge import Bridge
from tools import (
    DEFAULT_RULES,
    ApprovalStore,
    MemorySession,
    Outcome,
    PermissionEngine,
    PermissionRequest,
    Reply,
    Rule,
    ToolContext,
    ToolEnv,
    ToolRegistry,
    builtin_tools,
    execute,
)


@dataclass
class ScriptedHuman:
    """Answers asks with queued replies (default: reject) and records every ask."""

    replies: list[Reply] = field(default_factory=list[Reply])
    answers: list[str] = field(default_factory=list[str])
    asked: list[PermissionRequest] = field(default_factory=list[PermissionRequest])
    questions: list[str] = field(default_factory=list[str])

    async def permission(self, request: PermissionRequest) -> Reply:
        self.asked.append(request)
        return self.replies.pop(0) if self.replies else Reply("reject")

    async def question(self, question: str, options: list[str]) -> str:
        self.questions.append(question)
        return self.answers.pop(0) if self.answers else (options[0] if options else "")


@dataclass
class Harness:
    root: Path
    env: ToolEnv
    human: ScriptedHuman
    registry: ToolRegistry

    async def call(self, name: str, args: dict[str, Any] | str, call_id: str = "call-1") -> Outcome:
        return await execute(self.registry, name, args, ToolContext(self.env, call_id))

    async def ok(self, name: str, args: dict[str, Any] | str) -> Outcome:
        outcome = await self.call(name, args)
        assert outcome.error is None, outcome.error
        assert outcome.result is not None
        return outcome


def make_harness(root: Path, data_dir: Path, rules: list[Rule] | None = None) -> Harness:
    human = ScriptedHuman()
    engine = PermissionEngine(
        [*DEFAULT_RULES, *(rules or [])], ApprovalStore.for_project(data_dir, root), human
    )
    env = ToolEnv(root=root, session=MemorySession("s-test"), permissions=engine, data_dir=data_dir)
    registry = ToolRegistry()
    for tool in builtin_tools():
        registry.register(tool)
    return Harness(env.root, env, human, registry)


@pytest.fixture
def harness(tmp_path: Path) -> Harness:
    root = tmp_path / "ws"
    root.mkdir()
    return make_harness(root, tmp_path / "data")


@pytest.fixture
def h(harness: Harness) -> Harness:
    """``harness`` by the short name the edit tests use."""
    return harness


MakeHarness = Callable[..., Harness]


@pytest.fixture
def lsp_harness(
    tmp_path: Path, project: Callable[[str], Path], bridge_factory: Callable[..., Bridge]
) -> MakeHarness:
    """A tool harness on a copy of a fixture project, with a real bridge (``overrides`` go to its config)."""

    def make(name: str, **overrides: object) -> Harness:
        root = project(name)
        harness = make_harness(root, tmp_path / "data")
        harness.env.bridge_factory = lambda: bridge_factory(root, **overrides)
        return harness

    return make
