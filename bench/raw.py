"""What the LSP benches share: a generated project, and raw JSON-RPC to the bridge's own server.

The baseline of bench/lsp_bridge.py, bench/lsp_tool.py and bench/edit.py is the same request
sent raw to the same warm server process: a dict through ``json.dumps`` into a Content-Length
frame on the server's stdin, the answer's frame read from its stdout and ``json.loads``'d, nothing
decoded or checked (``RpcStream.call``, the wire under lsp_bridge). Both sides share one server
and one pipe, so a difference is what lsp_bridge (or the tool on top) adds, not a difference
between two server processes (two servers on copies of a project differ by up to 25% on
definition from each other).

The raw side edits a document of its own (``pkg/mod_1.py``, opened here, never written to disk)
with the same text as the bridge's ``pkg/mod_0.py``, so the bridge's record of what the server
has open stays true.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lsp_bridge import Bridge, BridgeConfig
from lsp_bridge import install as installer
from lsp_bridge.servers.basedpyright import SPEC

CALL = "    return helper(a) + helper(a + 1)\n"
BROKEN = "    return helper(a) + helper(a + 1) + undefined_name\n"
CALL_LINE = 4
AT_HELPER = lsp.Position(line=0, character=4)  # core.py: def helper
AT_USE = lsp.Position(line=CALL_LINE, character=12)  # mod_0.py: return helper(a)
TIMEOUT = 30.0


def generate(root: Path, files: int) -> None:
    """``files`` modules that import ``pkg.core.helper`` and call it twice (``3 * files + 1`` references)."""
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "bench"\nversion = "0"\n')
    (root / "pkg/__init__.py").write_text("")
    (root / "pkg/core.py").write_text("def helper(x: int) -> int:\n    return x\n")
    for i in range(files):
        (root / f"pkg/mod_{i}.py").write_text(
            f"from pkg.core import helper\n\n\ndef f_{i}(a: int) -> int:\n{CALL}"
        )


def require_basedpyright(config: BridgeConfig) -> None:
    """Exit saying how to install basedpyright if it is missing (every LSP bench needs it)."""
    if installer.status(SPEC, config.data_dir).command is None:
        sys.exit(f"basedpyright is not installed; run: {installer.install_command(SPEC)}")


class Wire:
    """Raw JSON-RPC on the pipes of the bridge's basedpyright for ``root``."""

    def __init__(self, bridge: Bridge, root: Path) -> None:
        conns = [c for c in bridge.connections if c.spec.name == SPEC.name and c.root == root]
        assert conns, "ask the bridge something first: the wire rides on its running server"
        self.rpc = conns[0].rpc
        self.mod, self.edited = root / "pkg/mod_0.py", root / "pkg/mod_1.py"
        self.version = 1
        item = {"uri": self.edited.as_uri(), "languageId": "python", "version": 1}
        self._notify("textDocument/didOpen", {"textDocument": {**item, "text": self.edited.read_text()}})

    def _notify(self, method: str, params: Any) -> None:
        self.rpc.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def _result(self, method: str, params: Any) -> Any:
        return (await self.rpc.call(method, params, TIMEOUT)).get("result")

    def _at(self, path: Path, pos: lsp.Position) -> dict[str, Any]:
        return {
            "textDocument": {"uri": path.as_uri()},
            "position": {"line": pos.line, "character": pos.character},
        }

    async def definition(self, path: Path, pos: lsp.Position) -> Any:
        return await self._result("textDocument/definition", self._at(path, pos))

    async def references(self, path: Path, pos: lsp.Position) -> Any:
        params = {**self._at(path, pos), "context": {"includeDeclaration": True}}
        return await self._result("textDocument/references", params)

    async def change_and_pull(self, line: str) -> Any:
        """didChange replacing the call line of the wire's own document, then the pull answer."""
        self.version += 1
        span = {"start": {"line": CALL_LINE, "character": 0}, "end": {"line": CALL_LINE + 1, "character": 0}}
        self._notify(
            "textDocument/didChange",
            {
                "textDocument": {"uri": self.edited.as_uri(), "version": self.version},
                "contentChanges": [{"range": span, "text": line}],
            },
        )
        return await self._result(
            "textDocument/diagnostic",
            {"textDocument": {"uri": self.edited.as_uri()}, "identifier": "basedpyright"},
        )
