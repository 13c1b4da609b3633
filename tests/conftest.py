"""Shared fixtures: copies of the fixture projects, a Bridge on them, position lookup, and the
scripted model server."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from daemon.scripted_model import ScriptedModel
from lsp_bridge import Bridge, BridgeConfig, Span
from lsp_bridge.documents import uri_to_path

FIXTURES = Path(__file__).with_name("fixtures")
REPO = Path(__file__).parent.parent


def data_dir() -> Path:
    return Path(os.environ.get("LSPILOT_DATA_DIR", REPO / ".cache" / "lspilot-data"))


def bridge_config(**overrides: object) -> BridgeConfig:
    values: dict[str, object] = {
        "data_dir": data_dir(),
        "request_timeout": 60.0,
        "ready_timeout": 120.0,
        **overrides,
    }
    return BridgeConfig(**values)  # type: ignore[arg-type]


def position(path: Path, needle: str, nth: int = 0, offset: int = 0) -> lsp.Position:
    """The position ``offset`` characters into the ``nth`` occurrence of ``needle``."""
    text = path.read_text()
    index = -1
    for _ in range(nth + 1):
        index = text.index(needle, index + 1)
    index += offset
    line = text.count("\n", 0, index)
    return lsp.Position(line=line, character=index - (text.rfind("\n", 0, index) + 1))


def where(root: Path, span: Span) -> tuple[str, int]:
    """(workspace-relative path, 1-based line) of a location."""
    return (uri_to_path(span[0]).relative_to(root).as_posix(), span[1] + 1)


def copy_fixture(name: str, into: Path) -> Path:
    root = into / name
    shutil.copytree(FIXTURES / name, root)
    if name == "c_project":
        entries = [
            {"directory": str(root), "file": str(root / c), "arguments": ["cc", "-c", c]}
            for c in sorted(p.name for p in root.glob("*.c"))
        ]
        (root / "compile_commands.json").write_text(json.dumps(entries, indent=1))
    return root


@pytest.fixture
def project(tmp_path: Path) -> Callable[[str], Path]:
    return lambda name: copy_fixture(name, tmp_path)


@pytest.fixture
async def bridge_factory() -> AsyncIterator[Callable[..., Bridge]]:
    bridges: list[Bridge] = []

    def make(root: Path, **overrides: object) -> Bridge:
        bridge = Bridge(root, bridge_config(**overrides))
        bridges.append(bridge)
        return bridge

    yield make
    for bridge in bridges:
        await bridge.shutdown()


@pytest.fixture
def fake() -> Iterator[ScriptedModel]:
    """The fake OpenAI-compatible model server; tests push the turns it answers with."""
    with ScriptedModel() as model:
        yield model
