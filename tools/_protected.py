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

Git hook managers keep the hooks' code in the working tree, where the hook git runs reads it, so
these are protected too, in any folder (a repository's top may be anywhere in the workspace) and
named in any case: husky's ``.husky/`` (its ``_/`` is ``core.hooksPath``), pre-commit's
``.pre-commit-config.yaml`` and ``.pre-commit-hooks.yaml``, lefthook's configuration
(``lefthook.yml``, ``.lefthook-local.toml``, ...) and ``.lefthook/`` scripts; and the folders the
workspace repository's configuration names as ``core.hooksPath`` (``_hooks_path.py``): all
under it, or only the hooks directly in it when it holds the workspace.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ._hooks_path import hooks_folders
from .permission import PermissionRequest, literal


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


PERMISSION = "protected"
#: Hook managers' folders of scripts the installed hooks run (husky, lefthook).
HOOK_FOLDERS = _set(".husky .lefthook .lefthook-local")
#: Protected folders a command may make without naming them (``git init``, ``npx husky init``):
#: a glob is matched to these names too, as if they were there (``git init && cp x .g*/hooks/``).
MADE_FOLDERS = HOOK_FOLDERS | _set(".git .lspilot")
#: Hook managers' configuration files, whose commands the installed hooks run (pre-commit, lefthook).
HOOK_CONFIGS = re.compile(
    r"\.pre-commit-config\.ya?ml|\.pre-commit-hooks\.yaml|\.?lefthook(-local)?\.(ya?ml|toml|jsonc?)"
)
#: The names git runs as hooks (githooks(5)): in a ``core.hooksPath`` folder holding the workspace,
#: only these are protected.
GIT_HOOKS = _set(
    "applypatch-msg pre-applypatch post-applypatch pre-commit pre-merge-commit prepare-commit-msg "
    "commit-msg post-commit pre-rebase post-checkout post-merge pre-push pre-receive update "
    "proc-receive post-receive post-update reference-transaction push-to-checkout pre-auto-gc "
    "post-rewrite sendemail-validate fsmonitor-watchman p4-changelist p4-prepare-changelist "
    "p4-post-changelist p4-pre-submit post-index-change"
)
#: Commands that only read (or run now) the paths they name: those in a git folder are not asked
#: as ``protected`` (``cat .git/config``, ``cd .git``, ``git --git-dir .git log``), but for the
#: files some of them write (``git diff --output=F``: ``_shell_git.WRITES``; ``xxd IN OUT``,
#: ``less -o F``: ``FileCommand.writes`` and ``output``).
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


def is_protected(
    path: str | Path, root: Path, bare: dict[str, bool] | None = None, hooks: tuple[str, ...] | None = None
) -> bool:
    """Whether ``path`` (absolute, as named) is in a git folder, is a hook manager's or in a
    ``core.hooksPath`` folder, or is lspilot's configuration or tools in the workspace ``root``.
    ``hooks`` are the ``core.hooksPath`` folders, for a caller checking several paths at once."""
    current = os.path.normpath(path)
    return (
        in_git_dir(current, bare)
        or _hook_manager(current)
        or _lspilot_own(current, root)
        or any(_runs_hooks(f, current, str(root)) for f in (hooks_folders(root) if hooks is None else hooks))
    )


def protected_name(text: str, dots: bool) -> bool:
    """Whether a path whose folder is only known at run time (``"$X"/.git/hooks/x``, or after
    ``cd "$X"``) may be protected by its names alone, quoted or as globs that may match them: a
    git folder, a hook manager's, lspilot's (a glob part matches the names starting with a dot
    only when it starts with one too, as in bash, or with ``dots``: dotglob; ``lspilot.toml``
    only when it is more than wildcards: ``$X/*`` is any folder's)."""
    parts = [part for part in re.sub(r"[\\'\"]", "", text).lower().split("/") if part]  # .g""it
    names = {".git", ".lspilot", *HOOK_FOLDERS}
    return bool(parts) and (
        any(fnmatch.filter(names, part) for part in parts if dots or part.startswith(("[", ".")))
        or (parts[-1].strip("*?") != "" and fnmatch.fnmatchcase("lspilot.toml", parts[-1]))  # not any *
        or HOOK_CONFIGS.fullmatch(parts[-1]) is not None
    )


def _hook_manager(path: str) -> bool:
    parts = path.lower().split(os.sep)
    return bool(HOOK_FOLDERS.intersection(parts)) or HOOK_CONFIGS.fullmatch(parts[-1]) is not None


def _runs_hooks(folder: str, path: str, root: str) -> bool:
    """Whether git runs ``path`` as a hook from ``folder`` (a ``core.hooksPath``), or a hook there
    may source it: everything under it, but only the hooks directly in a folder holding ``root``."""
    if _under(root, folder):
        return os.path.dirname(path) == folder and os.path.basename(path) in GIT_HOOKS
    return _under(path, folder)


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _lspilot_own(path: str, root: Path) -> bool:
    """Whether ``path`` (absolute, normalised) is ``root``'s ``lspilot.toml`` or in its ``.lspilot``."""
    top = os.path.join(root, "")
    if not path.startswith(top):
        return False
    inside = path[len(top) :]
    return inside.partition(os.sep)[0].lower() == ".lspilot" or inside == "lspilot.toml"


def protected_path(
    named: str, real: str, root: Path, bare: dict[str, bool], hooks: tuple[str, ...] | None = None
) -> Path | None:
    """The path (absolute) as named or ``real`` (resolved) when it is protected, or None.
    ``hooks``: ``hooks_folders(root)``, for a caller checking many paths."""
    hooks = hooks_folders(root) if hooks is None else hooks
    checked = (real,) if real == named else (real, named)
    return next((Path(p) for p in checked if is_protected(p, root, bare, hooks)), None)


def request(patterns: Iterable[str], title: str, metadata: dict[str, Any]) -> PermissionRequest:
    """The ``protected`` ask for ``patterns``; "always" approves each of them exactly."""
    shown = list(dict.fromkeys(patterns))
    return PermissionRequest(PERMISSION, shown, [literal(p) for p in shown], title, metadata)
