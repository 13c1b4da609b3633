"""What a wrapper runs, analyzed as if it were run directly.

A wrapper (``_shell_specs.WRAPPERS``: ``sudo``, ``env``, ``timeout``, ``xargs``, ``su``,
``watch``, ``flock``, ``parallel``, ...) runs what follows its options and leading operands: a
command, analyzed as one of its own; a script run with ``sh -c`` (``su -c CMD``, ``flock FILE -c
CMD``, the words of ``watch CMD`` joined, the template of ``parallel``, once per combination of its
arguments); the arguments of a shell (``su USER ARGS`` runs ``sh ARGS``); or, with nothing to run,
a shell reading its script on stdin (``su``, ``chroot DIR``, ``sudo -s``). The paths among its
options and leading operands are checked (``flock FILE``, ``sudo -D DIR``, which the command
then runs in). A runner's subcommand (``uv run``, ``docker exec``: ``_shell_runners.py``) is read
the same way (``_runner``); one that runs its command elsewhere (``ssh HOST``, ``docker exec
CONTAINER``) has it analyzed without path checks (``remote``), the place counting as outside.
``Wrappers`` builds on ``_shell_commands.Commands``, which records commands, reads them by their
program and hands wrappers over (``_wrapper``).
"""

from __future__ import annotations

import itertools
import math
import os
import re
import shlex
from collections.abc import Callable, Sequence

from ._arity import always_prefix
from ._shell_commands import Commands
from ._shell_dialects import DEBUGGERS, debugger, init_file, parameters, substituted
from ._shell_paths import State, glob_options, resolve
from ._shell_runners import RUNNING, Found
from ._shell_specs import PARALLEL_REPLACING, PARALLEL_SOURCES, WRAPPERS, Wrapper, hijacks
from ._shell_words import MAX_WORDS, Parsed, Word, option_value, parse_options

PARALLEL_INPUT = "(parallel input)"
_REPLACEMENT = re.compile(r"\{(\d*)(\.|//|/\.|/|#|%)?\}")  # parallel's {}, {1}, {.}, {/}, {//}, {/.}, ...
_PARALLEL_PARTS: dict[str, Callable[[str], str]] = {
    "": str,
    ".": lambda item: os.path.splitext(item)[0],
    "/": os.path.basename,
    "//": lambda item: os.path.dirname(item) or ".",
    "/.": lambda item: os.path.splitext(os.path.basename(item))[0],
    "#": lambda _: "1",  # the job's and the slot's number
    "%": lambda _: "1",
}


