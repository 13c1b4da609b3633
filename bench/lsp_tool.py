"""Benchmark the lsp tool end to end against raw JSON-RPC to the same warm server process.

The tool side is a whole call as the agent makes it: ``tools.execute`` on the registry (argument
parsing, validation, permission check, the ``Lsp`` tool, lsp_bridge, formatting with source lines
and metadata, output bounding). The raw side is bench/raw.py's ``Wire``: the same request with
the same params on the pipes of the tool's own basedpyright, parsed with ``json.loads`` and
nothing more. Each operation is measured in a phase of its own, alternating which side goes
first; ``navigate`` (the same question without the tool wrapper) shows where the time goes.

Target: ratio of medians <= 1.15 for goToDefinition and findReferences (901 references, shown
capped at 100 with full metadata).

Run: LSPILOT_DATA_DIR=... .venv/bin/python bench/lsp_tool.py [--files 300] [--rounds 100]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from raw import AT_USE, Wire, generate, require_basedpyright

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
    config: BridgeConfig, root: Path, data: Path, rounds: int
) -> tuple[Times, Times, Times, dict[str, int]]:
    raw_times: Times = {name: [] for name in NAMES}
    tool_times: Times = {name: [] for name in NAMES}
    core_times: Times = {name: [] for name in NAMES}
    engine = PermissionEngine(list(DEFAULT_RULES), ApprovalStore.for_project(data, root), Refuse())
    env = ToolEnv(root, MemorySession("bench"), engine, data, bridge_factory=lambda: Bridge(root, config))
    registry = ToolRegistry()
    for tool in builtin_tools():
        registry.register(tool)
    args = {"filePath": "pkg/mod_0.py", "line": AT_USE.line + 1, "character": AT_USE.character + 1}
    counts: dict[str, int] = {}

    async def tool_call(name: Operation) -> None:
        outcome = await execute(registry, "lsp", {"operation": name, **args}, ToolContext(env, "bench"))
        assert outcome.result is not None, outcome.error
        counts[name] = outcome.result.metadata["count"]

    async def core_call(name: Operation) -> None:
        path = root / "pkg/mod_0.py"
        await navigate(env.bridge, env.root, name, path=path, line=args["line"], character=args["character"])

    try:
        await tool_call("findReferences")  # starts the server the wire rides on
        raw = Wire(env.bridge, root)
        asks = {"goToDefinition": raw.definition, "findReferences": raw.references}
        for _ in range(3):  # the same warm-up on both sides
            for name in NAMES:
                await tool_call(name)
                await asks[name](raw.mod, AT_USE)
        for name in NAMES:
            for i in range(rounds):
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
        await env.close()
    return raw_times, tool_times, core_times, counts


def main() -> None:
    parser = argparse.ArgumentParser(description="Benchmark the lsp tool against raw JSON-RPC")
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args()
    config = configuration.load(Path.cwd()).bridge()
    require_basedpyright(config)
    with tempfile.TemporaryDirectory(prefix="lspilot-bench-") as tmp:
        root = Path(tmp) / "project"
        generate(root, args.files)
        raw, ours, core, counts = asyncio.run(session(config, root, Path(tmp) / "data", args.rounds))
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
