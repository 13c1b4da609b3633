"""First-line columns of answers about files a server read from disk with their UTF-8 BOM.

The bridge leaves a BOM out of the text it sends (see ``documents``), but basedpyright, pyright
and clangd (``ServerSpec.counts_disk_bom``) count it as a column of the first line in files they
read from disk themselves. So in every position they answer on the first line of such a file
(one the server does not have open and that starts with a BOM), the column is one to the right
of where editors and the model see it; these functions move it back.

``bom(uris)`` picks the files to correct out of those named on a first line
(``Synchronizer.read_bom``): it is called only when some position is on a first line, once per
answer.

Positions in the document a question is about need no correction: the question opened it in the
server. That covers hover ranges, document symbols, diagnostics' own ranges and the
``fromRanges`` of outgoing calls (they are in the item's file, which the question opened).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, cast

from lsprotocol import types as lsp

from .results import Span

Bom = Callable[[set[str]], set[str]]


def spans_without_bom(spans: list[Span], bom: Bom) -> list[Span]:
    """``spans`` with first-line columns one to the left in the files ``bom`` picks."""
    first = {span[0] for span in spans if not (span[1] and span[3])}
    moved = bom(first) if first else first
    if not moved:  # the usual case
        return spans
    return [_left_span(span) if span[0] in moved and not (span[1] and span[3]) else span for span in spans]


def _left_span(span: Span) -> Span:
    uri, line, character, end_line, end_character = span
    if line == 0 and character > 0:
        character -= 1
    if end_line == 0 and end_character > 0:
        end_character -= 1
    return (uri, line, character, end_line, end_character)


def results_without_bom(result: Any, bom: Bom) -> None:
    """Move the first-line columns of a structured answer in place (a fresh answer: nothing
    else holds its objects): symbol locations (``workspace/symbol``), call hierarchy items, the
    callers of incoming calls and their ``fromRanges``. Other results are left as they are."""
    if not isinstance(result, list):
        return
    found: list[tuple[str, lsp.Range]] = []
    for item in cast(list[Any], result):
        _ranges(item, found)
    _move(found, _moved(found, bom))


def diagnostics_without_bom(diagnostics: list[lsp.Diagnostic], bom: Bom) -> list[lsp.Diagnostic]:
    """``diagnostics`` with the first-line columns of their related locations moved. A pushed
    diagnostic is kept by its connection and may answer again, so those changed are copies."""
    related = [
        (info.location.uri, info.location.range)
        for diagnostic in diagnostics
        for info in diagnostic.related_information or ()
    ]
    moved = _moved(related, bom) if related else set[str]()
    if not moved:  # the usual case
        return diagnostics
    return [_moved_copy(d, moved) if _related(d, moved) else d for d in diagnostics]


def _related(diagnostic: lsp.Diagnostic, moved: set[str]) -> bool:
    return any(_in(i.location.uri, i.location.range, moved) for i in diagnostic.related_information or ())


def _moved_copy(diagnostic: lsp.Diagnostic, moved: set[str]) -> lsp.Diagnostic:
    diagnostic = copy.deepcopy(diagnostic)
    for info in diagnostic.related_information or ():
        _move([(info.location.uri, info.location.range)], moved)
    return diagnostic


def _ranges(item: Any, found: list[tuple[str, lsp.Range]]) -> None:
    """The (uri, range) pairs of one item of a list answer."""
    if isinstance(item, lsp.CallHierarchyItem):
        found += ((item.uri, item.range), (item.uri, item.selection_range))
    elif isinstance(item, lsp.CallHierarchyIncomingCall):
        _ranges(item.from_, found)
        found += ((item.from_.uri, r) for r in item.from_ranges)
    elif isinstance(item, lsp.CallHierarchyOutgoingCall):
        _ranges(item.to, found)  # fromRanges: in the asked item's file, which the server has open
    elif isinstance(item, lsp.SymbolInformation | lsp.WorkspaceSymbol) and isinstance(
        item.location, lsp.Location
    ):
        found.append((item.location.uri, item.location.range))


def _move(found: list[tuple[str, lsp.Range]], moved: set[str]) -> None:
    if not moved:  # the usual case
        return
    for uri, span in found:
        if _in(uri, span, moved):
            if span.start.line == 0 and span.start.character > 0:
                span.start.character -= 1
            if span.end.line == 0 and span.end.character > 0:
                span.end.character -= 1


def _moved(found: list[tuple[str, lsp.Range]], bom: Bom) -> set[str]:
    first = {uri for uri, span in found if not (span.start.line and span.end.line)}
    return bom(first) if first else first


def _in(uri: str, span: lsp.Range, moved: set[str]) -> bool:
    return uri in moved and not (span.start.line and span.end.line)