class Wrappers(Commands):
    """The analysis of wrappers, on that of single commands; ``_shell._Visitor`` adds the tree walk."""

    def _wrapper(
        self,
        name: str,
        words: list[Word],
        state: State,
        stdin: str | None,
        xargs_input: bool,
        *,
        spec: Wrapper | None = None,
        offset: int = 0,
    ) -> int | None:
        """What a wrapper (``_shell_specs.Wrapper``) runs, analyzed as if run directly: a command
        after its options and leading operands, a script (``su -c CMD``, ``watch CMD``), the
        arguments of a shell (``su USER ARGS``), or a shell reading its script on stdin (``su``).
        ``spec`` and ``offset`` are given for a runner's subcommand (``uv run``: the word at
        ``offset`` is ``run``); otherwise ``name`` is the wrapper's and the first word."""
        spec = spec or WRAPPERS.get(name) or RUNNING[name]
        args = words[offset + 1 :]
        values = [w.value for w in args]
        end, first = _until(spec, args) if spec.until else (len(args), [])
        parsed = _parse(spec, values[: len(args) if end is None else end])
        options = self._wrapper_options(name, spec, args, parsed, state)
        if options is None:
            return None
        inner_state, codes, shell, entrypoint, hijack = options
        exact = self._debugger(name, args, inner_state)
        if spec.until:  # gdb PROGRAM [CORE]: the paths it reads
            self._wrapped_start(name, spec, args, parsed, direct=False, state=state)
        alone = end is None and spec.program and bool(parsed.operands)  # gdb PROGRAM: runs it
        if (name == "command" and parsed.flags & {"-v", "-V"}) or (end is None and not alone):
            return None if exact else always_prefix([w.value for w in words])
        none = shell is not None and shell.value == "none"  # watchexec --shell=none: no shell
        shell = None if none else shell
        direct = bool(parsed.flags & spec.direct) or (none and spec.wrapped == "joined")
        if alone or (end is not None and spec.until):
            start = parsed.operands[0] if alone else (end or 0) + 1
        else:
            start = self._wrapped_start(name, spec, args, parsed, direct=direct, state=state)
            start, inner_state = _assignments(spec, args, start, hijack, inner_state)
        if not codes and start + 1 < len(args) and values[start] in spec.code:  # flock FILE -c CMD
            codes, start = [args[start + 1]], start + 2
        wrapped = "command" if direct else "joined" if parsed.flags & spec.joining else spec.wrapped
        rest = [*entrypoint, *first, *args[start : start + 1 if alone else len(args)]]
        if spec.elsewhere:  # its paths are somewhere else: that place is outside
            self._outside("(" + " ".join(w.shown for w in words[: offset + 1 + start]) + ")")
            self.remote += 1
        try:
            if parsed.flags & spec.idle:  # ssh -N: nothing runs there
                return None
            if wrapped == "scripts":  # hyperfine CMD...: each a script, and so is each option's
                scripts = [*codes, *(args[i] for i in parsed.operands)]
                replaced = parameters(args, parsed) if parsed.flags & spec.parameters else {}
                for item in _replaced_scripts(scripts, replaced):
                    self._shell_script(shell, [item], inner_state, xargs_input, stdin)
                return None
            for code in codes[:-1]:  # only the last one runs; the others are read all the same
                self._string(code, inner_state.fork())
            code = codes[-1] if codes else None
            shell_runs = wrapped == "shell" or (
                not rest and (spec.shell or parsed.flags & spec.shell_options)
            )
            if code is not None or shell_runs:
                arguments = [code, *rest] if code is not None else rest
                self._shell_script(shell, arguments, inner_state, xargs_input, stdin, code=code is not None)
                return None
            if not rest:
                return always_prefix([w.value for w in words])
            if wrapped == "joined":
                self._joined(name, rest, parsed, inner_state, shell=shell, hijack=hijack)
                return None
            xargs = name == "xargs" or xargs_input
            stdin = None if name == "xargs" else stdin  # xargs gives its command /dev/null
            count = self.command(rest, inner_state, " ".join(hijack), xargs_input=xargs, stdin=stdin)
            return None if count is None or entrypoint or first or exact else 1 + offset + start + count
        finally:
            self.remote -= spec.elsewhere

    def _shell_script(
        self,
        shell: Word | None,
        arguments: list[Word],
        state: State,
        xargs_input: bool,
        stdin: str | None,
        *,
        code: bool = True,
    ) -> None:
        """A shell running ``arguments``: with ``code``, the first is its ``-c`` script. ``sh`` is
        analyzed without recording a command nobody wrote; another shell is recorded as run."""
        arguments = [Word("-c", "-c"), *arguments] if code else arguments
        if shell is None:
            self._dispatch("sh", [Word("sh", "sh"), *arguments], state, xargs_input, stdin)
        else:
            self.command([shell, *arguments], state, stdin=stdin)

    def _runner(
        self, found: Found, words: list[Word], state: State, stdin: str | None, xargs_input: bool
    ) -> int | None:
        """A runner's subcommand that runs a command (``uv run CMD``, ``docker exec CTR CMD``),
        read as a wrapper after the options before it, whose paths are checked (``uv --directory
        DIR``, which the command runs in)."""
        chain, spec, offset = found
        for runner, at, parsed in chain:
            args = words[at + 1 :]
            for option, index, attached in parsed.values:
                value = option_value(args, index, attached)
                if option in runner.paths | runner.chdir:
                    self.path(value, state)
                if option in runner.chdir:
                    state = _chdir(value, state)
        name = " ".join(
            w.value or "" for w in [words[0], *(words[at] for _, at, _ in chain[1:]), words[offset]]
        )
        return self._wrapper(name, words, state, stdin, xargs_input, spec=spec, offset=offset)

    def _wrapper_options(
        self, name: str, spec: Wrapper, args: list[Word], parsed: Parsed, state: State
    ) -> tuple[State, list[Word], Word | None, list[Word], list[str]] | None:
        """Check the paths a wrapper's options name; returns the state the command runs in, the
        scripts options give (``su -c CMD``), the shell instead of ``sh`` (``su -s SHELL``), the
        program an option puts first (``docker run --entrypoint PROGRAM``) and the variables that
        change what runs an option sets (``watchexec -E PATH=DIR``), or None when the options were
        the whole story (``env -S STRING``, ``sudo -e FILE``)."""
        inner_state, codes, shell, entrypoint, hijack = state, list[Word](), None, list[Word](), list[str]()
        for option, index, attached in parsed.values:
            value = option_value(args, index, attached)
            span = spec.spans.get(option, 1)  # bwrap --bind SRC DEST: SRC is this machine's
            for item in (
                [value, *args[index + 1 : index + span - 1]] if option in spec.paths | spec.chdir else []
            ):
                self.path(item, state)
            if option in spec.chdir:
                inner_state = _chdir(value, state)
            elif option in spec.code:
                codes.append(value)
            elif option in spec.environment and (
                value.value is None or hijacks(value.value.partition("=")[0])
            ):  # watchexec -E NAME=VALUE, bwrap --setenv NAME VALUE
                hijack.append("=".join(w.shown for w in [value, *args[index + 1 : index + span]]))
            elif option in spec.programs:  # cargo watch -x SUBCOMMAND: cargo SUBCOMMAND
                program = spec.programs[option]
                codes.append(Word(f"{program} {value.raw}", value.value and f"{program} {value.value}"))
            elif option in spec.shells:
                shell = value
            elif option in spec.mounts:
                self._mount(option, value, state)
            elif option == "--entrypoint" and value.value != "":
                entrypoint = [value]
            elif name == "ssh" and option == "-o":
                self.ssh_option(value, state)
            elif name == "env" and option in ("-S", "--split-string"):  # its words, then the rest
                rest = " ".join(item.raw for item in args[index + 1 :])
                self._string(
                    Word(f"{value.raw} {rest}", f"{value.value} {rest}" if value.value else None), state
                )
                return None
        if name == "sudo" and parsed.flags & {"-e", "--edit"}:  # sudoedit FILE...
            for index in parsed.operands:
                self.path(args[index], state)
            return None
        return inner_state, codes, shell, entrypoint, hijack

    def _mount(self, option: str, value: Word, state: State) -> None:
        """The path of this machine a container mounts: ``-v SRC:DST[:OPTS]`` (``SRC`` a path, not
        a volume's name), ``--mount type=bind,source=SRC,...``."""
        text = value.raw if value.value is None else value.value
        if option == "--mount":
            fields: dict[str, str] = {}
            for item in text.split(","):
                key, _, field = item.partition("=")
                fields[key] = field
            source = fields.get("source", fields.get("src")) if fields.get("type") == "bind" else None
        else:
            source, colon, _ = text.partition(":")
            source = source if colon and re.match(r"[/.~$]|.*/", source) else None
        if source is not None:
            self.path(
                Word(source, None if value.value is None else source, tilde=source.startswith("~")), state
            )

    def _debugger(self, name: str, args: list[Word], state: State) -> bool:
        """A debugger's own commands (``gdb -ex CMD``, ``lldb -o CMD``: ``_shell_dialects``), the
        files of them it runs (``-x FILE``) and the init file of the folder it starts in
        (``.gdbinit``), analyzed; True when some may run more than the program."""
        if name not in DEBUGGERS:
            return False
        found, runs = debugger(name, args)
        self.findings(found, state)
        init = init_file(name, args)
        if init is not None:
            self.source(name, init, state, optional=True)
        return runs

    def _wrapped_start(
        self, name: str, spec: Wrapper, args: list[Word], parsed: Parsed, *, direct: bool, state: State
    ) -> int:
        """Where what a wrapper runs starts: after its leading operands (the paths among them are
        checked), unless an option made it a plain command (``runuser -u USER CMD``)."""
        operands = parsed.operands
        if operands and args[operands[0]].value == "-":  # env -, su - USER: a lone - is an option
            operands = operands[1:]
        if not direct:
            for index in operands[: spec.leading] if spec.leading_paths else []:
                self.path(args[index], state)
            operands = operands[spec.leading :]
        start = operands[0] if operands else len(args)
        if name == "coproc":  # coproc [NAME] { list; }: the grammar splits the group at its ';'
            start += next((n + 1 for n, w in enumerate(args[start : start + 2]) if w.value == "{"), 0)
        return start

    def _joined(
        self,
        name: str,
        words: list[Word],
        parsed: Parsed,
        state: State,
        *,
        shell: Word | None = None,
        hijack: Sequence[str] = (),
    ) -> None:
        """Words a wrapper joins into a script for ``sh -c`` (``watch CMD``, ``sg GROUP CMD``), or
        for ``shell`` (``watchexec --shell SHELL``), run with the variables ``hijack`` exported
        (``watchexec -E PATH=DIR``).
        ``parallel TEMPLATE ::: ARGS ...`` runs its template once per combination of arguments,
        each put at its replacement strings (``{}``, ``{1}``, ``{.}``, ...) or appended; without a
        template the arguments are the commands. Arguments read from stdin or files are unknown:
        the template is analyzed on its own, and they count as the outside path ``(parallel input)``."""
        if hijack:
            words = [Word(f"export {' '.join(hijack)};", f"export {' '.join(hijack)};"), *words]
        if shell is not None:
            raw, text = " ".join(w.raw for w in words), " ".join(w.value or "" for w in words)
            script = Word(raw, None if None in [w.value for w in words] else text)
            self.command([shell, Word("-c", "-c"), script], state)
            return
        cuts = [i for i, w in enumerate(words) if name == "parallel" and w.value in PARALLEL_SOURCES]
        template = words[: cuts[0]] if cuts else words
        raw, text = " ".join(w.raw for w in template), " ".join(w.value or "" for w in template)
        replacing = name == "parallel" and ("{=" in text or parsed.flags & PARALLEL_REPLACING)
        if None in [w.value for w in template] or replacing:
            self._string(Word(raw, None), state.fork())  # {= perl =}, -I STRING: not worked out
            return
        if name != "parallel":
            self._string(Word(raw, text), state.fork())
            return
        groups = [words[a + 1 : b] for a, b in itertools.pairwise([*cuts, len(words)])]
        for separator, group in zip((words[i].value for i in cuts), groups, strict=True):
            for item in group if separator in ("::::", "::::+") else []:
                self.path(item, state)  # a file of arguments
        runs = _combinations([words[i].value or "" for i in cuts], groups)
        if runs is None or any(o in ("-a", "--arg-file") for o, _, _ in parsed.values):
            self._outside(PARALLEL_INPUT)
            self._string(Word(PARALLEL_INPUT, text or None), state.fork())  # no template: unknown
            return
        for run in runs:
            script = _replaced(text, run) if template else " ".join(run)
            self._string(Word(script, script), state.fork())


