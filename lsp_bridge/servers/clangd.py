"""clangd from the OS packages (Debian: clangd-22 answers outgoing calls, older ones do not)."""

from __future__ import annotations

from ..spec import Install, Readiness, ServerSpec

C_LANGUAGE_IDS = {
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".m": "objective-c",
    ".mm": "objective-cpp",
}

SPEC = ServerSpec(
    name="clangd",
    command=("clangd", "--background-index", "--log=error"),
    extensions=tuple(C_LANGUAGE_IDS),
    language_ids=C_LANGUAGE_IDS,
    root_markers=("compile_commands.json", "compile_flags.txt", ".clangd", ".git"),
    install=Install(
        kind="system",
        candidates=("clangd", "clangd-22", "clangd-21", "clangd-20", "clangd-19", "clangd-14"),
        hint="install clangd with your OS package manager (Debian: apt-get install clangd-22)",
    ),
    init_options={"clangdFileStatus": True},
    # clangd indexes the project in the background once the first file is opened and reports
    # it as $/progress "backgroundIndexProgress"; cross-file references are complete at its end.
    readiness=Readiness(open_starts_progress=("compile_commands.json",)),
    counts_disk_bom=True,
    enabled=True,
)
