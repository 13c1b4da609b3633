"""Commands that read or change the paths among their arguments: ``rm``, ``cp``, ``cat``, ``tar``, ...

A ``FileCommand`` names which of its options and operands are paths (``tar -f FILE``, ``grep
PATTERN FILE...``, ``dd of=FILE``), checked against the workspace (``file_paths``, for
``_shell_commands``); some of their options run a program (``rsync -e CMD``) or a script. ``find``
reads ``find``'s start points, the files it writes and the commands it runs. Options are read by
``_shell_words.parse_options``.
"""

from __future__ import annotations

import itertools
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from ._shell_dbclients import mysql, psql
from ._shell_dialects import Finding, socat, vim
from ._shell_paths import State
from ._shell_sed_awk import awk, sed
from ._shell_sqlite import sqlite
from ._shell_words import Parsed, Word, option_value, parse_options

if TYPE_CHECKING:
    from ._shell_commands import Commands

XARGS_INPUT = "(xargs input)"
_PIPE = re.compile(r"/dev/stdin|/dev/fd/\d+|/proc/(self|\d+)/fd/\d+")


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


Operands = Literal["all", "first", "keyed", "none"]


@dataclass(frozen=True)
class FileCommand:
    #: Options followed by a value that is not a path.
    values: frozenset[str] = frozenset()
    #: Options followed by a path.
    paths: frozenset[str] = frozenset()
    #: Which operands are paths: all, the first (an interpreter's script), ``key=PATH`` (dd), none.
    operands: Operands = "all"
    #: Leading operands that are not paths (``grep PATTERN``, ``chmod MODE``, ``sed SCRIPT``)...
    skip: int = 0
    #: ...unless one of these options supplied them (``grep -e PATTERN``, ``sed -e SCRIPT``).
    supplied_by: frozenset[str] = frozenset()
    #: Options after which no operand is a path (``python -c CODE``, ``node -e CODE``)...
    stops: frozenset[str] = frozenset()
    #: ...unless one of these made every operand a file to read or edit (``perl -pi -e CODE F``).
    inputs: frozenset[str] = frozenset()
    #: Options are only read before the first operand (``git -C DIR log``).
    leading_options: bool = False
    #: ``key=PATH`` operands that are paths, for ``operands="keyed"``.
    keys: frozenset[str] = field(default_factory=frozenset[str])
    #: Options whose value is a command line it runs (``rsync -e CMD``, ``scp -S PROGRAM``)...
    code: frozenset[str] = frozenset()
    #: ...or runs on the other machine (``rsync --rsync-path CMD``), or an ssh option (``scp -o``).
    remote_code: frozenset[str] = frozenset()
    ssh_options: frozenset[str] = frozenset()
    #: Options whose value is a script it runs here with ``sh -c``, after the text given
    #: (``tar --checkpoint-action=exec=CMD``: ``exec=``); None: a file of code it runs, unknown
    #: (``ncat --lua-exec FILE``).
    scripts: Mapping[str, str | None] = field(default_factory=dict[str, str | None])
    #: The reader of its own language that can run commands or name files (``DIALECTS``: sed's
    #: ``e`` and ``w``, awk's ``system()``, vim's ``-c '!CMD'``, sqlite3's ``.shell``, socat's
    #: ``EXEC:``).
    dialect: str = ""
    #: Every option after one dash is a whole word (``sqlite3 -cmd CMD``).
    long_only: bool = False


_PLAIN = FileCommand()
_GREP = FileCommand(
    _set("-m -A -B -C -d -D --max-count --context --after-context --before-context --color --label")
    | _set("-g -t -T -j -M -E --glob --type --type-not --threads --max-columns --engine --sort"),
    _set("-f --file"),
    skip=1,
    supplied_by=_set("-e -f --regexp --file"),
)
_INTERPRETER = FileCommand(
    _set("-W -X -O --check-hash-based-pycs -r --require --import"),
    operands="first",
    stops=_set("-c -m -e -p -E --eval --print --command"),
)
#: perl and ruby: ``-n``/``-p`` read every operand as input, ``-i`` edits them in place.
_PERL = FileCommand(_set("-e -E -I"), operands="first", stops=_set("-e -E"), inputs=_set("-n -p -i"))
_RUBY = FileCommand(
    _set("-e -I -r -E -F --encoding"), _set("-C"), "first", stops=_set("-e"), inputs=_set("-n -p -i")
)
_OWNER = FileCommand(_set("--from"), _set("--reference"), skip=1, supplied_by=_set("--reference"))
_COPY = FileCommand(_set("-S --suffix -m --mode -o --owner -g --group"), _set("-t --target-directory"))

