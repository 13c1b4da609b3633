"""Files changing under servers: unreadable, FIFOs, symlinked roots, odd paths, watcher overflow
(first-line columns of files with a BOM: test_bom.py)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from lsprotocol import types as lsp

from lsp_bridge import Bridge, BridgeError
from lsp_bridge.documents import to_utf16
from tests.conftest import copy_fixture, position, where
from tests.lsp_bridge.test_protocol import scripted_servers

Factory = Callable[..., Bridge]


async def test_an_open_file_that_cannot_be_read_any_more_fails_only_its_own_questions(
    project: Callable[[str], Path], bridge_factory: Factory
) -> None:
    # A read error other than "missing" or "a folder" (here a symlink loop; EACCES for anyone
    # but root) escaped as a raw OSError from the sync pass of the next question, on any file,
    # and the other changes that pass had taken (app.py's) were never sent.
    root = project("py_project")
    bridge = bridge_factory(root)
    app, calc = root / "app.py", root / "pkg/calc.py"
    await bridge.definition(app, position(app, "total_area", nth=1))  # both open in the server
    calc.unlink()
    calc.symlink_to(calc.name)
    app.write_text(app.read_text().replace("    print(describe(shapes))\n", ""))
    with pytest.raises(BridgeError, match=r"pkg/calc\.py: "):
        await bridge.definition(calc, position(app, "total_area"))
    answer = await bridge.definition(app, position(app, "shapes", nth=1))
    assert [where(root, span) for span in answer.value] == [("app.py", 6)]
    assert bridge.connections[0].open_documents[app.as_uri()][1] == app.read_text()


async def test_a_fifo_named_like_a_source_file_is_refused_without_blocking(
    project: Callable[[str], Path], bridge_factory: Factory
) -> None:
    root = project("py_project")
    bridge = bridge_factory(root)
    fifo = root / "pipe.py"
    os.mkfifo(fifo)
    with pytest.raises(BridgeError, match="not a regular file"):
        await bridge.definition(fifo, position(root / "app.py", "main"))
    app = root / "app.py"
    answer = await bridge.definition(app, position(app, "total_area", nth=1))
    assert [where(root, span) for span in answer.value] == [("pkg/calc.py", 4)]


async def test_editor_buffers_under_a_symlinked_workspace_are_what_servers_see(
    project: Callable[[str], Path], bridge_factory: Factory, tmp_path: Path
) -> None:
    # The editor names files by the path it opened; the bridge keyed the buffer by that path
    # but asked the servers about the resolved one, read from disk.
    link = tmp_path / "link"
    link.symlink_to(project("py_project"))
    bridge = bridge_factory(link)
    app = link / "app.py"
    bridge.open_document(app, "x: int = 'no'\n")
    assert len((await bridge.diagnostics_after_change(app)).value) == 1
    bridge.update_document(app, "x: int = 1\nx.nope\n")
    assert ["nope" in d.message for d in (await bridge.diagnostics_after_change(app)).value] == [True]
    bridge.close_document(app)
    assert (await bridge.diagnostics_after_change(app)).value == []
    assert bridge.source_lines(app.resolve())[0] == "from pkg.calc import describe, total_area"


async def test_diagnostics_of_a_file_whose_path_servers_encode_their_own_way(
    tmp_path: Path, bridge_factory: Factory
) -> None:
    # clangd publishes file:///.../a:b%20c/... where the bridge writes a%3Ab%20c: the publish
    # was never matched to the document, and the answer came after diagnostics_timeout, empty.
    folder = tmp_path / "a:b c#é"
    folder.mkdir()
    root = copy_fixture("c_project", folder)
    bridge = bridge_factory(root)
    main_c = root / "main.c"
    main_c.write_text(main_c.read_text().replace("helper(0)", "helper(0, 1)"))
    answer = await bridge.diagnostics_after_change(main_c)
    assert [d.range.start.line for d in answer.value if d.severity == lsp.DiagnosticSeverity.Error] == [5]
    assert answer.complete


async def test_diagnostics_of_a_file_whose_name_is_not_utf8(tmp_path: Path, bridge_factory: Factory) -> None:
    # clangd publishes file:///.../caf%E9.c; the bridge read that as "caf\ufffd.c", so the publish
    # was never matched to the document and the answer came after diagnostics_timeout, empty.
    root = copy_fixture("c_project", tmp_path / "project")
    latin = Path(os.fsdecode(os.fsencode(root) + b"/caf\xe9.c"))
    latin.write_text('#include "helper.h"\nint use(void) { return helper(0, 1); }\n')
    answer = await bridge_factory(root).diagnostics_after_change(latin)
    assert [d.range.start.line for d in answer.value if d.severity == lsp.DiagnosticSeverity.Error] == [1]
    assert answer.complete


async def test_after_the_watcher_overflowed_folders_made_meanwhile_are_watched(
    project: Callable[[str], Path], bridge_factory: Factory
) -> None:
    # The kernel drops inotify events past its queue limit (16384 by default); a folder made
    # then was never watched, so later edits in it never reached the server.
    root = project("py_project")
    bridge = bridge_factory(root)
    app = root / "app.py"
    await bridge.definition(app, position(app, "total_area", nth=1))
    for n in range(6000):  # three events each
        (root / f"note{n}.txt").write_text("x")
    (root / "extra").mkdir()
    (root / "extra/fresh.py").write_text("def fresh() -> int:\n    return 1\n")
    app.write_text("from extra.fresh import fresh\n\nfresh()\n")
    answer = await bridge.definition(app, position(app, "fresh", nth=2))
    assert [where(root, span) for span in answer.value] == [("extra/fresh.py", 1)]
    (root / "extra/fresh.py").write_text("\ndef renamed() -> int:\n    return 1\n")
    app.write_text("from extra.fresh import renamed\n\nrenamed()\n")
    answer = await bridge.definition(app, position(app, "renamed", nth=1))
    assert [where(root, span) for span in answer.value] == [("extra/fresh.py", 2)]


async def test_after_the_watcher_overflowed_files_deleted_meanwhile_are_reported(
    tmp_path: Path, bridge_factory: Factory
) -> None:
    # The rescan after an overflow reported the files it found as created, but not those gone
    # since: a server that does not rescan its project (basedpyright does, on a new file) kept
    # them. A file made and deleted between two drains is never reported.
    a, gone, made = tmp_path / "a.py", tmp_path / "gone.py", tmp_path / "made.py"
    (tmp_path / "old").mkdir()
    for path in (a, gone, tmp_path / "old/more.py"):
        path.write_text("x = 1\n")
    bridge = bridge_factory(tmp_path, servers=scripted_servers())
    await bridge.definition(a, lsp.Position(line=0, character=0))
    made.write_text("y = 1\n")
    await bridge.definition(a, lsp.Position(line=0, character=0))
    for n in range(6000):  # three events each
        (tmp_path / f"note{n}.txt").write_text("x")
    for path in (gone, made, tmp_path / "old/more.py"):
        path.unlink()
    (tmp_path / "old").rmdir()
    (tmp_path / "brief.py").write_text("z = 1\n")
    (tmp_path / "brief.py").unlink()
    await bridge.definition(a, lsp.Position(line=0, character=0))
    received = await bridge.connections[0].request("scripted/received", None, 10.0)
    assert [sorted(uris) for _method, uris in received] == [
        [made.as_uri()],
        [f"-{gone.as_uri()}", f"-{made.as_uri()}", f"-{(tmp_path / 'old/more.py').as_uri()}"],
    ]


async def test_a_buffer_with_a_lone_surrogate_is_synced_and_its_positions_counted(
    project: Callable[[str], Path], bridge_factory: Factory
) -> None:
    # Text decoded with surrogateescape (or an editor sending a lone surrogate) made the UTF-16
    # column of an incremental change raise UnicodeEncodeError, failing every later question.
    # A lone surrogate is one UTF-16 unit, as servers count it once JSON has carried it.
    root = project("py_project")
    bridge = bridge_factory(root)
    app = root / "app.py"
    bridge.open_document(app, 's = "\udcff"; bad: int = "x"\n')
    answer = await bridge.diagnostics_after_change(app)
    assert [(d.range.start.line, d.range.start.character) for d in answer.value] == [(0, 20)]
    assert to_utf16('s = "\udcff"; bad: int = "x"', 20) == 20
    bridge.update_document(app, 's = "\udcff"; bad: int = "yy"; ok: str = 1\n')
    answer = await bridge.diagnostics_after_change(app)
    assert [(d.range.start.character, d.range.end.character) for d in answer.value] == [(20, 24), (36, 37)]


async def test_a_change_no_watcher_covered_yet_is_sent_once_one_does(
    tmp_path: Path, bridge_factory: Factory
) -> None:
    # tsgo registers its watchers as it builds a project, in the background: a file created
    # before the registration that covers it was dropped, never reported, and tsgo answered
    # "Cannot find module './b'" from then on.
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("x = 1\n")
    bridge = bridge_factory(tmp_path, servers=scripted_servers("--late-watch"))
    await bridge.definition(a, lsp.Position(line=0, character=0))
    b.write_text("y = 1\n")
    await bridge.definition(a, lsp.Position(line=0, character=0))  # seen; no watcher covers it yet
    conn = bridge.connections[0]
    assert await conn.request("scripted/received", None, 10.0) == []
    await conn.request("scripted/watch", None, 10.0)  # now it registers **/*.py
    await bridge.definition(a, lsp.Position(line=0, character=0))
    received = await conn.request("scripted/received", None, 10.0)
    assert received == [["workspace/didChangeWatchedFiles", [b.as_uri()]]]
