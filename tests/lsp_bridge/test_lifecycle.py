"""Crashes, restarts, missing servers and process hygiene, against real processes."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from lsp_bridge import Bridge, ServerBroken, ServerNotInstalled, ServerTerminated
from lsp_bridge.process import spawn
from tests.conftest import REPO, copy_fixture, position, where

Factory = Callable[..., Bridge]


def _server_pids(bridge: Bridge) -> set[int]:
    """The reaper shims and every process in their groups (the servers and their children)."""
    pids: set[int] = set()
    for conn in bridge.connections:
        assert conn.process is not None
        shim = psutil.Process(conn.process.pid)
        pids |= {shim.pid, *(child.pid for child in shim.children(recursive=True))}
    return pids


def _alive(pids: set[int]) -> set[int]:
    alive: set[int] = set()
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.add(pid)
        except psutil.NoSuchProcess:
            continue
    return alive


async def test_kill_9_mid_request_then_next_request_succeeds(
    project: Callable[[str], Path], bridge_factory: Factory
) -> None:
    root = project("py_project")
    bridge = bridge_factory(root)
    calc = root / "pkg/calc.py"
    assert len((await bridge.references(calc, position(calc, "total_area"))).value) == 4

    servers = _server_pids(bridge) - {c.process.pid for c in bridge.connections if c.process}
    for pid in servers:  # freeze the server so the next request is surely in flight
        os.kill(pid, signal.SIGSTOP)
    pending = asyncio.create_task(bridge.references(calc, position(calc, "total_area")))
    await asyncio.sleep(0)  # let the request go out
    for pid in servers:
        os.kill(pid, signal.SIGKILL)
    with pytest.raises(ServerTerminated):
        await asyncio.wait_for(pending, 30)

    again = await bridge.references(calc, position(calc, "total_area"))
    assert sorted(where(root, loc) for loc in again.value)[0] == ("app.py", 1)
    assert len(again.value) == 4


async def test_shutdown_leaves_no_process(project: Callable[[str], Path], bridge_factory: Factory) -> None:
    py_root, c_root = project("py_project"), project("c_project")
    bridge = bridge_factory(py_root)
    await bridge.definition(py_root / "app.py", position(py_root / "app.py", "describe", nth=1))
    await bridge.definition(c_root / "main.c", position(c_root / "main.c", "helper(0)"))
    pids = _server_pids(bridge)
    assert len(pids) >= 4  # two shims, basedpyright's python wrapper + node, clangd
    await bridge.shutdown()
    assert _alive(pids) == set()


def test_killed_daemon_leaves_no_orphan(tmp_path: Path) -> None:
    """SIGKILL the process that owns the bridge: the reapers take every server down."""
    root = copy_fixture("py_project", tmp_path)
    script = textwrap.dedent(f"""
        import asyncio, sys
        sys.path.insert(0, {str(REPO)!r})
        from tests.conftest import bridge_config, position
        from lsp_bridge import Bridge
        from pathlib import Path

        async def main():
            root = Path({str(root)!r})
            bridge = Bridge(root, bridge_config())
            await bridge.definition(root / "app.py", position(root / "app.py", "describe", nth=1))
            print("ready", flush=True)
            await asyncio.sleep(3600)

        asyncio.run(main())
    """)
    daemon = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert daemon.stdout is not None
        assert daemon.stdout.readline().strip() == "ready"
        children = {c.pid for c in psutil.Process(daemon.pid).children(recursive=True)}
        assert len(children) >= 3
        tmpdirs = {psutil.Process(pid).environ().get("TMPDIR") for pid in children} - {None}
        assert tmpdirs and all(Path(str(d)).is_dir() for d in tmpdirs)
        daemon.kill()
        daemon.wait()
        gone, alive = psutil.wait_procs([psutil.Process(pid) for pid in _alive(children)], 20)
        assert [p.pid for p in alive] == [], gone
        assert not [d for d in tmpdirs if Path(str(d)).exists()]  # each reaper removed its server's temp dir
    finally:
        daemon.kill()


async def test_missing_server_names_the_install_command(
    project: Callable[[str], Path], bridge_factory: Factory, tmp_path: Path
) -> None:
    root = project("py_project")
    bridge = bridge_factory(
        root,
        data_dir=tmp_path / "empty-data",
        auto_install=False,
        servers={"basedpyright": {"command": ["no-such-basedpyright-langserver", "--stdio"]}},
    )
    with pytest.raises(ServerNotInstalled, match="lspilot servers install basedpyright"):
        await bridge.definition(root / "app.py", position(root / "app.py", "describe"))


async def test_crashing_server_is_marked_broken_with_its_stderr(
    project: Callable[[str], Path], bridge_factory: Factory
) -> None:
    root = project("py_project")
    crash = [
        sys.executable,
        "-c",
        "import sys; sys.stderr.write('fatal: bad config\\n'); sys.exit(3)",
    ]
    bridge = bridge_factory(
        root,
        start_timeout=10.0,
        servers={
            "basedpyright": {"enabled": False},
            "crashy": {"command": crash, "extensions": [".py"]},
        },
    )
    errors: list[str] = []
    for _ in range(6):
        try:
            await bridge.definition(root / "app.py", position(root / "app.py", "describe"))
        except ServerBroken as error:
            errors.append(str(error))
            break
        except Exception as error:
            errors.append(f"{type(error).__name__}: {error}")
    assert "fatal: bad config" in errors[0]
    assert errors[-1].startswith("crashy crashed")
    assert "fatal: bad config" in errors[-1]


async def test_each_server_has_a_temp_dir_of_its_own_removed_when_it_stops(tmp_path: Path) -> None:
    leaves_a_file = textwrap.dedent(
        """
        import os, pathlib, sys
        (pathlib.Path(os.environ["TMPDIR"]) / "left").write_text("x")
        print(os.environ["TMPDIR"], flush=True)
        sys.stdin.read()
        """
    )
    server = await spawn("probe", [sys.executable, "-c", leaves_a_file], tmp_path)
    assert server.proc.stdout is not None
    tmpdir = Path((await server.proc.stdout.readline()).decode().strip())
    assert tmpdir == server.tmpdir and (tmpdir / "left").read_text() == "x"
    assert tmpdir.name.startswith("lspilot-probe-")
    await server.stop()
    assert not tmpdir.exists()
