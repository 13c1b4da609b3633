"""What a wrapper runs, analyzed as if it were run directly.

A wrapper (``_shell_specs.WRAPPERS``: ``sudo``, ``env``, ``timeout``, ``xargs``, ``su``,
``watch``, ``flock``, ``parallel``, ...) runs what follows its options and leading operands: a
command, analyzed as one of its own; a script run with ``sh -c`` (``su -c CMD``, ``flock FILE -c
CMD``, the words of ``watch CMD`` joined, the template of ``parallel``, once per combination of its
arguments); the arguments of a shell (``su USER ARGS`` runs ``sh ARGS``); or, with nothing to run,
a shell reading its script on stdin (``su``, ``chroot DIR``, ``sudo -s``). The paths among its
options and leading operands are checked (``flock FILE``, ``sudo -D DIR``, which the command
then runs in). ``Wrappers`` builds on ``_shell_commands.Commands``, which records commands, reads
them by their program and hands wrappers over (``_wrapper``).
"""

from __future__ import annotations

import itertools
import math
import os
import re
import shlex
from collections.abc import Callable

from ._arity import always_prefix
from ._shell_commands import Commands
from ._shell_paths import State, resolve
from ._shell_specs import PARALLEL_REPLACING, PARALLEL_SOURCES, WRAPPERS, hijacks
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
        self, name: str, words: list[Word], state: State, stdin: str | None, xargs_input: bool
    ) -> int | None:
        """What a wrapper (``_shell_specs.Wrapper``) runs, analyzed as if run directly: a command
        after its options and leading operands, a script (``su -c CMD``, ``watch CMD``), the
        arguments of a shell (``su USER ARGS``), or a shell reading its script on stdin (``su``)."""
        spec = WRAPPERS[name]
        args = words[1:]
        values = [w.value for w in args]
        takes = (spec.values | spec.paths | spec.chdir | spec.code | spec.shells) - spec.optional
        parsed = parse_options(values, takes, leading_options=not spec.permute, optional=spec.optional)
        options = self._wrapper_options(name, args, parsed, state)
        if options is None:
            return None
        inner_state, code, shell = options
        if name == "command" and parsed.flags & {"-v", "-V"}:
            return always_prefix([w.value for w in words])
        direct = bool(parsed.flags & spec.direct)
        start = self._wrapped_start(name, args, parsed, direct, state)
        hijack: list[str] = []
        while spec.assignments and start < len(args) and re.match(r"[^=]+=", values[start] or ""):
            if hijacks((values[start] or "").partition("=")[0]):
                hijack.append(args[start].shown)
            start += 1
        if code is None and start + 1 < len(args) and values[start] in spec.code:  # flock FILE -c CMD
            code, start = args[start + 1], start + 2
        wrapped = "command" if direct else spec.wrapped
        rest = args[start:]
        shell_runs = wrapped == "shell" or (not rest and (spec.shell or parsed.flags & spec.shell_options))
        if code is not None or shell_runs:
            arguments = [Word("-c", "-c"), code, *rest] if code is not None else rest
            if shell is None:  # sh: analyzed without recording a command nobody wrote
                self._dispatch("sh", [Word("sh", "sh"), *arguments], inner_state, xargs_input, stdin)
            else:
                self.command([shell, *arguments], inner_state, stdin=stdin)
            return None
        if not rest:
            return always_prefix([w.value for w in words])
        if wrapped == "joined":
            self._joined(name, rest, parsed, inner_state)
            return None
        xargs = name == "xargs" or xargs_input
        stdin = None if name == "xargs" else stdin  # xargs gives its command /dev/null
        count = self.command(rest, inner_state, " ".join(hijack), xargs_input=xargs, stdin=stdin)
        return None if count is None else 1 + start + count

    def _wrapper_options(
        self, name: str, args: list[Word], parsed: Parsed, state: State
    ) -> tuple[State, Word | None, Word | None] | None:
        """Check the paths a wrapper's options name; returns the state the command runs in, the
        script an option gives (``su -c CMD``) and the shell instead of ``sh`` (``su -s SHELL``),
        or None when the options were the whole story (``env -S STRING``, ``sudo -e FILE``)."""
        spec = WRAPPERS[name]
        inner_state, code, shell = state, None, None
        for option, index, attached in parsed.values:
            value = option_value(args, index, attached)
            if option in spec.paths | spec.chdir:
                self.path(value, state)
            if option in spec.chdir:
                inner_state, real = state.fork(), resolve(value, state)
                inner_state.cwd, inner_state.pwd = real or value.raw, str(real) if real else None
            elif option in spec.code:
                code = value
            elif option in spec.shells:
                shell = value
            elif name == "env" and option in ("-S", "--split-string"):
                rest = " ".join(args[i].raw for i in parsed.operands)
                self._string(
                    Word(f"{value.raw} {rest}", f"{value.value} {rest}" if value.value else None), state
                )
                return None
        if name == "sudo" and parsed.flags & {"-e", "--edit"}:  # sudoedit FILE...
            for index in parsed.operands:
                self.path(args[index], state)
            return None
        return inner_state, code, shell

    def _wrapped_start(self, name: str, args: list[Word], parsed: Parsed, direct: bool, state: State) -> int:
        """Where what a wrapper runs starts: after its leading operands (the paths among them are
        checked), unless an option made it a plain command (``runuser -u USER CMD``)."""
        spec = WRAPPERS[name]
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

    def _joined(self, name: str, words: list[Word], parsed: Parsed, state: State) -> None:
        """Words a wrapper joins into a script for ``sh -c`` (``watch CMD``, ``sg GROUP CMD``).
        ``parallel TEMPLATE ::: ARGS ...`` runs its template once per combination of arguments,
        each put at its replacement strings (``{}``, ``{1}``, ``{.}``, ...) or appended; without a
        template the arguments are the commands. Arguments read from stdin or files are unknown:
        the template is analyzed on its own, and they count as the outside path ``(parallel input)``."""
        cuts = [i for i, w in enumerate(words) if name == "parallel" and w.value in PARALLEL_SOURCES]
        template = words[: cuts[0]] if cuts else words
        raw, text = " ".join(w.raw for w in template), " ".join(w.value or "" for w in template)
        if None in [w.value for w in template] or "{=" in text or parsed.flags & PARALLEL_REPLACING:
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
