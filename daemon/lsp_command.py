"""`lspilot lsp OPERATION FILE[:LINE[:COL]]`: the lsp tool from the shell, same text as
`lspilot tool lsp '{...}'` (it runs through the same door, ``tool_command.run_tool``).

Kept import-light: tools and lsp_bridge load only when the command runs.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

from . import stopping
from .tool_command import run_tool

#: Short names a person types, for the tool's operation names (which are accepted too).
ALIASES = {
    "definition": "goToDefinition",
    "definitions": "goToDefinition",
    "def": "goToDefinition",
    "references": "findReferences",
    "refs": "findReferences",
    "implementation": "goToImplementation",
    "implementations": "goToImplementation",
    "impl": "goToImplementation",
    "calls": "prepareCallHierarchy",
    "callers": "incomingCalls",
    "incoming": "incomingCalls",
    "callees": "outgoingCalls",
    "outgoing": "outgoingCalls",
    "symbols": "documentSymbol",
    "outline": "documentSymbol",
    "find": "workspaceSymbol",
}
OPERATIONS = (
    "goToDefinition",
    "findReferences",
    "hover",
    "documentSymbol",
    "workspaceSymbol",
    "goToImplementation",
    "prepareCallHierarchy",
    "incomingCalls",
    "outgoingCalls",
    "diagnostics",
)
PLACE = re.compile(r"^(?P<file>.+?)(?::(?P<line>\d+))?(?::(?P<col>\d+))?$")


def add_parser(subparsers: Any) -> None:
    """Register `lspilot lsp` on the main parser's subparsers."""
    names = ", ".join(OPERATIONS)
    lsp = subparsers.add_parser(
        "lsp",
        help="ask the language servers (definition, references, calls, symbols, diagnostics...)",
        description=f"Operations: {names}; short names: {', '.join(ALIASES)}.",
    )
    lsp.add_argument("operation", help="e.g. findReferences (or refs), goToDefinition (or def)")
    lsp.add_argument("place", nargs="?", help="FILE, FILE:LINE or FILE:LINE:COL (1-based)")
    lsp.add_argument("--symbol", help="a name or name path (Shape.area) instead of a position")
    lsp.add_argument("--query", help="what to look for (workspaceSymbol)")
    lsp.add_argument("--root", default=".", help="workspace root (default: the current directory)")
    lsp.add_argument("--yes", action="store_true", help="approve every ask (e.g. a file outside the root)")
    lsp.add_argument("--json", action="store_true", help="print {title, output, metadata, error}")
    lsp.set_defaults(run=run)


def tool_arguments(args: argparse.Namespace) -> dict[str, Any]:
    """The lsp tool's JSON arguments for a command line."""
    folded = {name.lower(): name for name in OPERATIONS}
    operation = ALIASES.get(args.operation.lower(), folded.get(args.operation.lower(), args.operation))
    arguments: dict[str, Any] = {"operation": operation}
    if args.place:
        place = PLACE.match(args.place)
        assert place is not None  # the pattern matches any non-empty text
        arguments["filePath"] = place["file"]
        if place["line"]:
            arguments["line"] = int(place["line"])
        if place["col"]:
            arguments["character"] = int(place["col"])
    if args.symbol:
        arguments["symbol"] = args.symbol
    if args.query:
        arguments["query"] = args.query
    return arguments


def run(args: argparse.Namespace) -> int:
    arguments = tool_arguments(args)
    if arguments["operation"] not in OPERATIONS:  # the tool's own error is worded for the model
        print(
            f"lspilot lsp: no operation {args.operation!r}; operations: {', '.join(OPERATIONS)}; "
            f"short names: {', '.join(ALIASES)}",
            file=sys.stderr,
        )
        return 2
    door = argparse.Namespace(
        name="lsp",
        args=json.dumps(arguments),
        root=args.root,
        yes=args.yes,
        json=args.json,
        session=None,
    )
    return stopping.run(run_tool(door))