def _assignments(
    spec: Wrapper, args: list[Word], start: int, hijack: list[str], state: State
) -> tuple[int, State]:
    """Where the command starts after the ``NAME=VALUE`` words before it (``env A=1 CMD``), and
    the state it runs in; those changing what runs are added to ``hijack``."""
    begin = start
    while spec.assignments and start < len(args) and (name := _assigned(args[start])) is not None:
        if not _IDENTIFIER.fullmatch(name) or hijacks(name):  # a name only known at run time too
            hijack.append(args[start].shown)
        start += 1
    return start, _shell_options(args[begin:start], state)


_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def _assigned(item: Word) -> str | None:
    """The name a ``NAME=VALUE`` word sets, its value known or not (``A=$x``, ``"A=$x"``)."""
    text = item.value if item.value is not None else item.raw.lstrip("\"'")
    name, equals, _value = text.partition("=")
    return name if equals and name else None


def _shell_options(assignments: list[Word], state: State) -> State:
    """The state of a command run with ``assignments`` in its environment: a shell given
    ``BASHOPTS=globstar`` (or ``dotglob``, or a value only known at run time) starts with that
    option set."""
    options: list[str | None] = []
    for item in assignments:
        name = _assigned(item)
        if name == "BASHOPTS" or (name is not None and not _IDENTIFIER.fullmatch(name)):
            options += [None] if item.value is None else item.value.partition("=")[2].split(":")
    if not options:
        return state
    inner = state.fork()
    inner.unknown |= glob_options(options)
    return inner


