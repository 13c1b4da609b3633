"""What makes a later, allowed command run code: git's own folder and configuration, lspilot's
own project configuration and tools, and jobs scheduled for later. Changing them is asked as the
``protected`` permission, which only rules naming it can allow (``permission.EXPLICIT``):
``edit = "allow"`` or ``bash = {"git *" = "allow"}`` do not silence it, since a hook written now
runs at the next allowed ``git commit``, and a project tool or rule at the next session.

A path is protected when it lies in a git folder: one named ``.git`` (any case, as a
case-insensitive file system reads it), or one that looks like a bare repository (``HEAD``,
``objects/`` and ``refs/``, whose configuration and hooks git also runs); or when it is the
workspace's ``lspilot.toml`` or in its ``.lspilot`` folder (permission rules, language server
commands, the model's ``api_base``, tools the daemon imports).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .permission import PermissionRequest, literal


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


PERMISSION = "protected"
#: Commands that only read (or run now) the paths they name: those in a git folder are not asked
#: as ``protected`` (``cat .git/config``, ``cd .git``, ``git --git-dir .git log``).
READERS = _set(
    "cat tac less more stat file wc du ls ll nl od xxd hexdump strings readlink realpath md5sum "
    "sha1sum sha256sum sha512sum cksum diff cmp head tail cut grep egrep fgrep rg cd pushd git "
    "python python3 node bash sh zsh dash deno bun tsx ts-node"
)


def in_git_dir(path: str | Path, bare: dict[str, bool] | None = None) -> bool:
    """Whether ``path`` (absolute) is a git folder or in one, as named: symlinks not followed.
    ``bare`` keeps which folders are bare repositories, for a caller checking many paths."""
    current = os.path.normpath(path)
    return ".git" in current.lower().split(os.sep) or _in_bare(current, {} if bare is None else bare)


def _in_bare(folder: str, known: dict[str, bool]) -> bool:
    """Whether ``folder`` is a bare repository or in one (``known`` keeps the answers)."""
    found = known.get(folder)
    if found is None:
        parent = os.path.dirname(folder)
        found = known[folder] = (
            os.path.isfile(os.path.join(folder, "HEAD"))
            and os.path.isdir(os.path.join(folder, "objects"))
            and os.path.isdir(os.path.join(folder, "refs"))
        ) or (parent != folder and _in_bare(parent, known))
    return found


def is_protected(path: str | Path, root: Path, bare: dict[str, bool] | None = None) -> bool:
    """Whether ``path`` (absolute, as named) is in a git folder or is lspilot's configuration or
    tools in the workspace ``root``."""
    return in_git_dir(path, bare) or _lspilot_own(os.path.normpath(path), root)


def _lspilot_own(path: str, root: Path) -> bool:
    try:
        parts = Path(path).relative_to(root).parts
    except ValueError:
        return False
    return bool(parts) and (parts[0].lower() == ".lspilot" or parts == ("lspilot.toml",))


def protected_path(named: str, real: str, root: Path, bare: dict[str, bool]) -> Path | None:
    """The path (absolute) as named or ``real`` (resolved) when it is protected, or None."""
    return next((Path(p) for p in (real, named) if is_protected(p, root, bare)), None)


def request(patterns: Iterable[str], title: str, metadata: dict[str, Any]) -> PermissionRequest:
    """The ``protected`` ask for ``patterns``; "always" approves each of them exactly."""
    shown = list(dict.fromkeys(patterns))
    return PermissionRequest(PERMISSION, shown, [literal(p) for p in shown], title, metadata)
