"""Benchmark the grep and glob tools against raw ripgrep doing the same search.

Generates a deterministic tree (~50k files by default: several top folders, a mix of
extensions, a gitignored build folder, spread-out modification times, a few marker lines), then
for each case times, in the same run and interleaved:
- tool: the real ``execute`` wrapper calling the tool (rg + newest-first sort + formatting);
- rg: the same rg arguments as a subprocess, stdout read and split into lines, no sort
  (the baseline, target ratio tool / rg <= 1.3);
- rg own -j: the same, but with rg choosing its thread count (glob passes one thread fewer than
  the CPUs, to leave one for its stat calls; "-" where the tool passes no thread count);
- rg --sortr: rg sorting by modification time itself (the design this tool does not use:
  sorting makes rg single-threaded).
Prints medians in ms, the ratio of medians and of minimums (less sensitive to other load).
No asserts: the figures are for reading.

Run: .venv/bin/python bench/search.py [--files 50000] [--reps 15]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

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
    execute,
)
from tools._ripgrep import file_filter, find_rg
from tools.glob import Glob, glob_args
from tools.grep import Grep, grep_args

EXTENSIONS = [(".py", 30), (".ts", 20), (".js", 10), (".md", 8), (".json", 8), (".go", 8), (".rs", 8)]
WORDS = ["alpha", "beta", "gamma", "delta", "value", "result", "config", "handler", "request"]
WORDS += ["response", "error", "token", "parse", "cache"]
TOPS = ["src", "lib", "pkg", "services", "docs", "tests"]

#: (tool, arguments) cases; grep patterns hit ~2% of files, ~every file, or one extension.
CASES: list[tuple[str, dict[str, str]]] = [
    ("grep", {"pattern": "needle_marker"}),
    ("grep", {"pattern": r"handler\(cache"}),
    ("grep", {"pattern": "TODO", "include": "*.py"}),
    ("glob", {"pattern": "*.py"}),
    ("glob", {"pattern": "src/**/*.ts"}),
    ("glob", {"pattern": "**/mod3/*/file_1*.json"}),
]


def generate(root: Path, files: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    extensions = [ext for ext, weight in EXTENSIONS for _ in range(weight)]
    folders = [f"{top}/mod{i}/sub{j}" for top in TOPS for i in range(12) for j in range(8)]
    (root / ".gitignore").write_text("build/\n*.min.js\n")
    for n in range(files):
        folder = "build/out" if n % 20 == 0 else folders[n % len(folders)]
        path = root / folder / f"file_{n}{rng.choice(extensions)}"
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = [
            f"{a}_{k} = {b}({c}, {d})"
            for k in range(rng.randint(20, 60))
            for a, b, c, d in [rng.sample(WORDS, 4)]
        ]
        if n % 50 == 0:
            lines.insert(rng.randint(0, len(lines)), "# TODO: handle the needle_marker case")
        path.write_text("\n".join(lines) + "\n")
        mtime = 1_600_000_000 + rng.randint(0, 10**8)
        os.utime(path, (mtime, mtime))


class Allow:
    async def permission(self, request: PermissionRequest) -> Reply:
        del request
        return Reply("once")

    async def question(self, question: str, options: list[str]) -> str:
        del question
        return options[0] if options else ""


async def raw_rg(args: list[str], cwd: Path) -> int:
    """The baseline: rg as a subprocess, all of stdout read and split into lines (names)."""
    proc = await asyncio.create_subprocess_exec(
        find_rg(), *args, cwd=cwd, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    return out.count(b"\0") if "--null" in args and "--files" in args else len(out.splitlines())


def rg_args(tool: str, args: dict[str, str], root: Path) -> list[str]:
    if tool == "glob":
        return glob_args(file_filter(args["pattern"], root))
    chosen = file_filter(args.get("include"), root)
    return grep_args(args["pattern"], chosen, chosen.roots)


async def timed(run: Callable[[], Awaitable[object]]) -> float:
    start = time.perf_counter()
    await run()
    return (time.perf_counter() - start) * 1000


async def bench(root: Path, data: Path, reps: int) -> None:
    env = ToolEnv(
        root=root,
        session=MemorySession("bench"),
        permissions=PermissionEngine(list(DEFAULT_RULES), ApprovalStore.for_project(data, root), Allow()),
        data_dir=data,
    )
    registry = ToolRegistry()
    for tool in (Glob(), Grep()):
        registry.register(tool)

    header = f"{'case':44} {'found':>6} {'tool ms':>8} {'rg ms':>7} {'ratio':>6} {'min ratio':>9}"
    print(f"{header} {'rg own -j ms':>12} {'sortr ms':>9}")
    ratios: list[float] = []
    for tool, args in CASES:
        rg = rg_args(tool, args, root)
        own = [arg for arg in rg if not arg.startswith("--threads=")]
        sortr = [*rg[:1], "--sortr=modified", *rg[1:]]

        async def through_tool(tool: str = tool, args: dict[str, str] = args) -> object:
            outcome = await execute(registry, tool, args, ToolContext(env, "bench"))
            assert outcome.result is not None, outcome.error
            return outcome

        await through_tool()  # warm the page cache and the dentry cache
        times: dict[str, list[float]] = {"tool": [], "rg": [], "own": [], "sortr": []}
        for _ in range(reps):
            times["tool"].append(await timed(through_tool))
            times["rg"].append(await timed(lambda rg=rg: raw_rg(rg, root)))
            if own != rg:
                times["own"].append(await timed(lambda own=own: raw_rg(own, root)))
            times["sortr"].append(await timed(lambda sortr=sortr: raw_rg(sortr, root)))
        outcome = await execute(registry, tool, args, ToolContext(env, "bench"))
        assert outcome.result is not None
        found = outcome.result.metadata.get("count", outcome.result.metadata.get("matches"))
        tool_ms, rg_ms, sortr_ms = (statistics.median(times[key]) for key in ("tool", "rg", "sortr"))
        ratios.append(tool_ms / rg_ms)
        fastest = min(times["tool"]) / min(times["rg"])
        own_ms = f"{statistics.median(times['own']):.1f}" if times["own"] else "-"
        label = f"{tool} {' '.join(f'{k}={v}' for k, v in args.items())}"
        print(
            f"{label:44} {found!s:>6} {tool_ms:8.1f} {rg_ms:7.1f} {tool_ms / rg_ms:6.2f}"
            f" {fastest:9.2f} {own_ms:>12} {sortr_ms:9.1f}"
        )
    print(f"worst tool/rg ratio: {max(ratios):.2f} (target <= 1.3)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--reps", type=int, default=15)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lspilot-bench-search-") as temp:
        root = Path(temp) / "tree"
        root.mkdir()
        start = time.perf_counter()
        generate(root, options.files)
        print(f"generated {options.files} files in {time.perf_counter() - start:.1f} s; rg: {find_rg()}")
        print(f"cpus: {os.cpu_count()}, repetitions: {options.reps} (medians)")
        asyncio.run(bench(root.resolve(), Path(temp) / "data", options.reps))


if __name__ == "__main__":
    main()
