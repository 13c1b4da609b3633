"""Commands that read or change the paths among their arguments: ``rm``, ``cp``, ``cat``, ``tar``, ...

Each is read by its ``FileCommand`` (``_shell_filespecs.py``): the paths among its options and
operands are checked against the workspace (``file_paths``, for ``_shell_commands``), what its
options run is analyzed (``rsync -e CMD``), and so is what its own language runs or names
(``DIALECTS``). ``find`` reads ``find``'s start points, the files it writes and the commands it
runs; ``cd``, ``pushd`` and ``popd`` move the working directory. Options are read by
``_shell_words.parse_options``.
"""

from __future__ import annotations

import fnmatch
import itertools
import os
import re
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ._shell_dbclients import mysql, psql
from ._shell_dialects import Finding, socat, vim
from ._shell_filespecs import EX_MODE, FILE_COMMANDS, VIM, FileCommand
from ._shell_paths import State, absolute, globbed, resolve
from ._shell_sed_awk import awk, sed
from ._shell_sqlite import sqlite
from ._shell_words import Parsed, Word, option_value, parse_options

if TYPE_CHECKING:
    from ._shell_commands import Commands

XARGS_INPUT = "(xargs input)"
_PIPE = re.compile(r"/dev/stdin|/dev/fd/\d+|/proc/(self|\d+)/fd/\d+")


#: Readers of programs' own languages, by ``FileCommand.dialect``.
DIALECTS: dict[str, Callable[[Sequence[Word], Parsed], list[Finding]]] = {
    "psql": psql,
    "mysql": mysql,
    "sed": sed,
    "awk": awk,
    "vim": vim,
    "sqlite": sqlite,
    "socat": socat,
}


def file_command(name: str, values: Sequence[str | None]) -> FileCommand:
    """The ``FileCommand`` of ``name`` given ``values``: vim reads ``-s`` as silent mode as ``ex``
    or after ``-e``/``-E`` (``-es``), otherwise as ``-s FILE``, keys to type."""
    spec = FILE_COMMANDS[name]
    for value in (values if name != "ex" else ["-e"]) if spec is VIM else ():
        if value in ("-e", "-E", "-es", "-Es"):
            return EX_MODE
        if value == "-s":
            break
    return spec


def find(commands: Commands, args: list[Word], state: State) -> None:
    """``find [-H] [-L] [-P] [-D DEBUG] [-O LEVEL] START... EXPRESSION``: the start points and the
    files ``-fprint``, ``-fls``, ... write are checked; ``-exec`` and the like run a command."""
    index = 0
    while index < len(args) and re.fullmatch(r"-[HLP]+|-D|-O\d*", args[index].value or ""):
        index += 2 if args[index].value == "-D" else 1
    first = index
    while index < len(args) and not _expression(args[index].value):
        commands.path(args[index], state)
        index += 1
    if index == first:
        commands.path(Word(".", "."), state)
    while index < len(args):
        value = args[index].value
        if value in ("-exec", "-execdir", "-ok", "-okdir"):
            end = index + 1
            while end < len(args) and args[end].value not in (";", "+"):
                end += 1
            if end > index + 1:
                commands.command(args[index + 1 : end], state.fork())
            index = end
        elif value in ("-fprint", "-fprint0", "-fls", "-fprintf", "-files0-from") and index + 1 < len(args):
            commands.path(args[index + 1], state)
            if value == "-files0-from":  # the start points are in the file
                commands.path(_named_in(args[index + 1]), state)
            index += 1
        index += 1


def _cd_glob(commands: Commands, name: str, target: Word, state: State) -> None:
    """``cd GLOB``: bash goes to the one folder it matches, and stays where it is when it matches
    none or several (an error). The matches are a superset of bash's (``globbed``): only when
    bash surely matches each of them (no bracket expression, and in their case) is that known;
    otherwise the folder is unknown from then on."""
    matches, complete = globbed(target, state, commands.glob_budget)
    pattern = absolute(Word(target.raw, target.value, tilde=target.tilde), state)
    found = [(shown, real) for shown, real in matches if os.path.lexists(shown)]
    sure = (
        complete
        and pattern is not None
        and "[" not in pattern
        and all(fnmatch.fnmatchcase(shown, pattern) for shown, _real in found)
    )
    if sure and (len(found) != 1 or not os.path.isdir(found[0][1])):
        return  # cd fails: the shell stays
    if name == "pushd":
        state.stack.append((state.cwd, state.pwd))
    state.cwd, state.pwd = (Path(found[0][1]), found[0][0]) if sure else (target.raw, None)


def cd(commands: Commands, name: str, args: list[Word], state: State) -> None:
    """``cd``, ``pushd``, ``popd``: the folder the shell goes to. cd is logical in bash (``cd
    link/..`` is the folder holding ``link``) unless ``-P``: both that folder and the physical
    one are checked; the shell goes to the logical one. A relative name not starting with ``.``
    is looked up in ``CDPATH`` first, when set."""
    values = [w.value for w in args]
    if any(re.fullmatch(r"[+-]\d+", v or "") for v in values):  # pushd/popd +N: the stack turns
        values = [None]
    if name == "popd":
        state.cwd, state.pwd = state.stack.pop() if state.stack and not values else ("(popd)", None)
        return
    parsed = parse_options(values, frozenset())
    operands = [args[i] if values[i] is not None else Word(args[i].raw, None) for i in parsed.operands]
    target = operands[0] if operands else Word("~", "~", tilde=True)
    if target.value == "-":
        target = Word("-", None)
    elif "CDPATH" in state.unknown and not (target.tilde or re.match(r"/|\.\.?(/|$)", target.value or "/")):
        target = Word(f"$CDPATH/{target.raw}", None)  # cd NAME looks in CDPATH first
    commands.path(target, state)
    if target.glob:
        _cd_glob(commands, name, target, state)
        return
    logical = None if "-P" in parsed.flags else absolute(target, state, logical=True)
    logical = os.path.normpath(logical) if logical is not None else None
    if logical is not None:
        commands.path(Word(logical, logical), state)
    if name == "pushd":
        state.stack.append((state.cwd, state.pwd))
    real = resolve(target, state)
    if logical is not None and os.path.isdir(logical):
        state.cwd, state.pwd = Path(commands.realpath(logical)), logical
    else:
        state.cwd, state.pwd = real or target.raw, str(real) if real else None


