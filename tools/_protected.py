"""What makes a later, allowed command run code: git's own folder and configuration, and jobs
scheduled for later. Changing them is asked as the ``protected`` permission, which only rules
naming it can allow (``permission.EXPLICIT``): ``edit = "allow"`` or ``bash = {"git *" =
"allow"}`` do not silence it, since a hook written now runs at the next allowed ``git commit``.

A path is protected when it lies in a git folder: one named ``.git`` (any case, as a
case-insensitive file system reads it), or one that looks like a bare repository (``HEAD``,
``objects/`` and ``refs/``, whose configuration and hooks git also runs).
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


def git_path(named: str, real: str, bare: dict[str, bool]) -> Path | None:
    """The path (absolute) as named or ``real`` (resolved) when it is in a git folder, or None."""
    return next((Path(p) for p in (real, named) if in_git_dir(p, bare)), None)


def request(patterns: Iterable[str], title: str, metadata: dict[str, Any]) -> PermissionRequest:
    """The ``protected`` ask for ``patterns``; "always" approves each of them exactly."""
    shown = list(dict.fromkeys(patterns))
    return PermissionRequest(PERMISSION, shown, [literal(p) for p in shown], title, metadata)