#: tar's options whose value it runs with ``sh -c``: a compressor, a command fed each file, a
#: script between volumes, the remote shell.
_TAR_SCRIPTS = _set(
    "-I --use-compress-program --to-command -F --info-script --new-volume-script --rsh-command"
)
#: netcat: ``-e PROGRAM`` runs it, ``-c CMD`` a script (traditional netcat; ncat: ``--exec``,
#: ``--sh-exec``, and ``--lua-exec FILE``, Lua code).
_NETCAT = FileCommand(
    _set("-g -G -i -p -q -s -w -I -M -m -O -P -T -V -X -x"),
    _set("-o"),
    "none",
    scripts=dict.fromkeys(_set("-e -c"), ""),
)
_NCAT = FileCommand(
    _set("-g -G -i -p -s -w -m -d --proxy --proxy-type --proxy-auth --proxy-dns --max-conns --delay")
    | _set("--idle-timeout --wait --source-port --source --allow --deny --ssl-ciphers --ssl-servername"),
    _set("-o -x --output --hex-dump --allowfile --denyfile --ssl-cert --ssl-key --ssl-trustfile"),
    "none",
    scripts=dict.fromkeys(_set("-e -c --exec --sh-exec"), "") | {"--lua-exec": None},
)

#: vim and nvim: ``-c CMD``, ``--cmd CMD`` and ``+CMD`` are Ex commands, ``-S FILE`` and ``-u FILE``
#: files of them (read by the dialect's reader, which checks their paths).
_VIM = FileCommand(
    _set("-c --cmd -T -t -q -r -V --listen --servername --remote-send --remote-expr -l -S -u"),
    _set("-U -i -w -W -s --startuptime"),
    dialect="vim",
)
#: vim in Ex mode (``ex``, ``vim -e``, ``-es``): ``-s`` is silent mode there, not keys to type, so
#: ``vim -es -c '!CMD' FILE`` runs ``CMD`` on ``FILE``.
_EX = FileCommand(_VIM.values, _VIM.paths - {"-s"}, dialect="vim")
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

FILE_COMMANDS: dict[str, FileCommand] = {
    **dict.fromkeys(
        _set(
            "rm rmdir mkdir touch cat tac less more unlink shred stat file wc du ls ll nl od xxd sudoedit "
            "hexdump strings readlink realpath md5sum sha1sum sha256sum sha512sum cksum tee "
            "diff cmp source . nano emacs code open xdg-open"
        ),
        _PLAIN,
    ),
    "head": FileCommand(_set("-n -c --lines --bytes")),
    "tail": FileCommand(_set("-n -c --lines --bytes -s --sleep-interval --pid")),
    "sort": FileCommand(_set("-k -t -S -T --key --field-separator --buffer-size"), _set("-o --output")),
    "uniq": FileCommand(_set("-f -s -w")),
    "cut": FileCommand(_set("-b -c -d -f --bytes --characters --delimiter --fields")),
    "cp": _COPY,
    "mv": _COPY,
    "install": _COPY,
    "ln": _COPY,
    "rsync": FileCommand(
        _set("-e --rsh --exclude --include --filter --chmod --chown -f --rsync-path"),
        _set("--log-file"),
        code=_set("-e --rsh"),
        remote_code=_set("--rsync-path"),
    ),
    "scp": FileCommand(
        _set("-P -c -l -J -o -S -D"), _set("-i -F"), code=_set("-S -D"), ssh_options=_set("-o")
    ),
    "sftp": FileCommand(
        _set("-B -c -J -l -P -R -s -o -S -D"),
        _set("-i -F -b"),
        "none",
        code=_set("-S -D"),
        ssh_options=_set("-o"),
    ),
    "chmod": FileCommand(_set(""), _set("--reference"), skip=1, supplied_by=_set("--reference")),
    "chown": _OWNER,
    "chgrp": _OWNER,
    "truncate": FileCommand(_set("-s --size"), _set("-r --reference")),
    "dd": FileCommand(operands="keyed", keys=_set("if of")),
    "tar": FileCommand(
        _set("-b -H -K -N -V --format --exclude --transform --blocking-factor --owner --group")
        | _set("--checkpoint --rmt-command -L --tape-length"),
        _set("-f -C -T -X --file --directory --files-from --exclude-from -g --listed-incremental"),
        scripts=dict.fromkeys(_TAR_SCRIPTS, "") | {"--checkpoint-action": "exec="},
    ),
    "unzip": FileCommand(_set("-x -P"), _set("-d"), operands="first"),
    "zip": FileCommand(_set("-x -i -P -n -t -tt"), scripts=dict.fromkeys(_set("-TT --unzip-command"), "")),
    **dict.fromkeys(_set("nc netcat"), _NETCAT),
    "ncat": _NCAT,
    "gzip": _PLAIN,
    "gunzip": _PLAIN,
    "sed": FileCommand(
        _set("-l --line-length -e --expression -f --file"),
        skip=1,
        supplied_by=_set("-e -f --expression --file"),
        dialect="sed",
    ),
    **dict.fromkeys(
        _set("awk gawk mawk nawk"),
        FileCommand(
            _set("-F -v --assign --field-separator -e --source -l --load -f --file -i --include -E --exec"),
            skip=1,
            supplied_by=_set("-f --file -e --source -E --exec"),
            dialect="awk",
        ),
    ),
    **dict.fromkeys(_set("vim vi nvim view gvim vimdiff ex"), _VIM),
    "sqlite3": FileCommand(
        _set("-cmd --cmd -separator --separator -newline --newline -nullvalue --nullvalue -vfs --vfs")
        | _set("-maxsize --maxsize -mmap --mmap -pagecache -lookaside -heap -escape --escape -init --init"),
        operands="first",
        dialect="sqlite",
        long_only=True,
    ),
    "psql": FileCommand(
        _set("-c --command -f --file -o --output -L --log-file -d -h -p -U -v --set -P --pset -F -R -T")
        | _set("--dbname --host --port --username --variable --field-separator --record-separator"),
        operands="none",
        dialect="psql",
    ),
    **dict.fromkeys(
        _set("mysql mariadb"),
        FileCommand(
            _set("-e --execute -D -h -P -u -S --socket --database --host --port --user --init-command")
            | _set("--pager --defaults-file --defaults-extra-file"),
            operands="none",
            dialect="mysql",
        ),
    ),
    "socat": FileCommand(_set("-b -t -T -lp -lh"), _set("-L -W -lf"), "none", dialect="socat"),
    "grep": _GREP,
    "egrep": _GREP,
    "fgrep": _GREP,
    "rg": _GREP,
    "find": FileCommand(),  # handled by the analysis itself (start points, -exec, -fprint)
    "git": FileCommand(
        _set("-c --namespace"), _set("-C --git-dir --work-tree --exec-path"), "none", leading_options=True
    ),
    "make": FileCommand(_set("-j -l -o -W --jobs"), _set("-C -f --directory --file --makefile"), "none"),
    "curl": FileCommand(
        _set("-d -H -X -u -A -e -m -w --data --header --request --user"),
        _set("-o -K -T -c -b --output --config --upload-file --cookie-jar --output-dir"),
        "none",
    ),
    "wget": FileCommand(
        _set("-U -t -T --user-agent --tries --timeout"),
        _set("-O -P -o -a --output-document --directory-prefix --output-file"),
        "none",
    ),
    **dict.fromkeys(_set("python python3 node bash sh zsh dash deno bun tsx ts-node"), _INTERPRETER),
    "perl": _PERL,
    "ruby": _RUBY,
}


