"""Benchmark lsp_bridge against the same language server driven over raw JSON-RPC.

Prints, for basedpyright on a generated ~300-file project:
- median warm definition / references latency, bridge vs raw (target ratio <= 1.10);
- change -> diagnostics, bridge vs the server's own pull answer (target <= 1.2);
- cold start: time to the first complete references answer, and whether its count equals
  the warm count (it must).

Like with like: both clients announce the same client capabilities (lsp_bridge's), open the same
two files, make the same warm-up requests and then the same requests with the same params; the
raw client parses every answer fully (json.loads). The two servers run side by side on copies of
the project and the measured requests alternate between them (raw first on even rounds, bridge
first on odd ones), so drift in machine load hits both alike. On the bridge side an edit is a
write to disk that its file watcher notices; on the raw side it is a didChange of that line.

Run: LSPILOT_DATA_DIR=... .venv/bin/python bench/lsp_bridge.py [--files 300] [--rounds 40]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.protocol import default_converter

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from daemon import config as configuration
from lsp_bridge import Bridge, BridgeConfig
from lsp_bridge import install as installer
from lsp_bridge.capabilities import client_capabilities
from lsp_bridge.servers.basedpyright import SPEC

CALL = "    return helper(a) + helper(a + 1)\n"
BROKEN = "    return helper(a) + helper(a + 1) + undefined_name\n"
CALL_LINE = 4
AT_HELPER = lsp.Position(line=0, character=4)  # core.py: def helper
AT_USE = lsp.Position(line=CALL_LINE, character=12)  # mod_0.py: return helper(a)
NAMES = ("definition", "references", "diagnostics")

Times = dict[str, list[float]]


def generate(root: Path, files: int) -> None:
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "bench"\nversion = "0"\n')
    (root / "pkg/__init__.py").write_text("")
    (root / "pkg/core.py").write_text("def helper(x: int) -> int:\n    return x\n")
    for i in range(files):
        (root / f"pkg/mod_{i}.py").write_text(
            f"from pkg.core import helper\n\n\ndef f_{i}(a: int) -> int:\n{CALL}"
        )


class RawClient:
    """The thinnest correct LSP client: framing, ids, and answers to server requests."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 0
        self.waiting: dict[int, asyncio.Future[Any]] = {}
        self.found = asyncio.Event()
        self.reader = asyncio.create_task(self._read())

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def request(self, method: str, params: Any) -> Any:
        self.next_id += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.waiting[self.next_id] = future
        self.send({"id": self.next_id, "method": method, "params": params})
        return await future

    async def _read(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        while True:
            header = await stream.readuntil(b"\r\n\r\n")
            length = int(header.split(b"Content-Length:")[1].split(b"\r\n")[0])
            message = json.loads(await stream.readexactly(length))
            if "id" in message and "method" not in message:
                self.waiting.pop(message["id"]).set_result(message.get("result"))
            elif "id" in message:
                self.send({"id": message["id"], "result": self._answer(message)})
            elif message.get("method") == "window/logMessage":
                pattern = SPEC.readiness.log_pattern
                if pattern is not None and pattern.search(message["params"]["message"]):
                    self.found.set()

    def _answer(self, message: dict[str, Any]) -> Any:
        if message["method"] == "workspace/configuration":
            return [SPEC.setting(item.get("section")) for item in message["params"]["items"]]
        return None


class RawSession:
    """basedpyright driven by RawClient, with the same questions the bench asks the bridge."""

    def __init__(self, proc: asyncio.subprocess.Process, root: Path) -> None:
        self.proc = proc
        self.client = RawClient(proc)
        self.core, self.mod = root / "pkg/core.py", root / "pkg/mod_0.py"
        self.version = 2

    @classmethod
    async def start(cls, command: list[str], root: Path) -> RawSession:
        proc = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            cwd=root,
        )
        self = cls(proc, root)
        client = self.client
        await client.request(
            "initialize",
            {
                "processId": os.getpid(),
                "rootUri": root.as_uri(),
                "rootPath": str(root),
                "capabilities": default_converter().unstructure(client_capabilities()),
                "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
            },
        )
        client.send({"method": "initialized", "params": {}})
        client.send({"method": "workspace/didChangeConfiguration", "params": {"settings": SPEC.settings}})
        for version, path in enumerate((self.core, self.mod), 1):
            text = path.read_text()
            item = {"uri": path.as_uri(), "languageId": "python", "version": version, "text": text}
            client.send({"method": "textDocument/didOpen", "params": {"textDocument": item}})
        await client.found.wait()
        return self

    def _at(self, path: Path, pos: lsp.Position) -> dict[str, Any]:
        return {
            "textDocument": {"uri": path.as_uri()},
            "position": {"line": pos.line, "character": pos.character},
        }

    async def definition(self, path: Path, pos: lsp.Position) -> Any:
        return await self.client.request("textDocument/definition", self._at(path, pos))

    async def references(self, path: Path, pos: lsp.Position) -> Any:
        params = {**self._at(path, pos), "context": {"includeDeclaration": True}}
        return await self.client.request("textDocument/references", params)

    async def change_and_pull(self, line: str) -> Any:
        """didChange replacing the call line, then the server's own pull answer."""
        self.version += 1
        span = {"start": {"line": CALL_LINE, "character": 0}, "end": {"line": CALL_LINE + 1, "character": 0}}
        self.client.send(
            {
                "method": "textDocument/didChange",
                "params": {
                    "textDocument": {"uri": self.mod.as_uri(), "version": self.version},
                    "contentChanges": [{"range": span, "text": line}],
                },
            }
        )
        return await self.client.request(
            "textDocument/diagnostic",
            {"textDocument": {"uri": self.mod.as_uri()}, "identifier": "basedpyright"},
        )

    async def stop(self) -> None:
        await self.client.request("shutdown", None)
        self.client.send({"method": "exit"})
        await self.proc.wait()
        self.client.reader.cancel()


