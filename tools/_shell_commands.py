"""One shell command: what it runs and which paths it touches, program by program.

``Commands`` records each command with its "always" prefix (``_arity.py``) and reads its words by
the program it names: wrappers (``sudo``, ``env``, ``xargs``, ``su``, ``watch``, ...; see
``_shell_wrappers.py``), runners (``uv run``, ``npx``, ``ssh``, ``docker exec``: ``_shell_runners.py``),
sessions (``tmux``, ``screen``, ``at``, ``crontab``: ``_shell_sessions.py``) and ``find -exec`` run
another command, analyzed in turn; shells
(``bash -c``, or a script on stdin), ``eval``, ``trap`` and ``alias`` run code, handed back to the
tree walk in ``_shell.py`` (``script``); ``cd``, ``pushd`` and ``popd`` move the working directory,
logically as bash does; ``git`` and the file commands of ``_shell_files.py`` name paths, checked
by ``_shell_paths.py``. ``read``, ``printf -v``, ``declare`` and the other setters of
``_shell_specs.py`` set variables: like an assignment, one that changes what runs makes the
command exact-only, and ``HOME``, ``PWD`` or ``CDPATH`` set so leave ``~``, ``~+`` or ``cd NAME``
unknown.
"""

from __future__ import annotations

import os
import re
import shlex
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ._arity import always_prefix
from ._hooks_path import hooks_folders
from ._protected import MADE_FOLDERS, READERS, protected_name, protected_path
from ._shell_dialects import Finding
from ._shell_files import XARGS_INPUT, cd, file_command, file_paths, find
from ._shell_filespecs import FILE_COMMANDS
from ._shell_git import git
from ._shell_paths import (
    DOTGLOB,
    PATH_VARIABLES,
    UNCHECKED,
    GlobBudget,
    State,
    absolute,
    glob_options,
    globbed,
    outside,
    unknown_text,
)
from ._shell_runners import RUNNERS, RUNNING, SESSIONS, Found, runner
from ._shell_sources import read, text
from ._shell_specs import (
    SETTERS,
    SHELLS,
    WRAPPERS,
    hijacks,
    names_in,
    setting,
)
from ._shell_stdin import STDIN_READERS, reads_stdin
from ._shell_words import Word, option_value, parse_options
from .context import relative_text
from .permission import literal

#: Tables of what command names run (``BASH_CMDS[NAME]=PATH``, ``BASH_ALIASES[NAME]=CODE``).
COMMAND_TABLES = frozenset({"BASH_CMDS", "BASH_ALIASES"})
#: In ``State.unknown`` once such a table is set in a way not worked out: every later command is
#: also asked for exactly, behind this label.
UNKNOWN_PROGRAMS = "(BASH_CMDS set)"
STDIN_SCRIPT = "(script on stdin)"
MAX_SOURCES = 8  # script files sourcing one another analyzed before giving up


@dataclass
class Analysis:
    #: One per command: (pattern, always pattern); the always pattern equals the pattern when only
    #: the exact command may be approved.
    commands: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    #: ``external_directory`` patterns, each with its "always" pattern: ``/dir/*`` (always: that
    #: folder), or the text of a value unknown until run time (always: that text exactly).
    outside: dict[str, str] = field(default_factory=dict[str, str])
    #: The script files programs run that were read (``sed -f FILE``), or looked for: path ->
    #: SHA-256 of the bytes read, None when there was none (``_shell_sources.stale``).
    sources: dict[str, str | None] = field(default_factory=dict[str, str | None])
    #: ``protected`` patterns, each approved exactly: a file in a git folder the command changes,
    #: a git setting that runs a program, a job run later (``_protected.py``).
    protected: dict[str, str] = field(default_factory=dict[str, str])