def _until(spec: Wrapper, args: list[Word]) -> tuple[int | None, list[Word]]:
    """Where the word after which a wrapper's command starts is (``gdb --args``, ``nodemon
    --exec``), and the command's first word when attached to it (``--exec=CMD``); None: none,
    or the end when a shell runs instead (``distrobox enter NAME``)."""
    for index, item in enumerate(args):
        option, eq, attached = (item.value or "").partition("=")
        if item.value in spec.until or (eq and option.startswith("--") and option in spec.until):
            return index, [Word(item.raw.partition("=")[2], attached)] if eq else []
    return (len(args) if spec.shell else None), []


def _parse(spec: Wrapper, values: list[str | None]) -> Parsed:
    """A wrapper's options, read the getopt way; with ``again``, read again after the leading
    operands (``ssh HOST -p 22 CMD``): the first operand after those ends them."""
    takes = (
        spec.values | spec.paths | spec.chdir | spec.code | spec.shells | spec.mounts | spec.programs.keys()
    )
    takes -= spec.optional
    options = {"optional": spec.optional, "long_only": spec.long_only, "spans": spec.spans}
    parsed = parse_options(values, takes, leading_options=not spec.permute, **options)
    if not spec.again or len(parsed.operands) <= spec.leading:
        return parsed
    first = parsed.operands[spec.leading - 1] + 1
    more = parse_options(values[first:], takes, leading_options=True, **options)
    parsed.values += [(option, index + first, attached) for option, index, attached in more.values]
    parsed.operands[spec.leading :] = [index + first for index in more.operands]
    parsed.flags |= more.flags
    return parsed


