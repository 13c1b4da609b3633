"""Benchmark the bash tool: analysis time and execution overhead over a bare subprocess.

Measured in the same run, interleaved:
- analysis: ``permission_requests`` on a ~1 KB compound command (pipelines, substitutions,
  wrappers, redirections, a heredoc, a loop), target < 2 ms median;
- tool: ``true`` through the real ``execute`` wrapper (analysis, permission checks, bash in its own
  process group, streaming, result), against
- bare: ``bash -c true`` via ``asyncio.create_subprocess_exec`` with its output read (the baseline);
  target overhead (tool - bare) < 30 ms median.
Prints medians and minimums in ms and the ratio tool / bare. No asserts: the figures are for reading.

Run: .venv/bin/python bench/bash.py [--reps 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools import (
    DEFAULT_RULES,
    ApprovalStore,
    MemorySession,
    PermissionEngine,
    Rule,
    ToolContext,
    ToolEnv,
    ToolRegistry,
    execute,
)
from tools._shell import permission_requests
from tools._shell_process import choose_shell
from tools.bash import Bash
from tools.permission import PermissionRequest, Reply

COMMAND = """set -e
cd src && FOO=1 npm run build -- --prod 2>&1 | tee ../build.log | grep -v warning > /dev/null
for f in $(git ls-files '*.py'); do python -m black --check "$f" || echo "bad: $f" >> report.txt; done
if [ -d dist ]; then tar czf dist.tgz dist && sha256sum dist.tgz > dist.sha; else mkdir -p dist; fi
sudo -u deploy env NODE_ENV=production timeout 30 node scripts/deploy.js --target staging
find . -name '*.pyc' -exec rm -f {} + ; xargs -a files.txt -n 1 wc -l | sort -n | tail -5
cat <<EOF > config.json
{"version": "$(git rev-parse --short HEAD)", "date": "$(date +%F)"}
EOF
docker compose up -d && kubectl rollout restart deployment/web && curl -fsS http://localhost:8080/health
bash -c 'cd build && make -j4 all && ./run_tests --quiet' && echo "$(whoami) done at $(date)"
(cd docs && make html) ; diff <(sort a.txt) <(sort b.txt) ; ln -sf ../shared/lib.so vendor/lib.so
git add -A && git commit -m "release: bump version" && git tag -a v1.2.3 -m "v1.2.3"
"""


class Approver:
    async def permission(self, request: PermissionRequest) -> Reply:
        return Reply("once")

    async def question(self, question: str, options: list[str]) -> str:
        return options[0] if options else ""


def analysis(root: Path, reps: int) -> list[float]:
    times: list[float] = []
    for _ in range(reps):
        start = time.perf_counter()
        permission_requests(COMMAND, root, root)
        times.append((time.perf_counter() - start) * 1000)
    return times


async def bare(shell: str) -> float:
    start = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        shell, "-c", "true", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    await process.communicate()
    return (time.perf_counter() - start) * 1000


async def tool(registry: ToolRegistry, env: ToolEnv) -> float:
    start = time.perf_counter()
    outcome = await execute(
        registry, "bash", {"command": "true", "description": "bench"}, ToolContext(env, "b")
    )
    assert outcome.error is None, outcome.error
    return (time.perf_counter() - start) * 1000


def report(name: str, times: list[float]) -> None:
    print(f"{name:34} median {statistics.median(times):8.3f} ms   min {min(times):8.3f} ms")


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder, "ws")
        root.mkdir()
        engine = PermissionEngine(
            [*DEFAULT_RULES, Rule("bash", "*", "allow")], ApprovalStore(None), Approver()
        )
        env = ToolEnv(root, MemorySession("bench"), engine, Path(folder, "data"))
        registry = ToolRegistry()
        registry.register(Bash())
        shell = choose_shell({})
        print(f"command: {len(COMMAND.encode())} bytes; shell: {shell}; reps: {args.reps}")
        analysis(root, 20)  # warm: parser created, paths cached by the OS
        parse = analysis(root, args.reps)
        report("analysis (1 KB compound command)", parse)
        bare_times: list[float] = []
        tool_times: list[float] = []
        for _ in range(5):
            await bare(shell)
            await tool(registry, env)
        for _ in range(args.reps):
            bare_times.append(await bare(shell))
            tool_times.append(await tool(registry, env))
        report("bare subprocess `bash -c true`", bare_times)
        report("bash tool `true`", tool_times)
        overhead = statistics.median(tool_times) - statistics.median(bare_times)
        ratio = statistics.median(tool_times) / statistics.median(bare_times)
        floor = min(tool_times) - min(bare_times)
        print(f"overhead: median {overhead:.3f} ms, min {floor:.3f} ms; ratio tool/bare {ratio:.2f}")
        print("targets: analysis < 2 ms median; overhead < 30 ms")


if __name__ == "__main__":
    asyncio.run(main())
