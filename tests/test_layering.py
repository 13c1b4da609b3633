"""Dependencies point one way: daemon -> tools -> lsp_bridge."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).parent.parent
FORBIDDEN = {"lsp_bridge": {"tools", "daemon"}, "tools": {"daemon"}}


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_does_not_import_upward(package: str) -> None:
    offenders: list[str] = []
    for source in (REPO / package).rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            names = (
                [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and node.level == 0
                else []
            )
            offenders += [
                f"{source.relative_to(REPO)}: {name}"
                for name in names
                if name.split(".")[0] in FORBIDDEN[package]
            ]
    assert offenders == []