async def timed(times: list[float], ask: Callable[..., Awaitable[Any]], *args: Any) -> None:
    started = time.perf_counter()
    await ask(*args)
    times.append(time.perf_counter() - started)


async def session(
    config: BridgeConfig, command: list[str], raw_root: Path, bridge_root: Path, rounds: int
) -> tuple[Times, Times, float, int, int]:
    raw_times: Times = {name: [] for name in NAMES}
    bridge_times: Times = {name: [] for name in NAMES}
    raw = await RawSession.start(command, raw_root)
    core, mod = bridge_root / "pkg/core.py", bridge_root / "pkg/mod_0.py"
    try:
        async with Bridge(bridge_root, config) as bridge:
            started = time.perf_counter()
            cold = await bridge.references(core, AT_HELPER)
            cold_time = time.perf_counter() - started
            warm = await bridge.references(core, AT_HELPER)
            await bridge.references(mod, AT_USE)
            # The same warm-up on the raw side (it waited for the server's file count).
            await raw.references(raw.core, AT_HELPER)
            await raw.references(raw.core, AT_HELPER)
            await raw.references(raw.mod, AT_USE)
            asks = {
                "definition": (raw.definition, bridge.definition),
                "references": (raw.references, bridge.references),
            }
            for i in range(rounds):
                for name, (raw_ask, bridge_ask) in asks.items():
                    pair = [(raw_times, raw_ask, raw.mod), (bridge_times, bridge_ask, mod)]
                    for times, ask, path in pair if i % 2 == 0 else pair[::-1]:
                        await timed(times[name], ask, path, AT_USE)
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
    finally:
        await raw.stop()
    return raw_times, bridge_times, cold_time, len(cold.value), len(warm.value)


def basedpyright(config: BridgeConfig) -> list[str]:
    """The installed basedpyright command (every bench that needs it uses this), or exit saying how."""
    status = installer.status(SPEC, config.data_dir)
    if status.command is None:
        sys.exit(f"basedpyright is not installed; run: {installer.install_command(SPEC)}")
    return status.command


def main() -> None:
    parser = argparse.ArgumentParser(description="Benchmark lsp_bridge against raw JSON-RPC")
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    config = configuration.load(Path.cwd()).bridge()
    command = basedpyright(config)
    with tempfile.TemporaryDirectory(prefix="lspilot-bench-") as tmp:
        raw_root, bridge_root = Path(tmp) / "raw", Path(tmp) / "bridge"
        for root in (raw_root, bridge_root):
            generate(root, args.files)
        raw, ours, cold_time, cold_count, warm_count = asyncio.run(
            session(config, command, raw_root, bridge_root, args.rounds)
        )
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
