"""The editor's names of files against lspilot's real paths (daemon/names.py)."""

from __future__ import annotations

from pathlib import Path

from daemon.names import EditorNames


def test_files_of_a_project_opened_through_a_symlink_are_named_as_the_editor_names_them(
    tmp_path: Path,
) -> None:
    real = tmp_path / "real"
    (real / "pkg").mkdir(parents=True)
    (real / "pkg/a.py").write_text("")
    link = tmp_path / "link"
    link.symlink_to(real)
    names = EditorNames(link)
    assert names.path((link / "pkg/a.py").as_uri()) == real / "pkg/a.py"
    # Not open in the editor (a new file too): under the folder the editor opened.
    assert names.uri(real / "pkg/a.py") == (link / "pkg/a.py").as_uri()
    assert names.uri(real / "pkg/new.py") == (link / "pkg/new.py").as_uri()
    assert names.uri(tmp_path / "elsewhere.py") == (tmp_path / "elsewhere.py").as_uri()


def test_a_document_opened_through_a_linked_folder_keeps_its_uri_until_closed(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src/a.py").write_text("")
    (tmp_path / "alias").symlink_to(tmp_path / "src")
    names = EditorNames(tmp_path)
    opened = (tmp_path / "alias/a.py").as_uri()
    assert names.opened(opened) == tmp_path / "src/a.py"
    assert names.uri(tmp_path / "src/a.py") == opened
    assert names.closed(opened) == (tmp_path / "src/a.py", True)
    assert names.uri(tmp_path / "src/a.py") == (tmp_path / "src/a.py").as_uri()


def test_a_symlink_open_in_the_editor_and_two_names_of_one_file(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("")
    (tmp_path / "alias.py").symlink_to("a.py")
    names = EditorNames(tmp_path)
    link, real = (tmp_path / "alias.py").as_uri(), (tmp_path / "a.py").as_uri()
    assert names.opened(link) == names.opened(real) == tmp_path / "a.py"
    assert names.key(tmp_path / "alias.py") == tmp_path / "a.py"  # what a deletion of the link names
    assert names.uri(tmp_path / "a.py") == real  # the last changed
    names.opened(link)
    assert names.uri(tmp_path / "a.py") == link
    assert names.closed(link) == (tmp_path / "a.py", False)
    assert names.uri(tmp_path / "a.py") == real
    assert names.closed(real) == (tmp_path / "a.py", True)
    assert names.key(tmp_path / "alias.py") == tmp_path / "alias.py"


def test_a_symlink_loop_is_named_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "loop").symlink_to("loop")
    names = EditorNames(tmp_path)
    uri = (tmp_path / "loop").as_uri()
    assert names.opened(uri) == names.path(uri) == tmp_path / "loop"
    assert names.closed(uri) == (tmp_path / "loop", True)