def _replaced_scripts(scripts: list[Word], replaced: dict[str, list[str]] | None) -> list[Word]:
    """hyperfine's scripts, once per combination of the parameters each names (``{NAME}``
    replaced by a value); unknown when the values are (``replaced`` None) or too many."""
    out: list[Word] = []
    for script in scripts:
        texts = None if replaced is None or script.value is None else substituted(script.value, replaced)
        if texts == [script.value]:
            out.append(script)
        else:
            out += [Word(text, text) for text in texts] if texts else [Word(script.raw, None)]
    return out


def _chdir(folder: Word, state: State) -> State:
    """The state of a command run in ``folder`` (``env -C DIR``, ``uv --directory DIR``)."""
    inner, real = state.fork(), resolve(folder, state)
    inner.cwd, inner.pwd = real or folder.raw, str(real) if real else None
    return inner


def _combinations(separators: list[str], groups: list[list[Word]]) -> list[list[str]] | None:
    """The arguments of each run of ``parallel``: one from each ``:::`` group, those of a
    ``:::+`` group paired with the group before; None when some are unknown or too many."""
    sources: list[list[tuple[str, ...]]] = []
    for separator, group in zip(separators, groups, strict=True):
        items = [w.value for w in group]
        if separator not in (":::", ":::+") or None in items:
            return None
        if separator == ":::+" and sources:
            sources[-1] = [(*run, item or "") for run, item in zip(sources[-1], items, strict=False)]
        else:
            sources.append([(item or "",) for item in items])
    if not sources or math.prod(len(source) for source in sources) > MAX_WORDS:
        return None
    return [[item for part in run for item in part] for run in itertools.product(*sources)]


def _replaced(template: str, run: list[str]) -> str:
    """``parallel``'s command for one run: the arguments, quoted, put at ``{}`` and ``{N}`` (``{.}``
    without the extension, ``{/}`` the base name, ``{//}`` the folder, ...), or appended."""
    if not _REPLACEMENT.search(template):
        return " ".join([template, *map(shlex.quote, run)])

    def argument(match: re.Match[str]) -> str:
        number = int(match[1] or 0)
        items = run[number - 1 : number] if number else run
        return " ".join(shlex.quote(_PARALLEL_PARTS[match[2] or ""](item)) for item in items)

    return _REPLACEMENT.sub(argument, template)