class Commands(ABC):
    """The analysis of single commands; ``_shell_wrappers.Wrappers`` adds wrappers (``_wrapper``)
    and ``_shell._Visitor`` the tree walk (``script``)."""

    def __init__(self, root: Path, trusted: Sequence[Path]) -> None:
        self.root = root
        self.trusted = [root, *trusted]
        self.result = Analysis()
        self.aliases: dict[str, str] = {}
        self.expanding: set[str] = set()  # aliases being expanded (bash does not recurse into one)
        self.traps: list[str] = []  # run later, from wherever the shell is then
        self.remote = 0  # > 0 while analyzing what runs elsewhere (ssh HOST CMD, docker exec)
        self.named: list[str] = []  # the absolute paths checked, to tell which name a script file
        self.read: list[tuple[Path, Word, bool]] = []  # script files read: file, name, path checked
        self.reading: list[Path] = []  # those being analyzed (one may source another)
        self.reads = False  # the paths named now are only read (``_protected.READERS``)
        self.glob_budget = GlobBudget()  # what the command's globs may look at together
        self.bare: dict[str, bool] = {}  # folders known to be bare repositories, or not
        #: Real paths of the paths named, and the ``core.hooksPath`` folders: looked up once per
        #: analysis (a long command names the same paths and folders many times).
        self._reals: dict[str, str] = {}
        self._hooks: tuple[str, ...] | None = None

    @abstractmethod
    def script(self, text: str, state: State) -> None:
        """Analyze ``text`` as a script run from ``state``."""

    @abstractmethod
    def evaluate(self, item: Word, state: State, *, sets: bool = True) -> None:
        """Analyze ``item`` as arithmetic (``let EXPR``): what it evaluates and runs."""

    @abstractmethod
    def subscripted(self, item: Word, state: State) -> None:
        """A variable's name (``read NAME``, ``test -v NAME``): what its subscript evaluates."""

    @abstractmethod
    def _wrapper(
        self, name: str, words: list[Word], state: State, stdin: str | None, xargs_input: bool
    ) -> int | None:
        """Analyze what the wrapper ``name`` runs; returns its "always" prefix length."""

    @abstractmethod
    def _runner(
        self, found: Found, words: list[Word], state: State, stdin: str | None, xargs_input: bool
    ) -> int | None:
        """Analyze what a runner's subcommand runs (``uv run CMD``); returns its prefix length."""

    @abstractmethod
    def _session(self, name: str, words: list[Word], state: State, stdin: str | None) -> int | None:
        """Analyze what ``tmux``, ``screen``, ``at``, ``batch`` or ``crontab`` run, now or later."""

    # -- recording -------------------------------------------------------------------------------
    def _record(self, pattern: str, always: str | None) -> int:
        self.result.commands.append((pattern, always or literal(pattern)))
        return len(self.result.commands) - 1

    def _outside(self, pattern: str, always: str | None = None) -> None:
        """Record an ``external_directory`` pattern; without ``always`` it is approved exactly."""
        self.result.outside.setdefault(pattern, always or literal(pattern))

    def protect(self, pattern: str) -> None:
        """Record a ``protected`` pattern (not for what runs elsewhere: that place is asked)."""
        if not self.remote:
            self.result.protected.setdefault(pattern, literal(pattern))

    def path(self, path: Word, state: State, *, written: bool = False) -> None:
        """Check a path the command names: outside the workspace, or protected when the command
        may change it (not one of ``READERS``, or ``written`` by one: ``git diff --output=F``)."""
        if self.remote:  # on another machine or in a container: that place is outside already
            return
        named = absolute(path, state)
        self.named.append(named or "")
        real = self.realpath(named) if named is not None else None
        # a glob: also each path it may expand to (one that may climb, like .*, is unknown as a
        # whole, but what it matches here may be protected), and each of their real paths
        expanded, complete = globbed(path, state, self.glob_budget, MADE_FOLDERS)
        if written or not self.reads:
            hooks = self.hooks_folders()
            for candidate, resolved in [*([(named, real)] if named and real else []), *expanded]:
                guarded = protected_path(candidate, resolved, self.root, self.bare, hooks)
                if guarded is not None:
                    self.protect(relative_text(guarded, self.root))  # the command may change it
            if not complete:
                self.protect(f"{UNCHECKED} {path.raw}")
            dots = DOTGLOB in state.unknown
            if named is None and path.raw and protected_name(text := unknown_text(path, state), dots):
                self.protect(text)  # in a folder only known at run time: by its names
        found = outside(path, state, self.trusted, real)
        if found is not None:
            self._outside(*found)
        under = os.path.join(real or "", "")  # what is under it is asked (or not) with it
        for candidate, resolved in expanded:  # through a symlink, a match may lead elsewhere
            if not resolved.startswith(under):
                elsewhere = outside(Word(candidate, candidate), state, self.trusted, resolved)
                if elsewhere is not None:
                    self._outside(*elsewhere)
        if not complete:
            self._outside(f"{UNCHECKED} {path.raw}")

    def realpath(self, path: str) -> str:
        """``os.path.realpath`` of an absolute ``path``, its folders' looked up once per analysis."""
        real = self._reals.get(path)
        if real is None:
            folder, name = os.path.split(path)
            if name in ("", ".", "..") or folder == path:
                real = os.path.realpath(path)
            else:
                joined = os.path.join(self.realpath(folder), name)
                real = os.path.realpath(joined) if os.path.islink(joined) else joined
            self._reals[path] = real
        return real

    def hooks_folders(self) -> tuple[str, ...]:
        if self._hooks is None:
            self._hooks = hooks_folders(self.root)
        return self._hooks

    # -- variables -------------------------------------------------------------------------------
    def sets(self, name: str | None, state: State) -> bool:
        """The shell sets variable ``name`` (None: a name only known at run time) to a value not
        followed here; True when that changes what runs. A variable paths depend on is unknown
        from then on (conservatively, even when only the next command's environment gets it)."""
        state.unknown |= PATH_VARIABLES if name is None else PATH_VARIABLES & {name}
        state.numbers.difference_update(state.numbers if name is None else {name})
        if name in (None, "GLOBIGNORE"):  # a GLOBIGNORE set makes * match names with a dot
            state.unknown.add(DOTGLOB)
        if name in COMMAND_TABLES:  # BASH_CMDS set other than entry by entry: any name may run anything
            state.unknown.add(UNKNOWN_PROGRAMS)
        return name is None or hijacks(name)

    def setter(self, words: list[Word], state: State) -> list[str]:
        """A builtin that sets the variables it names (``read NAME``, ``printf -v NAME``,
        ``declare NAME=VALUE``, ``_shell_specs.SETTERS``): those that change what runs (``?``: a
        name only known at run time). The code it runs (``mapfile -C CALLBACK``) is analyzed."""
        spec = SETTERS[words[0].value or ""]
        args = words[1:]
        parsed = parse_options([w.value for w in args], spec.values | spec.names | spec.code)
        if parsed.flags & spec.skips:
            return []
        operands = [args[i] for i in parsed.operands]
        chosen = {"all": operands, "first": operands[:1], "second": operands[1:2]}.get(spec.operands, [])
        names = [name for operand in chosen for name in names_in(operand, spec.form)]
        for operand in chosen if spec.form != "arithmetic" else []:  # read 'a[$(cmd)]', declare 'a[i]=1'
            self.subscripted(_name_part(operand), state)
        for option, index, attached in parsed.values:
            value = option_value(args, index, attached)
            names += names_in(value, "name") if option in spec.names else []
            if option in spec.names:  # printf -v 'a[$(cmd)]'
                self.subscripted(value, state)
            if option in spec.code:  # run with arguments of its own, unknown here
                code = None if value.value is None else f'{value.value} "$@"'
                self._string(Word(f'{value.raw} "$@"', code), state)
        for operand in chosen if parsed.flags & spec.namerefs else []:  # declare -n REF=NAME
            _, eq, target = (operand.value or "").partition("=")
            names += names_in(Word(target, target), "name") if eq else [None]
        assigns = spec.form == "name" and words[0].value != "unset"
        for name in names if assigns else []:  # declare -i n; read n: what it reads is evaluated
            if name is not None and name in state.integers:
                self._record(f"(evaluates {name}) {' '.join(w.raw for w in words)}", None)
        changing = [name or "?" for name in names if self.sets(name, state)]
        for operand in chosen if spec.form == "arithmetic" else []:  # let EXPR: what it evaluates
            self.evaluate(operand, state, sets=False)
        return changing

    # -- one command -----------------------------------------------------------------------------
    def command(
        self,
        words: list[Word],
        state: State,
        hijack: str = "",
        *,
        xargs_input: bool = False,
        stdin: str | None = None,
        written: list[Word] | None = None,
    ) -> int | None:
        """Record the command and analyze it; returns its "always" prefix length (None: exact).
        ``hijack`` holds the assignments before it that change what runs: the command is recorded
        as it is, so that its own rules apply, and after them, exact only. A setter of such a
        variable (``read PATH``) is recorded the same way, after ``(sets PATH)``.
        ``stdin`` is the literal script a heredoc or herestring feeds it; ``written`` the words
        before brace expansion, recorded too (by prefix only when the prefix has no braces)."""
        slot = self._record("", None)
        name = words[0].value
        if name and "/" in name and not name.startswith("/"):  # ./x, link/tool: where it runs from
            reads, self.reads = self.reads, True
            self.path(words[0], state)
            self.reads = reads
        base = name.rsplit("/", 1)[-1] if name and name.startswith("/") else name
        analyzed = [Word(base, base), *words[1:]] if base != name and base else words
        unknown = UNKNOWN_PROGRAMS if UNKNOWN_PROGRAMS in state.unknown else ""
        names = self.setter(analyzed, state) if base in SETTERS else []
        if base in ("test", "["):  # -v NAME (also as `command test`, after the wrapper)
            for index, item in enumerate(analyzed[1:-1], 1):
                if item.value == "-v":
                    self.subscripted(analyzed[index + 1], state)
        hijack = " ".join(filter(None, [unknown, hijack, setting(names)]))
        reads, self.reads = self.reads, base in READERS
        count = self._dispatch(base, analyzed, state, xargs_input, stdin) if base else None
        self.reads = reads
        forms = [words, analyzed] if analyzed is not words else [words]
        if written is not None and written != words:
            forms.insert(0, written)
        entries: list[tuple[str, str]] = []
        for form in forms:
            text = " ".join(w.shown for w in form)
            prefix = " ".join(w.shown for w in form[:count]) if count is not None else None
            if prefix is not None and form is written and prefix != " ".join(w.shown for w in words[:count]):
                prefix = None  # the braces are in the prefix: only the expanded form by prefix
            entries.append((text, literal(text) if prefix is None else literal(prefix) + " *"))
            if hijack:
                entries.append((f"{hijack} {text}", literal(f"{hijack} {text}")))
        self.result.commands[slot : slot + 1] = entries
        return None if hijack else count

    def _dispatch(
        self, name: str, words: list[Word], state: State, xargs_input: bool, stdin: str | None
    ) -> int | None:
        """Analyze what the command runs and touches, and what it reads as its program from stdin;
        returns the length of its "always" prefix."""
        language = reads_stdin(name, [w.value for w in words[1:]]) if name in STDIN_READERS else None
        exact = language is not None and self._stdin(name, language, stdin, state)
        count = self._program(name, words, state, xargs_input, stdin)
        return None if exact else count

    def _program(
        self, name: str, words: list[Word], state: State, xargs_input: bool, stdin: str | None
    ) -> int | None:
        """Analyze what the command runs and touches; returns the length of its "always" prefix."""
        args = words[1:]
        values = [w.value for w in args]
        if name in self.aliases and name not in self.expanding:  # bash would read the alias
            self.expanding.add(name)
            self.script(" ".join([self.aliases[name], *(w.raw for w in args)]), state)
            self.expanding.discard(name)
            return None
        if name in WRAPPERS or name in RUNNING:
            return self._wrapper(name, words, state, stdin, xargs_input)
        if name == "git":
            git(self, args, state)
        if name in RUNNERS and (found := runner(name, [w.value for w in words])) is not None:
            return self._runner(found, words, state, stdin, xargs_input)
        if name in SESSIONS:
            return self._session(name, words, state, stdin)
        if name in SHELLS:
            parsed = parse_options(values, frozenset({"-o", "-O", "+o", "+O", "--rcfile", "--init-file"}))
            inner = state.fork()  # bash -O dotglob, -O globstar
            inner.unknown |= glob_options(
                [option_value(args, i, a).value for o, i, a in parsed.values if o == "-O"]
            )
            if "-c" in parsed.flags:
                if parsed.operands or xargs_input:  # xargs gives the script
                    self._string(
                        args[parsed.operands[0]] if parsed.operands else Word(XARGS_INPUT, None), inner
                    )
                return None
            if (not parsed.operands or "-s" in parsed.flags) and not parsed.flags & {"--help", "--version"}:
                self._string(Word(STDIN_SCRIPT, stdin), inner)  # its script is on stdin
                return None
        if name in ("eval", "trap", "alias", "hash"):
            return self._code(name, words, state)
        if name == "shopt":  # * matches .git, ** any depth, from now
            state.unknown |= glob_options(values)
        if name == "find":
            find(self, args, state)
        elif name in ("cd", "pushd", "popd"):
            cd(self, name, args, state)
        elif name in FILE_COMMANDS:
            file_paths(self, name, file_command(name, values), args, state, xargs_input=xargs_input)
        return always_prefix([w.value for w in words])

    def _stdin(self, name: str, language: str, stdin: str | None, state: State) -> bool:
        """A program reading its program from stdin (``sqlite3 DB``, ``python3 -``, ``gdb PROG``)
        that the command line feeds: a literal heredoc, or a ``< FILE`` (path already checked), is
        read as a script of its language; code not followed, or anything else fed, is unknown.
        True when what it reads was not followed."""
        if stdin is not None:
            self.findings(text(language, f"stdin of {name}", stdin), state)
        elif state.stdin_file is not None and language:
            self.source(language, state.stdin_file, state)
        elif state.fed and state.stdin_file is None:
            self._string(Word(STDIN_SCRIPT, None), state)
        return state.fed and not language

    def _string(self, script: Word, state: State) -> bool:
        """A string the shell runs as code (``bash -c``, ``eval``): analyzed when literal."""
        if script.value is None:
            self._outside(script.raw)
            return False
        self.script(script.value, state)
        return True

    def findings(self, found: list[Finding], state: State) -> None:
        """What a program's own language runs or touches (``_shell_dialects``): scripts analyzed,
        paths checked, files of the language read and analyzed in turn, unknown code counted as
        an outside value named by its text."""
        for kind, item in found:
            if kind == "path":
                self.path(item, state)
            elif kind in ("script", "unknown"):
                self._string(item if kind == "script" else Word(item.raw, None), state.fork())
            else:
                self.path(item, state)
                self.source(kind, item, state)

    def source(self, kind: str, item: Word, state: State, *, optional: bool = False) -> str | None:
        """A file of a program's own language that it runs (``sed -f FILE``, ``gdb -x FILE``):
        read and analyzed when it is the workspace's (``_shell_sources``); otherwise unknown,
        named by the file and why it was not read. ``optional``: run only if it is there.
        Returns the text read, for a caller that reads it further (a tmux configuration)."""
        if self.remote:  # an optional one (.gdbinit) there is that place's, asked for already
            if not optional:
                self._outside(f"({item.raw}: on another machine, not read)")
            return None
        found = read(kind, item, state, self.trusted, optional=optional)
        if found.real is not None:
            self.read.append((found.real, item, not optional))
        if found.real is not None and (found.findings is not None or not found.reason):
            self.result.sources[str(found.real)] = found.digest  # read, or an optional one not there
        if found.findings is None or found.real is None:
            if found.reason:
                self._outside(f"({item.raw}: {found.reason})")
            return None
        if found.real in self.reading or len(self.reading) >= MAX_SOURCES:
            self._outside(f"({item.raw}: sourced within itself, not read again)")
            return None
        self.reading.append(found.real)
        self.findings(found.findings, state)
        self.reading.pop()
        return found.text

    def check_sources(self) -> None:
        """A script file read that the command also names elsewhere (``echo ... > s.sed; sed -f
        s.sed``) may be changed by it before the program reads it: unknown. (Only paths the
        analysis sees are compared: a program that writes it otherwise is not seen.)"""
        if not self.read:
            return
        named = Counter(Path(self.realpath(p)) for p in self.named if p)
        checked = Counter(real for real, _, was_checked in self.read if was_checked)
        for real, item, _ in self.read:
            if named[real] > checked[real]:
                self._outside(f"({item.raw}: also named by the command, which may change it first)")

    def ssh_option(self, value: Word, state: State) -> None:
        """``ssh -o KEY=VALUE`` (and scp's, sftp's): ``ProxyCommand``, ``LocalCommand`` and
        ``KnownHostsCommand`` run here, ``RemoteCommand`` there (as the command would)."""
        if value.value is None:
            self._string(Word(value.raw, None), state)
            return
        match = re.fullmatch(r"\s*(\w+)\s*(?:=\s*|\s+)(.*)", value.value, re.DOTALL)
        key = match[1].lower() if match else ""
        if key in ("proxycommand", "localcommand", "knownhostscommand") and match:
            self._string(Word(match[2], match[2]), state.fork())
        elif key == "remotecommand" and match:
            self.remote += 1
            self._string(Word(match[2], match[2]), state.fork())
            self.remote -= 1

    def _code(self, name: str, words: list[Word], state: State) -> int | None:
        """``eval ARGS``, ``trap CODE SIGNAL...``, ``alias NAME=CODE``: the code is analyzed as a
        script (the "always" prefix only when it is literal). ``hash -p PATH NAME`` makes NAME run
        PATH, which is read as an alias of NAME."""
        args = words[1:]
        values = [w.value for w in args]
        known = True
        if name == "eval":
            text = " ".join(v for v in values if v is not None) if None not in values else None
            known = self._string(Word(" ".join(w.raw for w in args), text), state)
        operands = parse_options(values, frozenset()).operands
        if name == "trap" and len(operands) > 1 and values[operands[0]] not in ("-", ""):
            known = self._string(args[operands[0]], state.fork())
            self.traps += [values[operands[0]] or ""] if known and not self.remote else []
        for index in operands if name == "alias" else []:
            alias, eq, code = (values[index] or "").partition("=")
            if values[index] is None or eq:
                known = self._string(Word(args[index].raw, code if eq else None), state.fork()) and known
            if eq:
                self.aliases[alias] = code
        if name == "hash":
            parsed = parse_options(values, frozenset({"-p"}))
            for _, index, attached in parsed.values:
                program = option_value(args, index, attached)
                code = program.raw if program.value is None else shlex.quote(program.value)
                self.aliases.update(dict.fromkeys((values[i] or "" for i in parsed.operands), code))
        return always_prefix([w.value for w in words]) if known else None


def _name_part(operand: Word) -> Word:
    """The NAME of a setter's ``NAME=VALUE`` operand (the whole word when it has no ``=``)."""
    if operand.value is not None:
        name = operand.value.partition("=")[0]
        return Word(name, name)
    name = operand.raw.partition("=")[0]  # NAME=$X: only the value is unknown
    return Word(name, None if any(c in name for c in "$`\"'\\") else name)
