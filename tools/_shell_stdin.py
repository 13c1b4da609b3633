"""Programs that read their program from stdin when the command line feeds it one.

``sqlite3 DB``, ``gdb PROG`` (not ``-batch``), ``lldb``, ``vim -es``/``ex``, ``psql`` and
``mysql`` read their own commands from stdin, and interpreters (``python3``, ``python3 -``,
``node``, ``perl``, ...) and programs with shell escapes (``ed``, ``ftp``, ``sftp``, vim typing
keys) read code the analysis does not follow. The bash tool gives a command /dev/null as stdin, so such a
program only reads what the command line itself feeds it (``State.fed``: a pipe, ``< FILE``, a
heredoc): ``reads_stdin`` tells which language a program would read there, and
``_shell_commands.Commands`` reads a literal heredoc or a ``< FILE`` as a script file of that
language (``_shell_sources``), anything else as unknown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ._shell_words import parse_options


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


@dataclass(frozen=True)
class Reader:
    #: The language it reads (``_shell_sources.READERS``); "": code that is not followed.
    kind: str = ""
    #: Its options that take a value.
    values: frozenset[str] = frozenset()
    #: Options after which its program is not read from stdin (``python -c``, ``gdb -batch``).
    stops: frozenset[str] = frozenset()
    #: Operands before its program (``sqlite3 DB``), which is then stdin only when missing or
    #: ``-``; None: it reads stdin whatever its operands (``gdb PROG``).
    operands: int | None = 0
    #: Every option after one dash is a whole word (``gdb -batch``).
    long_only: bool = False


_VERSION = _set("--version --help -h -V -v")
_PYTHON = Reader(values=_set("-W -X --check-hash-based-pycs"), stops=_set("-c -m") | _VERSION)
_VIM = Reader(
    "vim",
    _set("-c --cmd -T -t -q -r -V -S -u -U -i -w -W --listen --servername --startuptime -l"),
    _set("--version --help -h --remote-send --remote-expr"),
    operands=None,
)

STDIN_READERS: dict[str, Reader] = {
    **dict.fromkeys(_set("python python3 pypy3"), _PYTHON),
    **dict.fromkeys(
        _set("node nodejs"),
        Reader(values=_set("-r --require --import"), stops=_set("-e -p --eval --print") | _VERSION),
    ),
    "perl": Reader(values=_set("-I -M -m"), stops=_set("-e -E") | _VERSION),
    "ruby": Reader(values=_set("-I -r -E -C"), stops=_set("-e") | _VERSION),
    "php": Reader(values=_set("-d -c -z"), stops=_set("-r -f -l -i -m") | _VERSION),
    **dict.fromkeys(_set("lua tclsh wish Rscript"), Reader(values=_set("-l"), stops=_set("-e") | _VERSION)),
    "sqlite3": Reader(
        "sqlite",
        _set("-cmd --cmd -separator --separator -newline --newline -nullvalue --nullvalue -vfs --vfs -init")
        | _set("--init -maxsize --maxsize -mmap --mmap -pagecache -lookaside -heap -escape --escape"),
        _set("-version --version -help --help -safe --safe"),
        operands=1,
        long_only=True,
    ),
    "gdb": Reader(
        "gdb",
        _set("-ex --ex -iex --iex -x --x -ix --ix -p --p -pid --pid -cd --cd -d --d -s --s -e --e -c --c")
        | _set("-tty --tty -b --b -l --l -D --D -data-directory --data-directory -se --se"),
        _set("-batch --batch -batch-silent --batch-silent -version --version -help --help -configuration"),
        operands=None,
        long_only=True,
    ),
    "lldb": Reader(
        "lldb",
        _set("-o -O -k -s -S -K -a -p -n -l -R -f -c -P --one-line --source --file --core --arch"),
        _set("-b --batch -v --version -h --help -P --print-script-interpreter-info"),
        operands=None,
    ),
    **dict.fromkeys(_set("vim vi nvim view gvim vimdiff ex"), _VIM),
    **dict.fromkeys(_set("ed red"), Reader(values=_set("-p --prompt"), stops=_VERSION, operands=None)),
    "psql": Reader(
        "psql",
        values=_set("-d -h -p -U -v --set -P -o -L -F -R -T --dbname --host --port --username"),
        stops=_set("-c -f --command --file -l --list") | _VERSION,
        operands=None,
    ),
    **dict.fromkeys(
        _set("mysql mariadb"),
        Reader(
            "mysql",
            values=_set("-D -h -P -u -p -S --database --host --port --user --socket"),
            stops=_set("-e --execute") | _VERSION,
            operands=None,
        ),
    ),
    **dict.fromkeys(
        _set("ftp sftp"),
        Reader(
            values=_set("-P -o -i -F -c -J -l -R -s -S -D -B"), stops=_set("-b") | _VERSION, operands=None
        ),
    ),
}


def reads_stdin(name: str, values: Sequence[str | None]) -> str | None:
    """The language ``name`` reads its program in from stdin, given its arguments ``values`` (""
    for code not followed), or None when it takes its program from elsewhere."""
    spec = STDIN_READERS.get(name)
    if spec is None:
        return None
    parsed = parse_options(list(values), spec.values, long_only=spec.long_only)
    if parsed.flags & spec.stops:
        return None
    operands = [values[i] for i in parsed.operands]
    if spec.operands is not None and len(operands) > spec.operands and operands[spec.operands] != "-":
        return None
    if spec is _VIM:  # Ex mode reads Ex commands; otherwise keys are typed, and `vim -` reads text
        if "-" in operands:
            return None
        ex = name == "ex" or any(v in ("-e", "-E", "-es", "-Es") for v in values)
        return "vim" if ex else ""
    return spec.kind
