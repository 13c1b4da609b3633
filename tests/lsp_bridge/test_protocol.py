"""JSON-RPC bookkeeping, result reading and path routing: the parts that must not drift."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types as lsp

from lsp_bridge import Bridge
from lsp_bridge.documents import DiskLines, DocumentStore, incremental_change, lsp_lines
from lsp_bridge.readiness import Loading
from lsp_bridge.results import locations_from_json, merge_locations, span_location, span_start
from lsp_bridge.rpc import RpcStream
from lsp_bridge.spec import Readiness
from lsp_bridge.watch import TEMP_SUFFIX
from tests.conftest import position, where

Factory = Callable[..., Bridge]
SCRIPTED = Path(__file__).with_name("scripted_server.py")


def scripted_servers(*flags: str) -> dict[str, dict[str, object]]:
    """Server config with only the scripted server (for .py files), run with ``flags``."""
    return {
        "basedpyright": {"enabled": False},
        "scripted": {"command": [sys.executable, str(SCRIPTED), *flags], "extensions": [".py"]},
    }


async def test_server_requests_reusing_our_ids_do_not_lose_answers(
    tmp_path: Path, bridge_factory: Factory
) -> None:
    # The scripted server sends requests with the same id as our pending request before
    # answering it; pygls's shared table used to drop our request, which then timed out.
    (tmp_path / "a.py").write_text("x = 1\n")
    bridge = bridge_factory(
        tmp_path,
        request_timeout=20.0,
        servers=scripted_servers(),
    )
    for _ in range(5):
        answer = await bridge.definition(tmp_path / "a.py", lsp.Position(line=0, character=0))
        assert [where(tmp_path, loc) for loc in answer.value] == [("a.py", 1)]


async def test_saves_of_open_documents_reach_the_server_as_changes_of_the_document(
    tmp_path: Path, bridge_factory: Factory
) -> None:
    # An open document's text comes from didChange; a watched-file event for it too would make
    # the server re-read the disk. New files are watched-file events; lspilot's own temp files
    # (written and renamed at once) are never reported.
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("x = 1\n")
    bridge = bridge_factory(
        tmp_path,
        servers=scripted_servers(),
    )
    await bridge.definition(a, lsp.Position(line=0, character=0))
    temp = tmp_path / f".a.py.x{TEMP_SUFFIX}"
    temp.write_text("x = 2\n")
    os.replace(temp, a)
    b.write_text("y = 1\n")
    await bridge.definition(a, lsp.Position(line=0, character=0))
    conn = bridge.connections[0]
    received = await conn.request("scripted/received", None, 10.0)
    assert received == [
        ["workspace/didChangeWatchedFiles", [b.as_uri()]],
        ["textDocument/didChange", [a.as_uri()]],
    ]


async def test_an_overlay_handed_back_after_a_write_still_sees_later_outside_changes(
    tmp_path: Path, bridge_factory: Factory
) -> None:
    # clear_overlay(written=...) trusts the write instead of re-reading the file; a change made
    # by someone else afterwards must still reach the server (the watcher reports it).
    a = tmp_path / "a.py"
    a.write_text("x = 1\n")
    bridge = bridge_factory(
        tmp_path,
        diagnostics_timeout=0.1,  # the scripted server publishes none
        servers=scripted_servers(),
    )
    await bridge.diagnostics_after_change(a, "x = 2\n")
    a.write_text("x = 2\n")
    bridge.clear_overlay(a, written="x = 2\n")
    doc = bridge.documents.get(a)
    assert doc is not None and not doc.overlay and doc.text == "x = 2\n"
    a.write_text("x = 3\n")  # someone else
    await bridge.definition(a, lsp.Position(line=0, character=0))
    assert doc.text == "x = 3\n"
    assert bridge.connections[0].open_documents[a.as_uri()][1] == "x = 3\n"  # sent to the server
    bridge.clear_overlay(a, written="not what is there")  # a claim that does not match: re-read
    assert doc.text == "x = 3\n"


@pytest.mark.parametrize(("delay", "found"), [(0.0, []), (0.5, ["ERR"])])
async def test_publishes_without_versions_are_taken_once_late_enough_to_be_the_changes(
    tmp_path: Path, bridge_factory: Factory, delay: float, found: list[str]
) -> None:
    # The scripted server in --push mode publishes the old text's diagnostics at once after a
    # change, and the new text's a second later, without versions (typescript-language-server
    # does the same: it asks tsserver 300-800 ms after a change). Without a publish_delay the
    # stale publish is taken as the answer.
    a = tmp_path / "a.py"
    a.write_text("x = 1\n")
    servers = scripted_servers()
    servers["scripted"] |= {"command": [sys.executable, str(SCRIPTED), "--push"], "publish_delay": delay}
    bridge = bridge_factory(tmp_path, servers=servers, diagnostics_timeout=20.0)
    assert (await bridge.diagnostics_after_change(a)).value == []
    a.write_text("x = 1\nERR\n")
    answer = await bridge.diagnostics_after_change(a)
    assert [d.message for d in answer.value] == found and answer.complete


def test_disk_lines_trust_a_watched_folder_until_told_and_check_the_others(tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    watched, other = tmp_path / "w/a.py", tmp_path / "b.py"
    for path in (watched, other):
        path.write_text("one\n")
    disk = DiskLines()
    covers = {str(tmp_path / "w")}.__contains__
    assert disk.get(str(watched), covers) == ["one"] and disk.get(str(other), covers) == ["one"]
    for path in (watched, other):
        path.write_text("two, longer\n")
    assert disk.get(str(other), covers) == ["two, longer"]  # checked: size and mtime changed
    assert disk.get(str(watched), covers) == ["one"]  # trusted: no watcher event was passed on
    disk.forget(tmp_path / "w", folder_too=True)  # the folder went (or was replaced)
    assert disk.get(str(watched), covers) == ["two, longer"]
    watched.write_text("three\n")
    disk.forget(watched, folder_too=False)
    assert disk.get(str(watched), covers) == ["three"] and disk.get(str(tmp_path / "gone.py"), covers) == []


def test_disk_lines_kept_by_uri_are_dropped_when_any_file_changes(tmp_path: Path) -> None:
    # An answer's files are kept by URI so that the next answers pay a dict lookup each: a file
    # that changed (a BOM written into it) must be read again once the watcher said so.
    watched, other = tmp_path / "a.py", tmp_path / "b.py"
    watched.write_text("x = 1\n")
    other.write_text("y = 1\n")
    disk = DiskLines()
    uri = watched.as_uri()
    assert disk.by_uri(uri, str(watched), lambda folder: True) == (["x = 1"], False)
    watched.write_text("\ufeffx = 2\n")
    assert disk.by_uri(uri, str(watched), lambda folder: True) == (["x = 1"], False)  # no event yet
    disk.forget(other, folder_too=False)  # any change empties what is kept by URI
    assert not disk.uris
    disk.forget(watched, folder_too=False)
    assert disk.by_uri(uri, str(watched), lambda folder: True) == (["x = 2"], True)
    assert disk.by_uri(uri, str(other), lambda folder: False) == (["x = 2"], True)  # by URI
    # Not watched: checked on every use, never kept by URI.
    assert disk.by_uri(other.as_uri(), str(other), lambda folder: False) == (["y = 1"], False)
    other.write_text("\ufeffy = 22\n")
    assert disk.by_uri(other.as_uri(), str(other), lambda folder: False) == (["y = 22"], True)
    # A URI written another way than Path.as_uri writes it is read, not kept.
    odd = other.as_uri().replace("b.py", "%62.py")
    assert disk.by_uri(odd, str(other), lambda folder: True) == (["y = 22"], True)
    assert odd not in disk.uris and uri in disk.uris


async def test_source_files_by_uri_follow_the_disk_and_the_documents(
    tmp_path: Path, bridge_factory: Factory
) -> None:
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("x = 1\n")
    b.write_text("y = 1\n")
    bridge = bridge_factory(tmp_path, servers=scripted_servers())
    await bridge.definition(a, lsp.Position(line=0, character=0))  # starts the server and watcher
    odd = b.as_uri().replace("b.py", "%62.py")  # as a server may write it
    files = [(b.as_uri(), b), (odd, b), (a.as_uri(), a)]
    assert bridge.source_files(files) == [["y = 1"], ["y = 1"], ["x = 1"]]
    b.write_text("y = 2\n")
    bridge.look_at_disk()
    assert bridge.source_files(files) == [["y = 2"], ["y = 2"], ["x = 1"]]
    bridge.update_document(b, "y = 3\n")  # an editor's unsaved text
    assert bridge.source_files(files) == [["y = 3"], ["y = 3"], ["x = 1"]]
    bridge.update_document(a, "x = 3\n")
    assert bridge.source_files(files)[2] == ["x = 3"]


async def test_source_lines_follow_changes_the_watcher_saw(tmp_path: Path, bridge_factory: Factory) -> None:
    a, b = tmp_path / "a.py", tmp_path / "pkg/b.py"
    a.write_text("x = 1\n")
    bridge = bridge_factory(
        tmp_path,
        servers=scripted_servers(),
    )
    await bridge.definition(a, lsp.Position(line=0, character=0))  # starts the server and watcher
    b.parent.mkdir()  # a folder made after the watch started is watched too
    b.write_text("y = 1\n")
    bridge.look_at_disk()
    assert bridge.source_lines(b) == ["y = 1"]
    before = b.stat()
    b.write_text("y = 2\n")
    os.utime(b, ns=(before.st_atime_ns, before.st_mtime_ns))  # size and mtime as before: only
    bridge.look_at_disk()  # the watcher can tell
    assert bridge.source_lines(b) == ["y = 2"]
    a.write_text("x = 2\n")  # open in the server: its document follows the disk at the next request
    await bridge.definition(a, lsp.Position(line=0, character=0))
    assert bridge.source_lines(a) == ["x = 2"]


async def test_many_rounds_of_questions_all_get_answers(
    project: Callable[[str], Path], bridge_factory: Factory
) -> None:
    # basedpyright numbers its own requests (one workDoneProgress/create per references) from
    # 1 too; our ids overtake its ids within a few dozen questions.
    root = project("py_project")
    bridge = bridge_factory(root)
    calc = root / "pkg/calc.py"
    at = position(calc, "total_area")
    for _ in range(40):
        assert len((await bridge.definition(calc, at)).value) == 1
        assert len((await bridge.references(calc, at)).value) == 4


async def test_new_root_marker_moves_the_file_to_a_new_root(
    project: Callable[[str], Path], bridge_factory: Factory
) -> None:
    root = project("py_project")
    bridge = bridge_factory(root)
    calc = root / "pkg/calc.py"
    await bridge.definition(calc, position(calc, "total_area"))
    assert {c.root for c in bridge.connections} == {root}

    (root / "pkg/pyproject.toml").write_text('[project]\nname = "pkg"\nversion = "0"\n')
    await bridge.definition(calc, position(calc, "total_area"))
    assert {c.root for c in bridge.connections} == {root, root / "pkg"}


def _span(a: int, b: int, c: int, d: int) -> dict[str, object]:
    return {"start": {"line": a, "character": b}, "end": {"line": c, "character": d}}


async def test_a_rescan_logged_as_soon_as_the_change_is_read_ends_the_wait(
    tmp_path: Path, bridge_factory: Factory
) -> None:
    # pyright rescans from a timer. On a loaded machine (CI) it fired before the server read the
    # rescan barrier sent behind the change: the load log came before the barrier's answer, did
    # not count, and the answer waited ready_timeout, marked incomplete.
    (tmp_path / "a.py").write_text("x = 1\n")
    scripted = {"command": [sys.executable, str(SCRIPTED), "--pyright-logs"], "extensions": [".py"]}
    bridge = bridge_factory(tmp_path, ready_timeout=5.0, servers={"basedpyright": scripted})
    assert (await bridge.diagnostics_after_change(tmp_path / "a.py")).complete
    (tmp_path / "b.py").write_text("y = 2\n")
    answer = await bridge.diagnostics_after_change(tmp_path / "b.py")
    assert answer.complete, answer.notes


async def test_a_load_log_read_right_behind_the_rescan_barriers_answer_counts(tmp_path: Path) -> None:
    # On a loaded machine the barrier's answer and the rescan's load log came in one read: the
    # log was handled before the task waiting for the answer resumed, was taken for an old one,
    # and answers waited ready_timeout (test_atomic_save failed so now and then).
    written: list[bytes] = []

    class Pipe:
        def write(self, data: bytes) -> None:
            written.append(data)

    def on_message(message: dict[str, Any]) -> None:
        loading.on_log(message["params"]["message"])

    def frame(message: dict[str, Any]) -> bytes:
        body = json.dumps(message).encode()
        return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)

    rpc = RpcStream("test", on_message)
    loading = Loading(Readiness(log_pattern=re.compile("Found")), tmp_path, rpc)
    reader = asyncio.StreamReader()
    reading = rpc.start(reader, cast(asyncio.StreamWriter, Pipe()))
    loading.expect_rescan()
    assert not loading.ready
    barrier = json.loads(written[0].partition(b"\r\n\r\n")[2])["id"]
    answer = {"jsonrpc": "2.0", "id": barrier, "error": {"code": -32601, "message": "unknown"}}
    found = {"jsonrpc": "2.0", "method": "window/logMessage", "params": {"type": 4, "message": "Found 7"}}
    reader.feed_data(frame(answer) + frame(found))
    assert await loading.wait(2.0)
    reader.feed_eof()
    await reading


def test_locations_from_json_reads_locations_and_links_once_each() -> None:
    assert locations_from_json(None) == []
    single = {"uri": "file:///a.py", "range": _span(1, 2, 1, 5)}
    assert locations_from_json(single) == [("file:///a.py", 1, 2, 1, 5)]
    link = {
        "targetUri": "file:///b.py",
        "targetRange": _span(0, 0, 9, 0),
        "targetSelectionRange": _span(3, 4, 3, 8),
    }
    decoded = locations_from_json([single, link, dict(single)])
    assert decoded == [("file:///a.py", 1, 2, 1, 5), ("file:///b.py", 3, 4, 3, 8)]
    assert span_start(decoded[1]) == lsp.Position(line=3, character=4)
    assert span_location(decoded[1]) == lsp.Location(
        uri="file:///b.py",
        range=lsp.Range(start=lsp.Position(line=3, character=4), end=lsp.Position(line=3, character=8)),
    )


def test_locations_from_json_rejects_what_lsprotocol_rejects() -> None:
    for bad in (-1, 2**31, 1.5, "1", None):
        with pytest.raises((ValueError, TypeError)):
            locations_from_json([{"uri": "file:///a.py", "range": _span(0, 0, 0, bad)}])  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        locations_from_json([{"uri": 7, "range": _span(0, 0, 0, 1)}])


def test_merge_locations_keeps_the_first_of_each() -> None:
    a, b, c = ("file:///a", 0, 0, 0, 1), ("file:///b", 0, 0, 0, 1), ("file:///a", 0, 0, 0, 1)
    assert merge_locations([[a, b], [c]]) == [a, b]
    assert merge_locations([[a, b]]) == [a, b]


def test_lsp_lines_break_only_where_lsp_does() -> None:
    assert lsp_lines("a\x0cb\nc\r\nd\re\u2028f\x85g") == ["a\x0cb", "c", "d", "e\u2028f\x85g"]
    assert lsp_lines("x\n") == ["x"] and lsp_lines("x\n\n") == ["x", ""] and lsp_lines("") == []


def _offset(text: str, line: int, character: int) -> int:
    """A string offset from an LSP position, as a server reads it: lines end at \\r\\n, \\r or
    \\n, columns count UTF-16 code units."""
    starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]
    offset, units = starts[line], 0
    while units < character:
        units += 2 if ord(text[offset]) > 0xFFFF else 1
        offset += 1
    return offset


@settings(max_examples=300, deadline=None)
@given(st.text("ab\r\né😀"), st.text("ab\r\né😀"))
def test_an_incremental_change_turns_the_old_text_into_the_new(old: str, new: str) -> None:
    change = incremental_change(old, new)
    start, end = change["range"]["start"], change["range"]["end"]
    a, b = _offset(old, start["line"], start["character"]), _offset(old, end["line"], end["character"])
    assert old[:a] + change["text"] + old[b:] == new


def test_a_documents_lines_follow_its_text() -> None:
    store = DocumentStore(10)
    doc = store.set_overlay(Path("/nowhere/a.py"), "a\nb\n")
    first = doc.lines
    assert first == ["a", "b"] and doc.lines is first  # split once per text
    store.set_overlay(doc.path, "a\x0cb\r\nc")
    assert doc.lines == ["a\x0cb", "c"]


def test_locations_from_json_reads_any_mix_as_one_item_at_a_time_would() -> None:
    a, b = (
        {"uri": "file:///a.py", "range": _span(1, 2, 1, 5)},
        {"uri": "file:///b.py", "range": _span(0, 0, 0, 1)},
    )
    link = {"targetUri": "file:///c.py", "targetSelectionRange": _span(3, 4, 3, 8)}
    # Kinds mixed either way round; a dict with both keys is read as a link wherever it is.
    both = {**b, "targetUri": "file:///d.py", "targetSelectionRange": _span(7, 0, 7, 2)}
    assert locations_from_json([a, link, b]) == [
        ("file:///a.py", 1, 2, 1, 5),
        *locations_from_json(link),
        ("file:///b.py", 0, 0, 0, 1),
    ]
    assert locations_from_json([link, a]) == [
        ("file:///c.py", 3, 4, 3, 8),
        ("file:///a.py", 1, 2, 1, 5),
    ]
    assert locations_from_json([a, both]) == [
        ("file:///a.py", 1, 2, 1, 5),
        ("file:///d.py", 7, 0, 7, 2),
    ]
    # Repeats are dropped wherever they are, the first kept; a repeat is equal, so never checked.
    assert locations_from_json([a, b, a, dict(b), a]) == [
        ("file:///a.py", 1, 2, 1, 5),
        ("file:///b.py", 0, 0, 0, 1),
    ]
    again = {"uri": "file:///a.py", "range": _span(1, 2.0, 1, 5)}  # type: ignore[arg-type]
    assert locations_from_json([a, again]) == [("file:///a.py", 1, 2, 1, 5)]
    with pytest.raises(TypeError):
        locations_from_json([again, a])
    with pytest.raises(ValueError, match="not a location"):
        locations_from_json([a, {"uri": "file:///a.py", "range": _span(0, -1, 0, 1)}])
    with pytest.raises(KeyError):
        locations_from_json([a, {"uri": "file:///a.py"}])
    assert locations_from_json([]) == []
