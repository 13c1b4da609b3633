"""lsp_bridge against tsgo (TypeScript 7's native `tsgo --lsp --stdio`, pull-only diagnostics):
diagnostics of a file see a file it imports created, deleted and edited on disk."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lsp_bridge import Bridge
from lsp_bridge.readiness import Loading
from lsp_bridge.rpc import RpcStream
from lsp_bridge.spec import Readiness

from .conftest import errors

TSGO_ONLY = {"tsgo": {"enabled": True}, "typescript-language-server": {"enabled": False}}
MORE = "export function more(): number {\n  return 1;\n}\n"


@pytest.mark.parametrize("config", ["tsconfig.json", "package.json"])
async def test_tsgo_diagnostics_see_an_imported_file_created_deleted_and_edited(
    config: str, project: Callable[[str], Path], bridge_factory: Callable[..., Bridge]
) -> None:
    # tsgo watches the disk only through the didChangeWatchedFiles it registers once the opened
    # file's project is built, sometimes just after answering the first question: a file created
    # right then was never reported, and "Cannot find module" stayed (10 runs in 28 failed).
    root = project("ts_project")
    if config == "package.json":  # no tsconfig: an inferred project
        (root / "tsconfig.json").unlink()
        (root / "package.json").write_text("{}\n")
    bridge = bridge_factory(root, servers=TSGO_ONLY)
    a, b = root / "src/a.ts", root / "src/b.ts"
    a.write_text('import { more } from "./b";\n\nexport const n: number = more();\n')

    async def messages() -> list[str]:
        answer = await bridge.diagnostics_after_change(a)
        assert answer.notes == []
        return [d.message for d in errors(answer.value)]

    missing = ["Cannot find module './b' or its corresponding type declarations."]
    assert await messages() == missing
    b.write_text(MORE)  # right after the import of it failed
    assert await messages() == []
    b.unlink()
    assert await messages() == missing
    b.write_text(MORE)
    assert await messages() == []
    b.write_text(MORE.replace("number", "string").replace("1", "'one'"))
    assert await messages() == ["Type 'string' is not assignable to type 'number'."]


def test_answers_after_a_didopen_wait_for_the_watched_files_registration(tmp_path: Path) -> None:
    loading = Loading(Readiness(open_registers_watchers=True), tmp_path, RpcStream("test", lambda _m: None))
    assert loading.ready  # nothing opened: nothing to wait for
    loading.on_register("workspace/didChangeWatchedFiles")  # before any didOpen: not the project's
    loading.opened = True
    assert not loading.ready
    loading.on_register("workspace/didChangeConfiguration")
    assert not loading.ready
    loading.on_register("workspace/didChangeWatchedFiles")
    assert loading.ready
