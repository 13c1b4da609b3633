"""Reading location results straight from the server's JSON.

definition/references/implementation answers can hold thousands of locations. Structuring them
through cattrs into the declared union types, converting LocationLinks and deduplicating them
by equality (quadratic) cost more than the server took to answer; here they are built directly
as ``lsp.Location`` objects and deduplicated by key on the way. Everything else is structured by
the lsprotocol converter (see ``connection.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from lsprotocol import types as lsp

LocationKey = tuple[str, int, int, int, int]


def locations_from_json(result: Any) -> list[lsp.Location]:
    """Location | Location[] | LocationLink[] | null as distinct Locations, in order.

    A LocationLink becomes its target and target selection range (the name, not the whole body).
    The objects are ordinary ``lsp.Location``/``Range``/``Position`` instances, filled through
    their slots: attrs' generated ``__init__`` makes a validator call per field, which for
    thousands of locations was most of the cost of the answer. The validators' check (unsigned
    31-bit integers) is made here once per location instead; a test compares the objects with
    the constructors'.
    """
    if result is None:
        return []
    items = cast(list[dict[str, Any]], result if isinstance(result, list) else [result])
    new = object.__new__
    position, range_, location = lsp.Position, lsp.Range, lsp.Location
    seen: set[LocationKey] = set()
    locations: list[lsp.Location] = []
    for item in items:
        if "targetUri" in item:
            uri, span = item["targetUri"], item["targetSelectionRange"]
        else:
            uri, span = item["uri"], item["range"]
        start, end = span["start"], span["end"]
        key = (uri, start["line"], start["character"], end["line"], end["character"])
        if key in seen:
            continue
        seen.add(key)
        _, start_line, start_char, end_line, end_char = key
        # Negative or >= 2**31 leaves bits after the shift; non-integers raise TypeError.
        if (start_line | start_char | end_line | end_char) >> 31 or type(uri) is not str:
            raise ValueError(f"not a location: {item!r}")
        first, last, span_, loc = new(position), new(position), new(range_), new(location)
        _SET_LINE(first, start_line)
        _SET_CHARACTER(first, start_char)
        _SET_LINE(last, end_line)
        _SET_CHARACTER(last, end_char)
        _SET_START(span_, first)
        _SET_END(span_, last)
        _SET_URI(loc, uri)
        _SET_RANGE(loc, span_)
        locations.append(loc)
    return locations


def _slot_setter(cls: type, name: str) -> Callable[[Any, Any], None]:
    """The slot descriptor's setter of an attrs class (slots=True): what its ``__init__`` uses."""
    descriptor: Any = vars(cls)[name]
    return descriptor.__set__


_SET_LINE = _slot_setter(lsp.Position, "line")
_SET_CHARACTER = _slot_setter(lsp.Position, "character")
_SET_START = _slot_setter(lsp.Range, "start")
_SET_END = _slot_setter(lsp.Range, "end")
_SET_URI = _slot_setter(lsp.Location, "uri")
_SET_RANGE = _slot_setter(lsp.Location, "range")


def merge_locations(answers: list[list[lsp.Location]]) -> list[lsp.Location]:
    """Locations from several servers, each once, in order of arrival."""
    if len(answers) == 1:
        return answers[0]
    seen: set[LocationKey] = set()
    merged: list[lsp.Location] = []
    for locations in answers:
        for loc in locations:
            start, end = loc.range.start, loc.range.end
            key = (loc.uri, start.line, start.character, end.line, end.character)
            if key not in seen:
                seen.add(key)
                merged.append(loc)
    return merged