def file_paths(
    commands: Commands, name: str, spec: FileCommand, args: list[Word], state: State, *, xargs_input: bool
) -> None:
    """The paths a file command names, checked, and what its options run (``rsync -e CMD``)."""
    takes = spec.values | spec.paths | spec.scripts.keys() | spec.lists | spec.writes
    if name == "tar" and args and (args[0].value or "-")[0] != "-" and (args[0].value or "").isalpha():
        args = _old_style(args, takes)
    values = [w.value for w in args]
    parsed = parse_options(values, takes, spec.leading_options, long_only=spec.long_only, spans=spec.spans)
    if spec.dialect:
        commands.findings(DIALECTS[spec.dialect](args, parsed), state)
    inputs = bool(parsed.flags & spec.inputs)
    if parsed.flags & spec.stops and not inputs:
        return
    if spec.operands == "first" or name in (".", "source"):
        _piped(commands, args[parsed.operands[0]] if parsed.operands else None, state)
    for found in parsed.values:
        _option(commands, name, spec, args, found, state=state)
    operands = [args[i] for i in parsed.operands]
    if spec.operands == "none":
        return
    if spec.operands == "keyed":
        for operand in operands:
            key, eq, path = (operand.value or "").partition("=")
            if operand.value is None or (eq and key in spec.keys):
                tilde = operand.raw.partition("=")[2].startswith("~")  # bash expands of=~/x
                value = Word(path, path, operand.glob, tilde)
                commands.path(operand if operand.value is None else value, state)
        return
    operands = operands[0 if parsed.flags & spec.supplied_by else spec.skip :]
    if spec.operands == "first" and not inputs:
        operands = operands[:1]
    if name in ("rsync", "scp"):
        operands = [o for o in operands if not re.match(r"[\w.@-]+:", o.value or "")]
    for position, operand in enumerate(operands):
        commands.path(operand, state, written=position == spec.output)
    if xargs_input and spec.operands == "all":
        commands.path(Word(XARGS_INPUT, None), state)


def _option(
    commands: Commands,
    name: str,
    spec: FileCommand,
    args: list[Word],
    found: tuple[str, int, str | None],
    *,
    state: State,
) -> None:
    """An option of a file command with its value: a path checked, or what it runs analyzed."""
    run = commands._string  # pyright: ignore[reportPrivateUsage]
    option, index, attached = found
    value = option_value(args, index, attached)
    span = spec.spans.get(option, 1)
    if option in spec.paths | spec.writes | spec.lists and index + span - 1 < len(args):
        commands.path(args[index + span - 1] if span > 1 else value, state, written=option in spec.writes)
        if option in spec.lists:
            commands.path(_named_in(value), state)
    elif option in spec.code:  # rsync -e 'ssh -p 22' runs 'ssh -p 22 HOST rsync ...'
        hosts = [m[1] for w in args if (m := re.match(r"([\w.@-]+):", w.value or ""))][:1]
        end = "".join(f" {shlex.quote(host)} {name}" for host in hosts)
        run(Word(value.raw + end, None if value.value is None else value.value + end), state.fork())
    elif option in spec.remote_code:  # rsync --rsync-path: run on the other machine
        commands.remote += 1
        run(value, state.fork())
        commands.remote -= 1
    elif option in spec.ssh_options:
        commands.ssh_option(value, state)
    elif option in spec.scripts:  # tar -I CMD, zip -TT CMD, nc -c CMD
        start = spec.scripts[option]
        if start is None:  # ncat --lua-exec FILE: code not followed
            commands.path(value, state)
            run(Word(f"({name} {option} {value.raw})", None), state)
        elif value.value is None or value.value.startswith(start):
            text = None if value.value is None else value.value[len(start) :]
            run(Word(value.raw if text is None else text, text), state.fork())


def _named_in(listing: Word) -> Word:
    """The files a list of them names (``wc --files0-from=F``): only known when it runs."""
    return Word(f"(files named in {listing.raw})", None)


def _piped(commands: Commands, script: Word | None, state: State) -> None:
    """A script operand that is a pipe (``bash <(curl ...)``, ``source /dev/stdin``): its script is
    only known when it runs."""
    if script is not None and (script.raw.startswith("<(") or re.fullmatch(_PIPE, script.value or "")):
        commands._string(Word(f"(script from {script.raw})", None), state)  # pyright: ignore[reportPrivateUsage]


def _old_style(args: list[Word], takes: frozenset[str]) -> list[Word]:
    """tar's old-style options (``tar xIf zstd a.tar``): each letter that takes a value takes the
    next word, in turn (``-x -I zstd -f a.tar``)."""
    out: list[Word] = []
    rest = iter(args[1:])
    for letter in args[0].value or "":
        out.append(Word("-" + letter, "-" + letter))
        if "-" + letter in takes:
            out += list(itertools.islice(rest, 1))
    return [*out, *rest]


def _expression(value: str | None) -> bool:
    return value is not None and (value.startswith("-") or value in ("(", ")", "!", ","))
