"""Benchmark `lspilot serve`: how fast it answers `initialize`, and how it stays responsive.

Start: spawn to the `initialize` answer, median of N spawns, against a bare Python process that
reads the same request and answers it with the standard library (the floor for any Python
server). Target 0.3 s.

Responsiveness: 4 sessions run scripted turns with tool calls (read, grep) against the scripted
model server (which answers at once, so the sessions never wait on a model), while
`lspilot.sessions` is asked again and again once every session has finished its first turn;
p50 / p99 of its latency, against the same request on an idle server. Target p99 < 50 ms.

Run: .venv/bin/python bench/serve.py [--spawns 7] [--requests 200]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lsprotocol import types
from pygls.lsp.client import LanguageClient

from daemon.scripted_model import ScriptedModel, Turn

LSPILOT = str(Path(sys.executable).with_name("lspilot"))
BARE = """
import json, sys
stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
length = 0
while (line := stdin.readline()) not in (b"\\r\\n", b""):
    if line.lower().startswith(b"content-length"):
        length = int(line.split(b":")[1])
request = json.loads(stdin.read(length))
body = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"capabilities": {}}}).encode()
stdout.write(b"Content-Length: %d\\r\\n\\r\\n" % len(body) + body)
stdout.flush()
stdin.read()
"""


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def time_to_initialize(command: list[str], root: Path, env: dict[str, str]) -> float:
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize"}
    request["params"] = {"processId": None, "rootUri": root.as_uri(), "capabilities": {}}
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    assert proc.stdin and proc.stdout
    proc.stdin.write(frame(request))
    proc.stdin.flush()
    while proc.stdout.readline() not in (b"\r\n", b""):
        pass
    elapsed = time.perf_counter() - start
    proc.stdin.close()
    proc.wait(30)
    return elapsed


async def latencies(client: LanguageClient, count: int) -> list[float]:
    out: list[float] = []
    params = types.ExecuteCommandParams("lspilot.sessions", arguments=[])
    for _ in range(count):
        start = time.perf_counter()
        await client.workspace_execute_command_async(params)
        out.append(time.perf_counter() - start)
        await asyncio.sleep(0.005)
    return out


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


STEPS = [
    Turn(tool_calls=[("read", {"filePath": "notes.txt"})]),
    Turn(tool_calls=[("grep", {"pattern": "radius"})]),
    Turn(text="done"),
]


def step(body: dict[str, Any]) -> Turn:
    """Each turn: read, grep, answer; chosen by the tool results since the prompt, so any number
    of sessions can run any number of turns."""
    messages = body["messages"]
    last_prompt = max(i for i, m in enumerate(messages) if m["role"] == "user")
    done = sum(1 for m in messages[last_prompt:] if m["role"] == "tool")
    return STEPS[min(done, len(STEPS) - 1)]


async def responsiveness(root: Path, env: dict[str, str], requests: int) -> None:
    with ScriptedModel() as fake:
        fake.turns.extend([step] * 1_000_000)
        client = LanguageClient("bench", "1")
        client.feature("lspilot/update")(lambda _params: None)
        # The same read again and again trips the doom-loop guard, which asks: say yes.
        client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)(
            lambda _params: types.MessageActionItem("Always allow")
        )
        await client.start_io(LSPILOT, "serve", env=env | {"LSPILOT_API_BASE": fake.api_base})
        await client.initialize_async(
            types.InitializeParams(capabilities=types.ClientCapabilities(), root_uri=root.as_uri())
        )
        await latencies(client, 3)  # the first request opens the session store
        idle = await latencies(client, requests // 4)
        stop = asyncio.Event()
        warm = [asyncio.Event() for _ in range(4)]

        async def session(warmed: asyncio.Event) -> None:
            session_id = None
            while not stop.is_set():
                args: dict[str, Any] = {"prompt": "look around", "sessionId": session_id}
                params = types.ExecuteCommandParams("lspilot.ask", arguments=[args])
                result: Any = await client.workspace_execute_command_async(params)
                session_id = result["sessionId"]
                warmed.set()

        workers = [asyncio.ensure_future(session(warmed)) for warmed in warm]
        # Steady state: each session has finished a turn (litellm and the tools are loaded).
        await asyncio.wait_for(asyncio.gather(*(warmed.wait() for warmed in warm)), 120)
        busy = await latencies(client, requests)
        stop.set()
        await asyncio.wait_for(asyncio.gather(*workers), 60)
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()
    print(f"lspilot.sessions idle:  p50 {pct(idle, 0.5):6.2f} ms  p99 {pct(idle, 0.99):6.2f} ms")
    print(f"lspilot.sessions busy:  p50 {pct(busy, 0.5):6.2f} ms  p99 {pct(busy, 0.99):6.2f} ms")
    print(f"  p99 busy/idle ratio {pct(busy, 0.99) / pct(idle, 0.99):.2f}  (target p99 < 50 ms)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spawns", type=int, default=7)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        (root / "notes.txt").write_text("radius times radius times pi\n" * 50)
        env = dict(os.environ)
        env |= {"LSPILOT_DATA_DIR": str(Path(tmp) / "data"), "LSPILOT_CONFIG_DIR": str(Path(tmp) / "cfg")}
        env |= {"LSPILOT_MODEL": "openai/scripted", "OPENAI_API_KEY": "sk-bench"}
        serve = [time_to_initialize([LSPILOT, "serve"], root, env) for _ in range(args.spawns)]
        bare = [time_to_initialize([sys.executable, "-c", BARE], root, env) for _ in range(args.spawns)]
        s, b = statistics.median(serve), statistics.median(bare)
        print(f"spawn -> initialize answer: lspilot serve {s * 1000:.0f} ms, bare python {b * 1000:.0f} ms")
        print(f"  ratio {s / b:.2f}  (target 0.3 s)")
        asyncio.run(responsiveness(root, env, args.requests))


if __name__ == "__main__":
    main()
