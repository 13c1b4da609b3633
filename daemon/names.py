"""Files as the editor names them and as lspilot does.

The tools know a file by its real path (symlinks resolved, as the workspace root is). An editor
knows it by the name it opened: every file of a project opened through a symlinked folder, or a
file opened through a linked folder inside it or by a symlink of its own. What comes from the
editor is resolved here, and what goes back to it names the file as the editor does, so a
review, an edit or a shown document lands in the document the user has open, not in a second
one behind it. A deletion or a move names a symlink itself: ``key`` finds its document too.
"""

from __future__ import annotations

from pathlib import Path

from lsp_bridge.documents import uri_to_path
from tools.context import is_within, real_path


class EditorNames:
    def __init__(self, root: Path | None = None) -> None:
        #: The workspace folder as the editor names it, and as lspilot does.
        self._root = root
        self._real_root = _real(root) if root is not None else None
        self._paths: dict[str, Path] = {}  # the URI of each open document -> its file's real path
        #: Each open file's URIs (one file may be open under two names), the last changed first.
        self._uris: dict[Path, list[str]] = {}
        #: The names of open files that are symlinks themselves (folders resolved) -> real paths.
        self._links: dict[Path, Path] = {}

    def path(self, uri: str) -> Path:
        """The real path of a ``file:`` URI from the editor."""
        known = self._paths.get(uri)
        return known if known is not None else _real(uri_to_path(uri))

    def opened(self, uri: str) -> Path:
        """The real path of a document the editor has open (or changed: its URI becomes the one
        ``uri`` gives for the file)."""
        path = self._paths.get(uri)
        if path is None:
            name = uri_to_path(uri)
            path = self._paths[uri] = _real(name)
            link = _real(name.parent) / name.name
            if link != path:
                self._links[link] = path
        uris = self._uris.setdefault(path, [])
        if not uris or uris[0] != uri:
            uris[:] = [uri, *(u for u in uris if u != uri)]
        return path

    def closed(self, uri: str) -> tuple[Path, bool]:
        """The real path of a document the editor closed, and whether that was the file's last."""
        path = self._paths.pop(uri, None) or _real(uri_to_path(uri))
        uris = [u for u in self._uris.pop(path, []) if u != uri]
        if uris:
            self._uris[path] = uris
        else:
            for link in [link for link, real in self._links.items() if real == path]:
                del self._links[link]
        return path, not uris

    def key(self, path: Path) -> Path:
        """The real path of ``path``, when it is the symlink an open document was opened by."""
        return self._links.get(path, path)

    def uri(self, path: Path) -> str:
        """The URI the editor knows ``path`` by: its open document's (the last changed), else
        the path under the workspace folder as the editor named it."""
        uris = self._uris.get(path)
        if uris:
            return uris[0]
        root, real = self._root, self._real_root
        if root is not None and real is not None and real != root and is_within(path, real):
            return (root / path.relative_to(real)).as_uri()
        return path.as_uri()


def _real(path: Path) -> Path:
    """``path`` with its symlinks resolved; as it is when they loop."""
    try:
        return real_path(path)
    except (OSError, RuntimeError):
        return path
