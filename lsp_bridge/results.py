"""Location answers, read straight from the server's JSON into ``Span`` tuples.

definition/references/implementation answers can hold thousands of locations. Structuring them
through cattrs into the declared union types, converting LocationLinks and deduplicating them
by equality (quadratic) cost more than the server took to answer; even built by hand, an
``lsp.Location`` is four validated attrs objects. A ``Span`` is one tuple, which is also its own
key for deduplication: reading 900 references costs a third of what Location objects did.
Everything else is structured by the lsprotocol converter (see ``connection.py``).
"""

from __future__ import annotations

from typing import Any, cast

from lsprotocol import types as lsp

#: A location in an answer: ``(uri, line, character, end_line, end_character)``, an LSP range
#: (0-based lines, UTF-16 columns). A plain tuple: one instruction builds it (a NamedTuple's
#: constructor cost 0.1 µs more per location, a quarter of reading 900 references); it is its
#: own deduplication key and sorts by URI, then position.
Span = tuple[str, int, int, int, int]


def span_start(span: Span) -> lsp.Position:
    return lsp.Position(line=span[1], character=span[2])


def span_location(span: Span) -> lsp.Location:
    """The same place as an lsprotocol ``Location``."""
    end = lsp.Position(line=span[3], character=span[4])
    return lsp.Location(uri=span[0], range=lsp.Range(start=span_start(span), end=end))


_LINK = "targetUri"


def locations_from_json(result: Any) -> list[Span]:
    """Location | Location[] | LocationLink[] | null as distinct Spans, in order.

    A LocationLink becomes its target selection range (the name, not the whole body). What
    lsprotocol's validators would refuse (a negative or >= 2**31 number, a non-integer, a URI
    that is not a string) raises ValueError or TypeError.
    """
    if result is None:
        return []
    items = cast(list[dict[str, Any]], result if isinstance(result, list) else [result])
    # Usually all items are valid, of one kind and distinct: one comprehension that drops what is
    # not valid or of the other kind, then one set. Anything else is read item by item.
    links = bool(items) and _LINK in items[0]
    uri_key, range_key = (_LINK, "targetSelectionRange") if links else ("uri", "range")
    try:
        spans = [
            (uri, line, character, end_line, end_character)
            for item in items
            # Negative or >= 2**31 leaves bits after the shift; non-integers raise TypeError.
            if not (
                (line := (start := (span := item[range_key])["start"])["line"])
                | (character := start["character"])
                | (end_line := (end := span["end"])["line"])
                | (end_character := end["character"])
            )
            >> 31
            and type(uri := item[uri_key]) is str
            and (links or _LINK not in item)
        ]
    except (KeyError, TypeError):
        return _one_by_one(items)
    if len(spans) != len(items):
        return _one_by_one(items)
    if len(set(spans)) != len(spans):
        return list(dict.fromkeys(spans))
    return spans


def _one_by_one(items: list[dict[str, Any]]) -> list[Span]:
    """``locations_from_json`` for any list: mixed kinds, repeats, and the errors it raises."""
    seen: set[Span] = set()
    spans: list[Span] = []
    for item in items:
        if _LINK in item:
            uri, span = item[_LINK], item["targetSelectionRange"]
        else:
            uri, span = item["uri"], item["range"]
        start, end = span["start"], span["end"]
        found = (uri, start["line"], start["character"], end["line"], end["character"])
        if found in seen:
            continue
        seen.add(found)
        if (found[1] | found[2] | found[3] | found[4]) >> 31 or type(uri) is not str:
            raise ValueError(f"not a location: {item!r}")
        spans.append(found)
    return spans


def merge_locations(answers: list[list[Span]]) -> list[Span]:
    """Spans from several servers, each once, in order of arrival."""
    if len(answers) == 1:
        return answers[0]
    return list(dict.fromkeys(span for spans in answers for span in spans))
