"""Where a path in a shell command leads, and whether that is outside the workspace.

``State`` is the analysis's idea of the shell's working directory as the command goes on: the real
folder, the logical one bash's ``cd`` works from, and the ``pushd`` stack; a folder only known at
run time is kept as the text that set it. It also knows which of the variables paths depend on
(``HOME`` for ``~``, ``PWD`` for ``~+``, ``CDPATH`` for ``cd NAME``) the command has set to values
only known at run time, and which hold numbers. ``absolute`` and ``resolve`` turn a word into a
path from there (``~``, ``~+``, ``..`` expanded, a glob cut to the folder it starts in, symlinks
resolved by ``resolve``), ``globbed`` into the paths a glob may expand to; ``outside`` gives the
``external_directory`` pattern of a path that leaves the trusted folders: ``/dir/*``, or the
word's text when its value is only known at run time, with the "always" pattern that approves just
that (the folder, or the text with ``*`` and ``?`` escaped).
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ._shell_words import SPECIAL, Word, climbs
from .context import is_within
from .permission import literal

#: Device files a redirection or file command may use without leaving the workspace.
HARMLESS = frozenset(
    f"/dev/{name}"
    for name in ("null", "stdin", "stdout", "stderr", "tty", "zero", "random", "urandom", "full")
)
_STACK_TILDE = re.compile(r"~[+-]?\d*")  # ~- ($OLDPWD), ~N, ~+N, ~-N (the pushd stack)


#: The variables the paths depend on: ``~`` is ``$HOME``, ``~+`` is ``$PWD``, ``cd NAME`` searches
#: ``$CDPATH``.
PATH_VARIABLES = frozenset({"HOME", "PWD", "CDPATH"})
#: In ``State.unknown`` once ``shopt -s dotglob`` or ``GLOBIGNORE`` may be set: a glob's ``*``
#: may then match a name starting with a dot.
DOTGLOB = "(dotglob)"
#: ... and once ``shopt -s globstar`` may be set: ``**`` then matches any number of folders.
GLOBSTAR = "(globstar)"
MAX_MATCHES = 5_000  # paths a glob is matched to, at most
MAX_LINKS = 1_000  # symlinks among them resolved, at most (one part's)
MAX_SCANNED = 100_000  # names looked at to match one part, at most


@dataclass
class GlobBudget:
    """What all the globs of one command may look at together, past which each is unchecked."""

    names: int = 2 * MAX_SCANNED
    matches: int = 2 * MAX_MATCHES


#: How a glob is asked whose matches were not all checked (past one of the limits above, or in
#: a folder that cannot be read): as reaching anywhere.
UNCHECKED = "(matches not all checked)"

Match = tuple[str, str]  # a path a glob matches, as bash names it, and its real path


def glob_options(names: Sequence[str | None]) -> set[str]:
    """What the shell options ``names`` (``shopt -s NAME``, ``bash -O NAME``; None: only known at
    run time) change in how globs match."""
    unknown = None in names
    return {flag for name, flag in (("dotglob", DOTGLOB), ("globstar", GLOBSTAR)) if unknown or name in names}


@dataclass
class State:
    cwd: Path | str  # the real folder; str: not known until run time, the text that set it
    pwd: str | None  # the logical folder bash's ``cd`` works from; None: unknown
    stack: list[tuple[Path | str, str | None]] = field(default_factory=list[tuple[Path | str, str | None]])
    unknown: set[str] = field(default_factory=set[str])  # PATH_VARIABLES set to unknown values
    #: Whether the command line feeds stdin here (a pipe, ``<``, a heredoc; the bash tool's own is
    #: /dev/null), and the file it reads when that is ``< FILE``.
    fed: bool = False
    stdin_file: Word | None = None
    #: Variables known to hold a number (set by arithmetic, or to a literal number): arithmetic
    #: evaluating them runs nothing (``_shell_evaluation``).
    numbers: set[str] = field(default_factory=set[str])
    #: Variables declared with the integer attribute (``declare -i``): a value assigned to one is
    #: evaluated as arithmetic. And arrays declared associative (``declare -A``): their
    #: subscripts are strings, while every other array's are evaluated as arithmetic.
    integers: set[str] = field(default_factory=set[str])
    associative: set[str] = field(default_factory=set[str])

    def fork(self) -> State:
        return State(
            self.cwd,
            self.pwd,
            list(self.stack),
            set(self.unknown),
            self.fed,
            self.stdin_file,
            set(self.numbers),
            set(self.integers),
            set(self.associative),
        )


def absolute(path: Word, state: State, logical: bool = False) -> str | None:
    """The absolute path ``path`` names from the state's real folder (or ``logical`` one, for
    ``cd``), symlinks not resolved; None if unknown until it runs."""
    value = path.value
    if value is None:
        return None
    if path.tilde:
        head, slash, rest = value.partition("/")
        if head == "~+":  # $PWD
            if state.pwd is None or "PWD" in state.unknown:
                return None
            value = state.pwd + slash + rest
        elif "HOME" in state.unknown if head == "~" else _STACK_TILDE.fullmatch(head):
            return None
        else:
            value = os.path.expanduser(value)
    if path.glob:
        folder = SPECIAL.split(value, maxsplit=1)[0].rpartition("/")[0]  # before the glob's part
        if logical or climbs(value[len(folder) :]):
            return None
        value = folder or ("/" if value.startswith("/") else ".")
    if not os.path.isabs(value):
        base = state.pwd if logical else state.cwd
        if base is None or (isinstance(base, str) and not logical):
            return None
        value = os.path.join(base, value)
    return value


def globbed(
    path: Word, state: State, budget: GlobBudget, made: frozenset[str] = frozenset()
) -> tuple[list[Match], bool]:
    """The absolute paths the glob ``path`` may expand to (none for a word that is no glob, or
    unknown), each with its real path (symlinks resolved), and whether that is all of them
    (False: past one of the limits, or a folder that cannot be read). Each part with a glob is
    matched to the names in the folders so far (a superset of bash's matches: ``_matcher``), and
    a part starting with a dot also to ``made`` (names of dot folders a command may make before
    it runs, ``.git``); a leading dot only by a dot, unless ``DOTGLOB``; ``**`` any number of
    folders once ``GLOBSTAR``. Each folder also keeps the part
    itself as a name (``n*`` in ``git init new && cp x n*/.git/hooks/``), so that the parts after
    it are checked for what the command may make before the glob expands."""
    if not path.glob or path.value is None:
        return [], True
    pattern = absolute(Word(path.raw, path.value, tilde=path.tilde), state)
    if pattern is None:
        return [], True
    dots = DOTGLOB in state.unknown
    found: list[Match] = [("/", "/")]
    complete = True
    parts = pattern.split("/")[1:]
    for index, part in enumerate(parts):
        if not SPECIAL.search(part):
            found = [(os.path.join(shown, part), _real(real, part)) for shown, real in found]
            continue
        if part == "**" and GLOBSTAR in state.unknown:  # this folder and every one below it
            found, read = _below(found, dots, budget, files=index == len(parts) - 1)
        else:
            found, read = _matched(found, part, dots or part.startswith("."), budget, made)
        complete = complete and read
    return found, complete


def _matched(
    folders: list[Match], part: str, dots: bool, budget: GlobBudget, made: frozenset[str]
) -> tuple[list[Match], bool]:
    """The names in ``folders`` that ``part`` matches, and the part itself in each; False when
    they are not all (past ``MAX_MATCHES``, ``MAX_LINKS`` or ``MAX_SCANNED``, or a folder that
    cannot be read)."""
    matches = _matcher(part)
    extra = dict.fromkeys(made, False) if dots else {}  # .g* or, with dotglob, * (a made .git)
    found: list[Match] = []
    scanned = matched = links = 0
    for shown, real in folders:
        entries = _entries(real)
        scanned += len(entries or ())
        budget.names -= len(entries or ())
        for name, link in sorted((extra | (entries or {})).items()):
            if (dots or not name.startswith(".")) and matches(name):
                found.append((os.path.join(shown, name), _resolved(os.path.join(real, name), link)))
                matched, links, budget.matches = matched + 1, links + link, budget.matches - 1
                if matched > MAX_MATCHES or links > MAX_LINKS or budget.matches < 0:
                    return found, False
        found.append((os.path.join(shown, part), os.path.join(real, part)))
        if entries is None or scanned > MAX_SCANNED or budget.names < 0:
            return found, False
    return found, True


#: A bracket expression, with the character classes, collating symbols and equivalence classes
#: in it (``[[:alpha:]]``, ``[[.hyphen.]]``, ``[[=e=]]``) that ``fnmatch`` does not know.
_BRACKET = re.compile(r"\[[!^]?\]?(?:\[([:.=]).*?\1\]|[^\]])*\]")


def _matcher(part: str) -> Callable[[str], object]:
    """Whether a name may be one bash's ``part`` matches (a superset): ``[^...]`` is ``[!...]``,
    and also a set holding ``!`` or ``^`` (it may have been quoted); a bracket expression with a
    class in it is any one character; every ``[`` also literally (it may have been quoted too:
    ``"["ab]*``); in any case (``nocaseglob``, a case-insensitive disk; ranges such as ``[A-z]``
    keep what they hold)."""
    patterns = [part]
    if "[" in part:
        patterns = [
            _BRACKET.sub(_bracket, part),
            _BRACKET.sub(_bracket_quoted, part),  # a quoted ! or ^ first: [\!g] is ! or g
            part.replace("[", "[[]"),
        ]
    return re.compile("|".join(fnmatch.translate(p) for p in patterns), re.IGNORECASE).match


def _bracket(match: re.Match[str]) -> str:
    text = match[0]
    if re.search(r"\[[:.=]", text):  # [[:alpha:]]: fnmatch would read "[[:alph" and "a:]]"
        return "?"
    return "[!" + text[2:] if text.startswith("[^") else text


def _bracket_quoted(match: re.Match[str]) -> str:
    text = _bracket(match)
    return f"[{text[2:-1]}{match[0][1]}]" if text.startswith("[!") else text


def _real(folder: str, name: str) -> str:
    """The real path of ``name`` in the real folder ``folder``."""
    if name in ("", "."):
        return folder
    if name == "..":
        return os.path.dirname(folder)
    joined = os.path.join(folder, name)
    return _resolved(joined, os.path.islink(joined))


def _resolved(path: str, link: bool) -> str:
    """The real path of ``path``, in a real folder: itself unless it is a ``link``."""
    return os.path.realpath(path) if link else path


def _below(folders: list[Match], dots: bool, budget: GlobBudget, files: bool) -> tuple[list[Match], bool]:
    """``folders`` and the folders under them (names with a leading dot only with ``dots``), and
    with ``files`` (``**`` as the last part) every other name there too; breadth first, one more
    than ``MAX_MATCHES`` at most; False when a folder could not be read. As bash's ``**``, a
    symlink to a folder is matched, not walked (bash then matches nothing in it, except for
    ``**/``: taken as matched, to be safe)."""
    found = list(folders)
    walked = list(folders)
    scanned = links = 0
    for shown, real in walked:  # grows while it is walked
        entries = _scan(real)
        scanned += len(entries or ())
        budget.names -= len(entries or ())
        if entries is None or scanned > MAX_SCANNED or budget.names < 0:
            return found, False
        for entry in sorted(entries, key=lambda entry: entry.name):
            if len(found) > MAX_MATCHES or links > MAX_LINKS or budget.matches < 0:
                return found, False
            if (dots or not entry.name.startswith(".")) and (files or entry.is_dir()):
                joined = os.path.join(real, entry.name)
                links, budget.matches = links + entry.is_symlink(), budget.matches - 1
                found.append((os.path.join(shown, entry.name), _resolved(joined, entry.is_symlink())))
                walked += [found[-1]] if entry.is_dir(follow_symlinks=False) else []
    return found, True


def _entries(folder: str) -> dict[str, bool] | None:
    """The names in ``folder``, each with whether it is a symlink; None if it cannot be read."""
    entries = _scan(folder)
    return None if entries is None else {entry.name: entry.is_symlink() for entry in entries}


def _scan(folder: str) -> list[os.DirEntry[str]] | None:
    """The entries of ``folder``: None if it may not be read (the command may allow it first:
    ``chmod 755 d && cat d/*/x``), none if it cannot be (missing, no folder, a symlink loop)."""
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except PermissionError:
        return None
    except OSError:
        return []


def resolve(path: Word, state: State) -> Path | None:
    """The real path ``path`` names from the state's folder, or None if unknown until run."""
    value = absolute(path, state)
    return None if value is None else Path(os.path.realpath(value))


def unknown_text(path: Word, state: State) -> str:
    """How a path only known at run time is named: its text, after the folder's when that is
    only known at run time too (``$DIR/build`` after ``cd $DIR``)."""
    relative = isinstance(state.cwd, str) and not path.raw.startswith(("/", "~", "$"))
    return f"{state.cwd}/{path.raw}" if relative else path.raw


def outside(
    path: Word, state: State, trusted: Sequence[Path], resolved: str | None = None
) -> tuple[str, str] | None:
    """The ``external_directory`` pattern for ``path`` and its "always" pattern, or None when it
    stays in ``trusted``. A folder's always pattern is that folder, whatever its name holds
    (``/a\\*b/*``); a value only known at run time can only be approved as the text asked
    (``$HOME/\\*``, not every path under ``$HOME``). ``resolved``: the real path, when known."""
    if path.value is not None and (path.value in HARMLESS or path.value.startswith("/dev/fd/")):
        return None
    if path.value == "-" or path.raw.startswith(("<(", ">(")):  # stdin; a pipe to analyzed commands
        return None
    real = Path(resolved) if resolved is not None else resolve(path, state)
    if real is None:
        text = unknown_text(path, state)
        return text, literal(text)
    if any(is_within(real, folder) for folder in trusted):
        return None
    folder = real if real.is_dir() else real.parent
    return str(folder / "*"), os.path.join(literal(str(folder)), "*")
