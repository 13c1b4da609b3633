"""basedpyright: the default Python server (implementation, call hierarchy, pull diagnostics)."""

from __future__ import annotations

import re

from ..spec import Install, Readiness, ServerSpec

PYTHON_ROOT_MARKERS = (
    "pyproject.toml",
    "pyrightconfig.json",
    "setup.py",
    "setup.cfg",
    "requirements.txt",
    ".git",
)

# Pyright-family servers log "Found N source files" once the workspace's file list is known;
# references before that only search the files analysed so far.
PYRIGHT_READY = Readiness(log_pattern=re.compile(r"Found \d+ source files?|No source files found"))

SPEC = ServerSpec(
    name="basedpyright",
    command=("basedpyright-langserver", "--stdio"),
    extensions=(".py", ".pyi"),
    language_ids={".py": "python", ".pyi": "python"},
    root_markers=PYTHON_ROOT_MARKERS,
    install=Install(kind="pypi", packages=("basedpyright==1.40.2",)),
    # The default mode floods warnings; "standard" reports what breaks code.
    settings={"basedpyright": {"analysis": {"typeCheckingMode": "standard"}}},
    readiness=PYRIGHT_READY,
    counts_disk_bom=True,
    enabled=True,
)
