"""tsgo: TypeScript 7's native server (`tsgo --lsp --stdio`); pull-only diagnostics."""

from __future__ import annotations

from ..spec import Install, Readiness, ServerSpec
from .typescript import TS_EXTENSIONS, TS_LANGUAGE_IDS, TS_ROOT_MARKERS

SPEC = ServerSpec(
    name="tsgo",
    command=("tsgo", "--lsp", "--stdio"),
    extensions=TS_EXTENSIONS,
    language_ids=TS_LANGUAGE_IDS,
    root_markers=TS_ROOT_MARKERS,
    install=Install(kind="npm", packages=("@typescript/native-preview@7.0.0-dev.20260707.2",)),
    # It watches the disk only through didChangeWatchedFiles, registered (asynchronously, at
    # times just after the first answer) once the opened file's project is built; a file created
    # before that would stay missing. With the registration in place it needs no new_file_delay:
    # a diagnostic pull after the notification answers from the new files at once.
    readiness=Readiness(open_registers_watchers=True),
    # tsgo rejects `shutdown` with null params; send none.
    shutdown_params_null=False,
)
