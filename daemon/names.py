"""Files as the editor names them and as lspilot does.

The tools know a file by its real path (symlinks resolved, as the workspace root is). An editor
knows it by the name it opened: every file of a project opened through a symlinked folder, or a
file opened through a linked folder inside it. What comes from the editor is resolved here, and
what goes back to it names the file as the editor does, so a review, an edit or a shown document
lands in the document the user has open, not in a second one behind it.
"""

from __future__ import annotations

from pathlib import Path

from lsp_bridge.documents import uri_to_path
from tools.context import is_within, real_path


class EditorNames:
    def __init__(self, root: Path | None = None) -> None:
        #: The workspace folder as the editor names it, and as lspilot does.
        self._root = root
        self._real_root = real_path(root) if root is not None else None
        self._paths: dict[str, Path] = {}  # the URI of each open document -> its real path
        self._uris: dict[Path, str] = {}  # and back

    def path(self, uri: str) -> Path:
        """The real path of a ``file:`` URI from the editor."""
        known = self._paths.get(uri)
        return known if known is not None else real_path(uri_to_path(uri))

    def opened(self, uri: str) -> Path:
        """The real path of a document the editor has open; its URI is kept for ``uri``."""
        path = self._paths.get(uri)
        if path is None:
            path = self._paths[uri] = real_path(uri_to_path(uri))
            self._uris[path] = uri
        return path

    def closed(self, uri: str) -> Path:
        path = self._paths.pop(uri, None) or real_path(uri_to_path(uri))
        if self._uris.get(path) == uri:
            del self._uris[path]
        return path

    def uri(self, path: Path) -> str:
        """The URI the editor knows ``path`` by: its open document's, else the path under the
        workspace folder as the editor named it."""
        known = self._uris.get(path)
        if known is not None:
            return known
        root, real = self._root, self._real_root
        if root is not None and real is not None and real != root and is_within(path, real):
            return (root / path.relative_to(real)).as_uri()
        return path.as_uri()
