"""Benchmark lsp_bridge against raw JSON-RPC to the same language server process.

Prints, for basedpyright on a generated ~300-file project:
- median warm definition / references latency, bridge vs raw (target ratio <= 1.10);
- change -> diagnostics, bridge vs the server's own pull answer (target <= 1.2);
- cold start: time to the first complete references answer, and whether its count equals
  the warm count (it must).

The raw side is bench/raw.py's ``Wire``: the same requests with the same params on the pipes of
the bridge's own server, parsed with ``json.loads`` and nothing more. Each operation is measured
in a phase of its own, alternating which side goes first. On the bridge side an edit is a write
to disk that its file watcher notices; on the raw side it is a didChange of that line in a
document of the wire's own.

Run: LSPILOT_DATA_DIR=... .venv/bin/python bench/lsp_bridge.py [--files 300] [--rounds 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from raw import AT_HELPER, AT_USE, BROKEN, CALL, Wire, generate, require_basedpyright

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from daemon import config as configuration
from lsp_bridge import Bridge, BridgeConfig

NAMES = ("definition", "references", "diagnostics")

Times = dict[str, list[float]]


async def timed(times: list[float], ask: Callable[..., Awaitable[Any]], *args: Any) -> None:
    started = time.perf_counter()
    await ask(*args)
    times.append(time.perf_counter() - started)


async def session(config: BridgeConfig, root: Path, rounds: int) -> tuple[Times, Times, float, int, int]:
    raw_times: Times = {name: [] for name in NAMES}
    bridge_times: Times = {name: [] for name in NAMES}
    core, mod = root / "pkg/core.py", root / "pkg/mod_0.py"
    async with Bridge(root, config) as bridge:
        started = time.perf_counter()
        cold = await bridge.references(core, AT_HELPER)
        cold_time = time.perf_counter() - started
        warm = await bridge.references(core, AT_HELPER)
        await bridge.references(mod, AT_USE)
        raw = Wire(bridge, root)
        await raw.references(mod, AT_USE)
        asks = {
            "definition": (raw.definition, bridge.definition),
            "references": (raw.references, bridge.references),
        }
        for name, (raw_ask, bridge_ask) in asks.items():
            for i in range(rounds):
                pair = [(raw_times, raw_ask), (bridge_times, bridge_ask)]
                for times, ask in pair if i % 2 == 0 else pair[::-1]:
                    await timed(times[name], ask, mod, AT_USE)
        text = mod.read_text()

        async def raw_change(line: str) -> None:
            await timed(raw_times["diagnostics"], raw.change_and_pull, line)

        async def bridge_change(line: str) -> None:
            mod.write_text(text.replace(CALL, line))  # an outside edit, seen by the watcher
            await timed(bridge_times["diagnostics"], bridge.diagnostics_after_change, mod)

        changes = [raw_change, bridge_change]
        for i in range(rounds):
            for change in changes if i % 2 == 0 else changes[::-1]:
                await change(BROKEN if i % 2 == 0 else CALL)
        mod.write_text(text)
    return raw_times, bridge_times, cold_time, len(cold.value), len(warm.value)


def main() -> None:
    parser = argparse.ArgumentParser(description="Benchmark lsp_bridge against raw JSON-RPC")
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    config = configuration.load(Path.cwd()).bridge()
    require_basedpyright(config)
    with tempfile.TemporaryDirectory(prefix="lspilot-bench-") as tmp:
        generate(Path(tmp), args.files)
        raw, ours, cold_time, cold_count, warm_count = asyncio.run(session(config, Path(tmp), args.rounds))
    print(f"basedpyright, {args.files + 2} files, {args.rounds} rounds (medians)")
    print("  (paired: the median of bridge/raw over rounds, each pair measured back to back)")
    targets = {"definition": 1.10, "references": 1.10, "diagnostics": 1.2}
    for name, target in targets.items():
        a, b = statistics.median(ours[name]) * 1000, statistics.median(raw[name]) * 1000
        paired = statistics.median(x / y for x, y in zip(ours[name], raw[name], strict=True))
        verdict = "ok" if a / b <= target else "over target"
        print(
            f"  {name:12} bridge {a:7.2f} ms   raw {b:7.2f} ms   ratio {a / b:5.2f}"
            f"  (target <= {target}) {verdict}   paired {paired:5.2f}"
        )
    same = "equal" if cold_count == warm_count else "DIFFERENT"
    print(
        f"  cold start: first references answer after {cold_time * 1000:.0f} ms with "
        f"{cold_count} locations; warm count {warm_count} ({same})"
    )


if __name__ == "__main__":
    main()
