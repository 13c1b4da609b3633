"""Benchmark the lsp tool end to end against raw JSON-RPC to the same kind of warm server.

The tool side is a whole call as the agent makes it: ``tools.execute`` on the registry (argument
parsing, validation, permission check, the ``Lsp`` tool, lsp_bridge, formatting with source lines
and metadata, output bounding). The raw side sends the same request with the same params to its
own basedpyright over JSON-RPC and parses the answer (``json.loads``); see bench/lsp_bridge.py,
whose raw client this reuses. Both servers run side by side on copies of a generated ~300-file
project, warmed alike, and the measured requests alternate (raw first on even rounds).

Target: ratio of medians <= 1.15 for goToDefinition and findReferences (301 references, shown
capped at 100 with full metadata).

Run: LSPILOT_DATA_DIR=... .venv/bin/python bench/lsp_tool.py [--files 300] [--rounds 40]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from daemon import config as configuration
from lsp_bridge import Bridge, BridgeConfig
from tools import (
    DEFAULT_RULES,
    ApprovalStore,
    MemorySession,
    PermissionEngine,
    PermissionRequest,
    Reply,
    ToolContext,
    ToolEnv,
    ToolRegistry,
    builtin_tools,
    execute,
)
from tools.lsp import Operation, navigate


def _bridge_bench() -> Any:
    """bench/lsp_bridge.py (its file name would shadow the lsp_bridge package on sys.path)."""
    spec = importlib.util.spec_from_file_location(
        "bench_lsp_bridge", Path(__file__).with_name("lsp_bridge.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BRIDGE_BENCH = _bridge_bench()
AT_USE: lsp.Position = BRIDGE_BENCH.AT_USE
NAMES: tuple[Operation, ...] = ("goToDefinition", "findReferences")
Times = dict[str, list[float]]


class Refuse:
    """Nothing in this bench asks; if something did, the answer would be no."""

    async def permission(self, request: PermissionRequest) -> Reply:
        del request
        return Reply("reject")

    async def question(self, question: str, options: list[str]) -> str:
        del question, options
        return ""


async def session(
    config: BridgeConfig, command: list[str], *, raw_root: Path, tool_root: Path, data: Path, rounds: int
) -> tuple[Times, Times, Times, dict[str, int]]:
    raw_times: dict[str, list[float]] = {name: [] for name in NAMES}
    tool_times: dict[str, list[float]] = {name: [] for name in NAMES}
    core_times: dict[str, list[float]] = {name: [] for name in NAMES}
    engine = PermissionEngine(list(DEFAULT_RULES), ApprovalStore.for_project(data, tool_root), Refuse())
    env = ToolEnv(
        tool_root, MemorySession("bench"), engine, data, bridge_factory=lambda: Bridge(tool_root, config)
    )
    registry = ToolRegistry()
    for tool in builtin_tools():
        registry.register(tool)
    raw = await BRIDGE_BENCH.RawSession.start(command, raw_root)
    args = {"filePath": "pkg/mod_0.py", "line": AT_USE.line + 1, "character": AT_USE.character + 1}
    counts: dict[str, int] = {}

    async def tool_call(name: Operation) -> None:
        outcome = await execute(registry, "lsp", {"operation": name, **args}, ToolContext(env, "bench"))
        assert outcome.result is not None, outcome.error
        counts[name] = outcome.result.metadata["count"]

    async def core_call(name: Operation) -> None:
        path = tool_root / "pkg/mod_0.py"
        await navigate(env.bridge, tool_root, name, path=path, line=args["line"], character=args["character"])

    asks = {"goToDefinition": raw.definition, "findReferences": raw.references}
    try:
        for _ in range(3):  # the same warm-up on both sides
            for name in NAMES:
                await tool_call(name)
                await asks[name](raw.mod, AT_USE)
        for i in range(rounds):
            for name in NAMES:
                trio = [
                    (raw_times, asks[name], (raw.mod, AT_USE)),
                    (tool_times, tool_call, (name,)),
                    (core_times, core_call, (name,)),
                ]
                for times, ask, call_args in trio if i % 2 == 0 else trio[::-1]:
                    started = time.perf_counter()
                    await ask(*call_args)
                    times[name].append(time.perf_counter() - started)
    finally:
        await raw.stop()
        await env.close()
    return raw_times, tool_times, core_times, counts


def main() -> None:
    parser = argparse.ArgumentParser(description="Benchmark the lsp tool against raw JSON-RPC")
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    config = configuration.load(Path.cwd()).bridge()
    command = BRIDGE_BENCH.basedpyright(config)
    with tempfile.TemporaryDirectory(prefix="lspilot-bench-") as tmp:
        raw_root, tool_root = Path(tmp) / "raw", Path(tmp) / "tool"
        for root in (raw_root, tool_root):
            BRIDGE_BENCH.generate(root, args.files)
        raw, ours, core, counts = asyncio.run(
            session(
                config,
                command,
                raw_root=raw_root,
                tool_root=tool_root,
                data=Path(tmp) / "data",
                rounds=args.rounds,
            )
        )
    print(f"lsp tool vs raw JSON-RPC, basedpyright, {args.files + 2} files, {args.rounds} rounds (medians)")
    print("  (paired: the median of tool/raw over rounds, each pair measured back to back;")
    print("   navigate: the same question through tools.lsp.navigate, without the tool wrapper)")
    for name in NAMES:
        a, b = statistics.median(ours[name]) * 1000, statistics.median(raw[name]) * 1000
        paired = statistics.median(x / y for x, y in zip(ours[name], raw[name], strict=True))
        verdict = "ok" if a / b <= 1.15 else "over target"
        c = statistics.median(core[name]) * 1000
        print(
            f"  {name:15} tool {a:7.2f} ms   raw {b:7.2f} ms   ratio {a / b:5.2f}"
            f"  (target <= 1.15) {verdict}   paired {paired:5.2f}   results {counts[name]}"
            f"   navigate {c:7.2f} ms ({c / b:4.2f})"
        )


if __name__ == "__main__":
    main()
