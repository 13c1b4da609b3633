"""Shared fixtures: copies of the fixture projects, a Bridge on them, position lookup, and the
scripted model server."""

from __future__ import annotations

import faulthandler
import json
import os
import shutil
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from daemon.scripted_model import ScriptedModel
from lsp_bridge import Bridge, BridgeConfig, Span
from lsp_bridge.documents import uri_to_path

FIXTURES = Path(__file__).with_name("fixtures")
REPO = Path(__file__).parent.parent
#: Seconds the interpreter has to exit after the run (see ``pytest_unconfigure``).
EXIT_GRACE = 60.0


def pytest_unconfigure(config: pytest.Config) -> None:
    """After the run, the interpreter waits at exit for every thread still running; one left
    stuck in a system call (a test's helper waiting on a pipe whose other end never came) made
    the whole run hang instead of end. Past ``EXIT_GRACE`` seconds, say which threads are still
    there and end the process with status 3."""
    del config

    def stuck() -> None:
        print(f"\nthe test run did not exit within {EXIT_GRACE:g}s; threads still running:", file=sys.stderr)
        faulthandler.dump_traceback(all_threads=True)
        os._exit(3)

    timer = threading.Timer(EXIT_GRACE, stuck)
    timer.daemon = True  # not waited for at exit itself
    timer.start()


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
