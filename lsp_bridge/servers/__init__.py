"""Built-in language server definitions, one module each; `BUILTIN` is the explicit list."""

from __future__ import annotations

from ..spec import ServerSpec
from . import basedpyright, clangd, jedi, pylsp, pyright, tsgo, typescript

BUILTIN: tuple[ServerSpec, ...] = (
    basedpyright.SPEC,
    pyright.SPEC,
    jedi.SPEC,
    pylsp.SPEC,
    typescript.SPEC,
    tsgo.SPEC,
    clangd.SPEC,
)
