"""jedi-language-server: light Python server; no call hierarchy or implementation."""

from __future__ import annotations

from ..spec import Install, Readiness, ServerSpec
from .basedpyright import PYTHON_ROOT_MARKERS

SPEC = ServerSpec(
    name="jedi-language-server",
    command=("jedi-language-server",),
    extensions=(".py", ".pyi"),
    language_ids={".py": "python", ".pyi": "python"},
    root_markers=PYTHON_ROOT_MARKERS,
    install=Install(kind="pypi", packages=("jedi-language-server==0.47.0",)),
    readiness=Readiness(progress=False),
)
