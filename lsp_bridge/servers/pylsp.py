"""python-lsp-server (pylsp): plugin-based Python server; no call hierarchy or implementation."""

from __future__ import annotations

from ..spec import Install, Readiness, ServerSpec
from .basedpyright import PYTHON_ROOT_MARKERS

SPEC = ServerSpec(
    name="pylsp",
    command=("pylsp",),
    extensions=(".py", ".pyi"),
    language_ids={".py": "python", ".pyi": "python"},
    root_markers=PYTHON_ROOT_MARKERS,
    install=Install(kind="pypi", packages=("python-lsp-server==1.15.0",)),
    readiness=Readiness(progress=False),
)
