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
    readiness=Readiness(),
    # tsgo rejects `shutdown` with null params; send none.
    shutdown_params_null=False,
)
