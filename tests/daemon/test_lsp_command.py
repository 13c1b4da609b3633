"""`lspilot lsp OPERATION FILE[:LINE[:COL]]`: the same text as `lspilot tool lsp`, light to import."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from daemon.lsp_command import add_parser, tool_arguments
from tests.conftest import data_dir, position

from .conftest import LSPILOT


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    return parser.parse_args(["lsp", *argv])


def test_command_line_becomes_tool_arguments() -> None:
    assert tool_arguments(parse("refs", "src/a.py:12:5")) == {
        "operation": "findReferences",
        "filePath": "src/a.py",
        "line": 12,
        "character": 5,
    }
    assert tool_arguments(parse("GOTODEFINITION", "a.py:3", "--symbol", "Shape.area")) == {
        "operation": "goToDefinition",
        "filePath": "a.py",
        "line": 3,
        "symbol": "Shape.area",
    }
    assert tool_arguments(parse("find", "--query", "Shape")) == {
        "operation": "workspaceSymbol",
        "query": "Shape",
    }
    assert tool_arguments(parse("callers", "--symbol", "f")) == {"operation": "incomingCalls", "symbol": "f"}


def test_importing_the_command_loads_neither_tools_nor_lsp_bridge() -> None:
    code = (
        "import sys, daemon.lsp_command; "
        "print(sorted(m for m in ('tools', 'lsp_bridge') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LSPILOT_DATA_DIR", str(data_dir()))  # the installed servers
    monkeypatch.setenv("LSPILOT_CONFIG_DIR", str(tmp_path / "user-config"))


def lspilot(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LSPILOT, *argv, "--root", str(root)], capture_output=True, text=True, timeout=240, check=False
    )


@pytest.mark.usefixtures("env")
def test_prints_the_same_text_as_the_tool_door(project: Callable[[str], Path]) -> None:
    root = project("py_project")
    use = position(root / "app.py", "total_area", nth=1)
    place = f"app.py:{use.line + 1}:{use.character + 1}"
    short = lspilot(root, "lsp", "references", place)
    args = {
        "operation": "findReferences",
        "filePath": "app.py",
        "line": use.line + 1,
        "character": use.character + 1,
    }
    door = lspilot(root, "tool", "lsp", json.dumps(args))
    assert short.returncode == door.returncode == 0, short.stderr + door.stderr
    assert short.stdout == door.stdout
    assert short.stdout.startswith("4 references to total_area at app.py:")

    as_json = json.loads(lspilot(root, "lsp", "definition", "app.py", "--symbol", "Square", "--json").stdout)
    assert as_json["error"] is None
    assert as_json["metadata"]["locations"][0]["path"] == "pkg/shapes.py"

    missing = lspilot(root, "lsp", "hover", "app.py", "--symbol", "Triangle")
    assert missing.returncode == 1 and "No symbol named 'Triangle' in app.py." in missing.stderr
