"""The lsp tool when its server fails: a crash during the request and a request that is never
answered (the scripted server of tests/lsp_bridge acts them out; no real server does on demand),
in words that say what to do next."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from lsp_bridge import Bridge
from tests.lsp_bridge.test_protocol import scripted_servers
from tests.tools.conftest import Harness, make_harness
from tests.tools.test_lsp_tool import error, lsp


def scripted_harness(
    tmp_path: Path, bridge_factory: Callable[..., Bridge], text: str, *flags: str, **overrides: object
) -> Harness:
    """A harness on a workspace holding ``a.py`` (``text``), served by the scripted server only."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text(f"{text}\n")
    h = make_harness(root, tmp_path / "data")
    servers = scripted_servers(*flags)
    h.env.bridge_factory = lambda: bridge_factory(root, servers=servers, **overrides)
    return h


@pytest.mark.parametrize(
    ("fault", "said", "way_out"),
    [
        (
            "--crash",
            "scripted exited with code 3 during textDocument/definition",
            "It is started again on the next call: ask again. If it keeps crashing, use grep and read.",
        ),
        (
            "--hang",
            "scripted did not answer textDocument/definition within 2s",
            "The request was cancelled. Ask again (the server may have been busy), or use grep and read.",
        ),
        (
            "--refuse",
            "scripted failed to initialize: initialize failed (-32603): cannot start here",
            "It is tried again on the next call, after a pause. If it keeps failing, use grep and read.",
        ),
    ],
)
async def test_a_failed_request_says_what_to_do_next(
    tmp_path: Path, bridge_factory: Callable[..., Bridge], fault: str, said: str, way_out: str
) -> None:
    # The model read only the bridge's words ("exited with code 3 during ..."), not that the
    # server is started again on the next call, nor what to do instead.
    h = scripted_harness(tmp_path, bridge_factory, "x = 1", fault, request_timeout=2.0)
    message = await error(h, operation="goToDefinition", filePath="a.py", line=1, character=1)
    assert message.startswith(f"The language server could not answer goToDefinition: {said}")
    assert message.endswith(f"\n{way_out}")


async def test_a_location_whose_line_cannot_be_read_keeps_the_servers_column(
    tmp_path: Path, bridge_factory: Callable[..., Bridge]
) -> None:
    # A location in a file that is not there (basedpyright names a file whose name is not UTF-8
    # by another name), or past the end of its file, was shown at column 1: the column was
    # clamped to the length of the line, which is unknown there.
    h = scripted_harness(tmp_path, bridge_factory, "ELSEWHERE = 1")
    text, meta = await lsp(h, operation="goToDefinition", filePath="a.py", line=1, character=1)
    found = [(loc["path"], loc["line"], loc["character"], loc["endCharacter"]) for loc in meta["locations"]]
    assert found == [("a.py", 51, 8, 10), ("a.py.gone", 4, 4, 6)]
    assert "a.py:51:8" in text.splitlines() and "a.py.gone:4:4" in text.splitlines()


async def test_a_file_a_server_names_that_cannot_be_read_is_said_to_be_lspilots_problem(
    tmp_path: Path, bridge_factory: Callable[..., Bridge]
) -> None:
    # A symbol the server declared in a file that is gone was "The language server could not
    # answer findReferences: file not found": the server was blamed for lspilot's own read.
    h = scripted_harness(tmp_path, bridge_factory, "x = 1")
    root = h.root
    message = await error(h, operation="findReferences", symbol="vanished")
    needs = "lspilot could not read a file it needs for findReferences"
    assert message == f"{needs}: file not found: {root}/gone.py"