def file_command(name: str, values: Sequence[str | None]) -> FileCommand:
    """The ``FileCommand`` of ``name`` given ``values``: vim reads ``-s`` as silent mode as ``ex``
    or after ``-e``/``-E`` (``-es``), otherwise as ``-s FILE``, keys to type."""
    spec = FILE_COMMANDS[name]
    for value in (values if name != "ex" else ["-e"]) if spec is _VIM else ():
        if value in ("-e", "-E", "-es", "-Es"):
            return _EX
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
            index += 1
        index += 1


def file_paths(
    commands: Commands, name: str, spec: FileCommand, args: list[Word], state: State, *, xargs_input: bool
) -> None:
    """The paths a file command names, checked, and what its options run (``rsync -e CMD``)."""
    run = commands._string  # pyright: ignore[reportPrivateUsage]
    takes = spec.values | spec.paths | spec.scripts.keys()
    if name == "tar" and args and (args[0].value or "-")[0] != "-" and (args[0].value or "").isalpha():
        args = _old_style(args, takes)
    values = [w.value for w in args]
    parsed = parse_options(values, takes, spec.leading_options, long_only=spec.long_only)
    if spec.dialect:
        commands.findings(DIALECTS[spec.dialect](args, parsed), state)
    inputs = bool(parsed.flags & spec.inputs)
    if parsed.flags & spec.stops and not inputs:
        return
    if spec.operands == "first" or name in (".", "source"):
        _piped(commands, args[parsed.operands[0]] if parsed.operands else None, state)
    for option, index, attached in parsed.values:
        value = option_value(args, index, attached)
        if option in spec.paths:
            commands.path(value, state)
        elif option in spec.code:  # rsync -e 'ssh -p 22' runs 'ssh -p 22 HOST rsync ...'
            hosts = [m[1] for v in values if (m := re.match(r"([\w.@-]+):", v or ""))][:1]
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
    for operand in operands:
        commands.path(operand, state)
    if xargs_input and spec.operands == "all":
        commands.path(Word(XARGS_INPUT, None), state)


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
