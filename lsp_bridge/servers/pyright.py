"""pyright (Microsoft) from npm: the upstream of basedpyright."""

from __future__ import annotations

from ..spec import Install, ServerSpec
from .basedpyright import PYRIGHT_READY, PYTHON_ROOT_MARKERS

SPEC = ServerSpec(
    name="pyright",
    command=("pyright-langserver", "--stdio"),
    extensions=(".py", ".pyi"),
    language_ids={".py": "python", ".pyi": "python"},
    root_markers=PYTHON_ROOT_MARKERS,
    install=Install(kind="npm", packages=("pyright@1.1.414",)),
    settings={"python": {"analysis": {"typeCheckingMode": "standard"}}},
    readiness=PYRIGHT_READY,
    counts_disk_bom=True,  # as basedpyright (measured there, not here): the same file reading
)
