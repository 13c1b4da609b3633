"""Benchmark the edit tool: the matcher cascade on a big file, and what the tool adds to diagnostics.

Prints:
- the cascade (``Content`` built from the text + ``find``) on a generated 20,000-line file, for an
  exact match, each fuzzy matcher, and a miss (which searches the closest region for the error);
  target: median <= 50 ms for a fuzzy edit;
- the hunks of a review of a one-line change in that file, against difflib's unified diff of it
  (target: no slower);
- a whole ``edit`` call through the wrapper (permission allowed by a rule, read-before-write check,
  match, atomic write with fsync, the "after" pull; the "before" is what the bridge already knew)
  against the same server's own answer to didChange + textDocument/diagnostic over raw JSON-RPC
  (bench/raw.py's ``Wire``, on a document of its own with the same text), alternating which goes
  first; target: ratio <= 1.2.

Run: LSPILOT_DATA_DIR=... .venv/bin/python bench/edit.py [--rounds 100] [--files 300]
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from raw import BROKEN, CALL, Wire, generate, require_basedpyright

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from daemon import config as configuration
from lsp_bridge import Bridge, BridgeConfig
from tools import (
    ApprovalStore,
    MemorySession,
    PermissionEngine,
    Rule,
    ToolContext,
    ToolEnv,
    ToolRegistry,
    execute,
)
from tools._match import Content, MatchError, find
from tools.diff import hunks, split_lines
from tools.edit import Edit


def big_file(lines: int) -> str:
    out: list[str] = []
    n = 0
    while len(out) < lines:
        out += [
            f"def function_{n}(value: int) -> int:",
            f"    total = value * {n}",
            "    for step in range(3):",
            f"        total += step + {n % 7}",
            "    if total > 100:",
            "        return total // 2",
            f"    return total + {n}",
            "",
        ]
        n += 1
    return "\n".join(out[:lines]) + "\n"


def cascade_cases(text: str) -> dict[str, tuple[str, str]]:
    lines = text.split("\n")
    start = len(lines) // 2 - (len(lines) // 2) % 8  # a function in the middle
    block = lines[start : start + 7]
    joined = "\n".join(block)
    dedented = "\n".join(line[4:] if line.startswith("    ") else line for line in block)
    edited_middle = [*block[:3], "        total += step  # reworded", *block[4:]]
    reworded = [*block[:2], "    for step in range(4):", "        total += step", *block[4:]]
    flat = "\n".join(line.strip() for line in block)  # "pass" for it has no depth the file justifies
    return {
        "exact": (joined, "pass"),
        "indentation-flexible": ("\n".join("    " + line for line in block), "pass"),
        "line-trimmed": (flat, flat.replace("range(3)", "range(4)")),
        "whitespace-normalized": (joined.replace(" = ", "  =  "), "pass"),
        "context-aware": ("\n".join(edited_middle), "pass"),
        "block-anchored": ("\n".join(reworded).replace("return total // 2", "return total//2"), "pass"),
        "miss (closest region)": (dedented.replace("total", "sum_total"), "pass"),
    }


def bench_cascade(lines: int, repeats: int) -> None:
    text = big_file(lines)
    print(f"matcher cascade on a {lines}-line file ({len(text) // 1024} KB), {repeats} runs, median:")
    for name, (old, new) in cascade_cases(text).items():
        times: list[float] = []
        matcher = "refused"
        for _ in range(repeats):
            started = time.perf_counter()
            try:
                matcher = find(Content(text), old, new).matcher
            except MatchError:
                matcher = "not found"
            times.append(time.perf_counter() - started)
        median = statistics.median(times) * 1000
        verdict = "ok" if median <= 50 else "over target"
        print(f"  {name:24} {median:7.2f} ms  -> {matcher:22} (target <= 50 ms) {verdict}")


def bench_review_diff(lines: int, repeats: int) -> None:
    """The hunks a review of a one-line change shows (``tools.diff.hunks``), against difflib's own
    unified diff of the same texts; difflib over every line (its exact mode, which hunks need)
    took 6 s here."""
    text = big_file(lines)
    changed = text.split("\n")
    changed[len(changed) // 2] += "  # changed"
    new = "\n".join(changed)
    ours, theirs = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        hunks(text, new)
        ours.append(time.perf_counter() - started)
        started = time.perf_counter()
        list(difflib.unified_diff(split_lines(text), split_lines(new)))
        theirs.append(time.perf_counter() - started)
    a, b = statistics.median(ours) * 1000, statistics.median(theirs) * 1000
    print(f"review hunks of a one-line change, {lines} lines: {a:.1f} ms   difflib's unified diff {b:.1f} ms")
    print(f"  ratio {a / b:.2f} (target <= 1) {'ok' if a <= b else 'over target'}")


def tool_env(root: Path, bridge: Bridge, data: Path) -> tuple[ToolEnv, ToolRegistry]:
    class NoHuman:
        async def permission(self, request: Any) -> Any:
            raise AssertionError(f"unexpected ask: {request}")

        async def question(self, question: str, options: list[str]) -> str:
            raise AssertionError(question)

    rules = [Rule("*", "*", "allow")]
    engine = PermissionEngine(rules, ApprovalStore.for_project(data, root), NoHuman())
    env = ToolEnv(root=root, session=MemorySession("bench"), permissions=engine, data_dir=data)
    env.bridge_factory = lambda: bridge
    registry = ToolRegistry()
    registry.register(Edit())
    return env, registry


async def bench_tool(
    config: BridgeConfig, root: Path, data: Path, rounds: int
) -> tuple[list[float], list[float]]:
    tool_times: list[float] = []
    raw_times: list[float] = []
    async with Bridge(root, config) as bridge:
        env, registry = tool_env(root, bridge, data)
        mod = root / "pkg/mod_0.py"
        env.session.record_read(mod)
        await bridge.diagnostics_after_change(mod)  # warm: the server has the project loaded
        raw = Wire(bridge, root)
        await raw.change_and_pull(CALL)
        lines = [BROKEN, CALL]

        async def by_tool(i: int) -> None:
            args = {
                "filePath": "pkg/mod_0.py",
                "oldString": lines[(i + 1) % 2],
                "newString": lines[i % 2],
            }
            started = time.perf_counter()
            outcome = await execute(registry, "edit", args, ToolContext(env, f"call-{i}"))
            tool_times.append(time.perf_counter() - started)
            assert outcome.error is None, outcome.error
            assert ("New problems" in outcome.model_text) == (i % 2 == 0), outcome.model_text

        async def by_raw(i: int) -> None:
            started = time.perf_counter()
            await raw.change_and_pull(lines[i % 2])
            raw_times.append(time.perf_counter() - started)

        for i in range(rounds + 2):
            pair: list[Callable[[int], Any]] = [by_raw, by_tool] if i % 2 == 0 else [by_tool, by_raw]
            for step in pair:
                await step(i)
        del tool_times[:2], raw_times[:2]  # the first rounds fill the "before" cache
    return tool_times, raw_times


def report(files: int, rounds: int, tool_times: list[float], raw_times: list[float]) -> None:
    ours, theirs = statistics.median(tool_times) * 1000, statistics.median(raw_times) * 1000
    paired = statistics.median(a / b for a, b in zip(tool_times, raw_times, strict=True))
    verdict = "ok" if ours / theirs <= 1.2 else "over target"
    print(f"edit tool vs basedpyright's own pull, {files + 2} files, {rounds} rounds (medians):")
    print(
        f"  edit + diagnostics {ours:7.2f} ms   raw didChange + pull {theirs:7.2f} ms   "
        f"ratio {ours / theirs:5.2f} (target <= 1.2) {verdict}   paired {paired:5.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description="Benchmark the edit tool")
    parser.add_argument("--lines", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=100)
    args = parser.parse_args()
    bench_cascade(args.lines, args.repeats)
    bench_review_diff(args.lines, args.repeats)
    config = configuration.load(Path.cwd()).bridge()
    require_basedpyright(config)
    with tempfile.TemporaryDirectory(prefix="lspilot-bench-") as tmp:
        root = Path(tmp) / "project"
        generate(root, args.files)
        times = asyncio.run(bench_tool(config, root, Path(tmp) / "data", args.rounds))
    report(args.files, args.rounds, *times)


if __name__ == "__main__":
    main()
