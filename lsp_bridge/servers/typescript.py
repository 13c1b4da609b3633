"""typescript-language-server on TypeScript 5's tsserver (TS 7 ships no tsserver.js)."""

from __future__ import annotations

from ..spec import Install, Readiness, ServerSpec

TS_EXTENSIONS = (".ts", ".tsx", ".js", ".jsx", ".mts", ".cts", ".mjs", ".cjs")
TS_LANGUAGE_IDS = {
    ".tsx": "typescriptreact",
    ".jsx": "javascriptreact",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
}
TS_ROOT_MARKERS = ("tsconfig.json", "jsconfig.json", "package.json", ".git")

SPEC = ServerSpec(
    name="typescript-language-server",
    command=("typescript-language-server", "--stdio"),
    extensions=TS_EXTENSIONS,
    language_ids=TS_LANGUAGE_IDS,
    root_markers=TS_ROOT_MARKERS,
    install=Install(kind="npm", packages=("typescript-language-server@5.1.3", "typescript@5.9.3")),
    # Without a syntax-only server, early requests wait for the project instead of answering
    # from the open files alone; the project load is reported as $/progress after didOpen.
    init_options={"tsserver": {"useSyntaxServer": "never"}},
    readiness=Readiness(open_starts_progress=("tsconfig.json", "jsconfig.json")),
    # It publishes without versions and asks tsserver for diagnostics 300-800 ms after a change
    # (its requestDiagnostic delay); a publish sooner than that belongs to the previous text.
    publish_delay=0.3,
    # tsserver watches the disk itself (typescript-language-server takes no watched-file
    # notifications); a file created right after an import of it failed is seen ~1-1.4 s later.
    new_file_delay=1.5,
    enabled=True,
)
