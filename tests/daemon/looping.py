"""What the agent loop's tests share: a stubbed human, a workspace, and a loop on real litellm
talking HTTP to the scripted model server, with its events recorded."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from daemon.loop import Event, Loop, Retry
from daemon.runtime import Runtime
from daemon.scripted_model import ScriptedModel, Turn
from daemon.transcript import as_json
from tools import PermissionRequest, Reply


class Human:
    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.asked: list[PermissionRequest] = []

    async def permission(self, request: PermissionRequest) -> Reply:
        self.asked.append(request)
        return self.replies.pop(0) if self.replies else Reply("reject")

    async def question(self, question: str, options: list[str]) -> str:
        return options[0] if options else "yes"


@pytest.fixture
def workspace(empty_workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    root = empty_workspace
    (root / "a.py").write_text("def area(r):\n    return 3.14 * r * r\n")
    (root / "b.py").write_text("from a import area\nprint(area(2))\n")
    (root / "AGENTS.md").write_text("Always answer in haiku.\n")
    return root


def script(fake: ScriptedModel, *turns: Turn) -> None:
    fake.turns.extend(turns)


class Recorder(list[Event]):
    """The loop's events, with a way to wait for one."""

    def __init__(self) -> None:
        super().__init__()
        self.changed = asyncio.Event()

    def __call__(self, event: Event) -> None:
        self.append(event)
        self.changed.set()

    async def until(self, predicate: Callable[[Event], bool]) -> None:
        while not any(predicate(e) for e in self):
            self.changed.clear()
            await self.changed.wait()


def make_loop(root: Path, fake: ScriptedModel, human: Human, **kwargs: Any) -> tuple[Loop, Recorder]:
    events = Recorder()
    runtime = Runtime.open(root)
    loop = runtime.loop(human, model="openai/scripted", api_base=fake.api_base, listeners=[events], **kwargs)
    loop.retry = Retry(attempts=4, base_delay=0.01)
    return loop, events


def tool_parts(loop: Loop) -> list[dict[str, Any]]:
    data = as_json(loop.store, loop.env.session.id)
    return [p for m in data["messages"] for p in m["parts"] if p["kind"] == "tool"]
