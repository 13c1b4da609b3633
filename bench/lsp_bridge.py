"""Benchmark lsp_bridge against the same language server driven over raw JSON-RPC.

Prints, for basedpyright on a generated ~300-file project:
- median warm definition / references latency, bridge vs raw (target ratio <= 1.10);
- change -> diagnostics, bridge vs the server's own pull answer (target <= 1.2);
- cold start: time to the first complete references answer, and whether its count equals
  the warm count (it must).

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
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from daemon import config as configuration
from lsp_bridge import Bridge, BridgeConfig
from lsp_bridge import install as installer
from lsp_bridge.servers.basedpyright import SPEC

CALL = "    return helper(a) + helper(a + 1)\n"
BROKEN = "    return helper(a) + helper(a + 1) + undefined_name\n"


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

    def __init__(self, proc: asyncio.subprocess.Process, settings: dict[str, Any]) -> None:
        self.proc = proc
        self.settings = settings
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
            elif message.get("method") == "window/logMessage" and (
                "source file" in message["params"]["message"]
            ):
                self.found.set()

    def _answer(self, message: dict[str, Any]) -> Any:
        if message["method"] == "workspace/configuration":
            return [SPEC.setting(item.get("section")) for item in message["params"]["items"]]
        return None


async def raw_session(command: list[str], root: Path, rounds: int) -> dict[str, list[float]]:
    proc = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        cwd=root,
    )
    client = RawClient(proc, SPEC.settings)
    caps = {
        "textDocument": {
            "diagnostic": {"dynamicRegistration": True},
            "publishDiagnostics": {"versionSupport": True},
        },
        "workspace": {"configuration": True, "workspaceFolders": True},
        "window": {"workDoneProgress": True},
    }
    await client.request(
        "initialize",
        {
            "processId": os.getpid(),
            "rootUri": root.as_uri(),
            "capabilities": caps,
            "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
        },
    )
    client.send({"method": "initialized", "params": {}})
    client.send({"method": "workspace/didChangeConfiguration", "params": {"settings": SPEC.settings}})
    core, mod = root / "pkg/core.py", root / "pkg/mod_0.py"
    for version, path in enumerate((core, mod), 1):
        client.send(
            {
                "method": "textDocument/didOpen",
                "params": {
                    "textDocument": {
                        "uri": path.as_uri(),
                        "languageId": "python",
                        "version": version,
                        "text": path.read_text(),
                    }
                },
            }
        )
    await client.found.wait()
    times: dict[str, list[float]] = {"definition": [], "references": [], "diagnostics": []}
    definition = {"textDocument": {"uri": mod.as_uri()}, "position": {"line": 4, "character": 12}}
    references = {**definition, "context": {"includeDeclaration": True}}
    await client.request("textDocument/references", references)  # warm-up
    for _ in range(rounds):
        for name, method, params in (
            ("definition", "textDocument/definition", definition),
            ("references", "textDocument/references", references),
        ):
            started = time.perf_counter()
            await client.request(method, params)
            times[name].append(time.perf_counter() - started)
    text = mod.read_text()
    for version in range(3, 3 + rounds):
        new = text.replace(CALL, BROKEN) if version % 2 else text
        started = time.perf_counter()
        client.send(
            {
                "method": "textDocument/didChange",
                "params": {
                    "textDocument": {"uri": mod.as_uri(), "version": version},
                    "contentChanges": [{"text": new}],
                },
            }
        )
        await client.request(
            "textDocument/diagnostic",
            {"textDocument": {"uri": mod.as_uri()}, "identifier": "basedpyright"},
        )
        times["diagnostics"].append(time.perf_counter() - started)
    await client.request("shutdown", None)
    client.send({"method": "exit"})
    await proc.wait()
    client.reader.cancel()
    return times


async def bridge_session(
    config: BridgeConfig, root: Path, rounds: int
) -> tuple[dict[str, list[float]], float, int, int]:
    core, mod = root / "pkg/core.py", root / "pkg/mod_0.py"
    at_helper = lsp.Position(line=0, character=4)
    at_use = lsp.Position(line=4, character=12)
    times: dict[str, list[float]] = {"definition": [], "references": [], "diagnostics": []}
    async with Bridge(root, config) as bridge:
        started = time.perf_counter()
        cold = await bridge.references(core, at_helper)
        cold_time = time.perf_counter() - started
        warm = await bridge.references(core, at_helper)
        await bridge.references(mod, at_use)  # warm-up, as for raw
        for _ in range(rounds):
            for name, ask in (("definition", bridge.definition), ("references", bridge.references)):
                started = time.perf_counter()
                await ask(mod, at_use)
                times[name].append(time.perf_counter() - started)
        text = mod.read_text()
        for version in range(3, 3 + rounds):
            mod.write_text(text.replace(CALL, BROKEN) if version % 2 else text)
            started = time.perf_counter()
            await bridge.diagnostics_after_change(mod)
            times["diagnostics"].append(time.perf_counter() - started)
        mod.write_text(text)
    return times, cold_time, len(cold.value), len(warm.value)


def main() -> None:
    parser = argparse.ArgumentParser(description="Benchmark lsp_bridge against raw JSON-RPC")
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    config = configuration.load(Path.cwd()).bridge()
    status = installer.status(SPEC, config.data_dir)
    if status.command is None:
        sys.exit(f"basedpyright is not installed; run: {installer.install_command(SPEC)}")
    with tempfile.TemporaryDirectory(prefix="lspilot-bench-") as tmp:
        cold_root, raw_root, bridge_root = (Path(tmp) / n for n in ("cold", "raw", "bridge"))
        for root in (cold_root, raw_root, bridge_root):
            generate(root, args.files)
        raw = asyncio.run(raw_session(status.command, raw_root, args.rounds))
        ours, cold_time, cold_count, warm_count = asyncio.run(
            bridge_session(config, bridge_root, args.rounds)
        )
    print(f"basedpyright, {args.files + 2} files, {args.rounds} rounds (medians)")
    targets = {"definition": 1.10, "references": 1.10, "diagnostics": 1.2}
    for name, target in targets.items():
        a, b = statistics.median(ours[name]) * 1000, statistics.median(raw[name]) * 1000
        verdict = "ok" if a / b <= target else "over target"
        print(
            f"  {name:12} bridge {a:7.2f} ms   raw {b:7.2f} ms   ratio {a / b:5.2f}"
            f"  (target <= {target}) {verdict}"
        )
    same = "equal" if cold_count == warm_count else "DIFFERENT"
    print(
        f"  cold start: first references answer after {cold_time * 1000:.0f} ms with "
        f"{cold_count} locations; warm count {warm_count} ({same})"
    )


if __name__ == "__main__":
    main()
