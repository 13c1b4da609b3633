"""Benchmark the agent loop's own cost per step, and how fast the CLI starts.

Per step: a turn of N steps, each a tool call (todoread, which does almost nothing) answered by
the scripted model server at once, timed through ``Loop.run_turn``; the baseline is the same
number of raw ``litellm.acompletion`` streams against the same server with the same messages
and tools. The difference per step is the loop's overhead (history from SQLite, events, the tool
wrapper, writes), target <= 5 ms median.

Start: ``lspilot run --help`` and ``lspilot tool --help`` against a bare ``python -c pass``, and a
check that importing the CLI does not import litellm.

Run: .venv/bin/python bench/loop.py [--steps 20] [--reps 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from daemon.model import litellm
from daemon.scripted_model import ScriptedModel, Turn


class Yes:
    async def permission(self, request: object) -> object:
        from tools import Reply  # noqa: PLC0415

        return Reply("once")

    async def question(self, question: str, options: list[str]) -> str:
        return "yes"


def script(fake: ScriptedModel, steps: int) -> None:
    fake.turns.extend(Turn(tool_calls=[("todoread", {})]) for _ in range(steps - 1))
    fake.turns.append(Turn(text="done"))


async def loop_per_step(root: Path, fake: ScriptedModel, steps: int) -> float:
    from daemon.runtime import Runtime  # noqa: PLC0415

    runtime = Runtime.open(root)
    loop = runtime.loop(Yes(), model="openai/scripted", api_base=fake.api_base)  # type: ignore[arg-type]
    await loop.initialize()
    script(fake, steps)
    start = time.perf_counter()
    await loop.run_turn("go")
    elapsed = time.perf_counter() - start
    await loop.env.close()
    runtime.store.close()
    return elapsed / steps


async def raw_per_step(
    fake: ScriptedModel, steps: int, messages: list[dict[str, object]], tools: object
) -> float:
    lib = litellm()
    script(fake, steps)
    start = time.perf_counter()
    for _ in range(steps):
        response = await lib.acompletion(
            model="openai/scripted",
            api_base=fake.api_base,
            messages=messages,
            tools=tools,
            stream=True,
            stream_options={"include_usage": True},
            num_retries=0,
        )
        async for _chunk in response:
            pass
    return (time.perf_counter() - start) / steps


def start_time(argv: list[str], reps: int) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        subprocess.run(argv, capture_output=True, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["LSPILOT_DATA_DIR"] = f"{tmp}/data"
        os.environ["LSPILOT_CONFIG_DIR"] = f"{tmp}/config"
        os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
        root = Path(tmp, "ws")
        root.mkdir()
        loops, raws = [], []
        with ScriptedModel() as fake:
            await loop_per_step(root, fake, 3)  # warm up imports and the server
            for _ in range(args.reps):
                loops.append(await loop_per_step(root, fake, args.steps))
                request = fake.requests[-1]
                raws.append(await raw_per_step(fake, args.steps, request["messages"], request.get("tools")))
        loop_ms, raw_ms = statistics.median(loops) * 1000, statistics.median(raws) * 1000
        print(f"per step: loop {loop_ms:.2f} ms, raw litellm {raw_ms:.2f} ms")
        overhead = loop_ms - raw_ms
        print(f"loop overhead per step: {overhead:.2f} ms (target <= 5 ms), ratio {loop_ms / raw_ms:.2f}")


def startup(reps: int) -> None:
    bare = start_time([sys.executable, "-c", "pass"], reps)
    lspilot = str(Path(sys.executable).with_name("lspilot"))
    for command in (["run", "--help"], ["tool", "--help"]):
        took = start_time([lspilot, *command], reps)
        name = " ".join(command)
        print(f"lspilot {name}: {took * 1000:.0f} ms (bare python {bare * 1000:.0f} ms, x{took / bare:.1f})")
    probe = "import sys, daemon.cli, daemon.run; print('litellm' in sys.modules)"
    imported = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    print(f"importing the CLI imports litellm: {imported.stdout.strip()} (must be False)")


if __name__ == "__main__":
    asyncio.run(main())
    startup(int(sys.argv[sys.argv.index("--reps") + 1]) if "--reps" in sys.argv else 5)
