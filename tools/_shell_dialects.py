"""Programs' own languages that can run commands: gdb's and lldb's commands, hyperfine's
parameters, vim's Ex commands, socat's addresses.

Each reader takes the program's words and returns a ``Finding`` list, applied by the analysis
(``_shell_commands.Commands.findings``): a ``script`` run by a shell (``gdb -ex 'shell CMD'``,
``vim -c '!CMD'``, ``socat - EXEC:CMD``), a ``path`` it reads or writes (``vim -c 'w FILE'``),
a file of the program's language it runs (``gdb -x FILE``, ``vim -S FILE``: its kind is the
language, read by ``_shell_sources`` with the ``*_file`` readers here), or ``unknown`` code
that may run anything (``gdb -ex 'python ...'``, ``vim -c 'call system(...)'``), which counts
as an outside value named by its text. Readers are conservative: text they do not follow is
unknown, never harmless. sed's and awk's are in ``_shell_sed_awk.py``, sqlite3's in
``_shell_sqlite.py``; ``_shell_files.DIALECTS`` names them for the file commands.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Literal, cast

from ._shell_words import MAX_WORDS, Parsed, Word, option_value

Kind = Literal["script", "path", "unknown", "sed", "awk", "vim", "sqlite", "gdb", "lldb", "psql", "mysql"]
#: A file of a program's own language, read and analyzed (``_shell_sources``): ``sed -f FILE``,
#: ``awk -f FILE``, ``vim -S FILE``, ``sqlite3 -init FILE``, ``gdb -x FILE``, ``lldb -s FILE``.
Source = Literal["sed", "awk", "vim", "sqlite", "gdb", "lldb", "psql", "mysql"]
Finding = tuple[Kind, Word]
#: The text of an ``unknown`` finding of a file's reader: the whole file is not followed.
NOT_FOLLOWED = "not followed"


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


def script(text: str) -> Finding:
    return ("script", Word(text, text))


def unknown(raw: str) -> Finding:
    return ("unknown", Word(raw, None))


def source(kind: Source, path: Word | str) -> Finding:
    """A file of ``kind``'s language the program reads and runs (``-f FILE``, ``source FILE``);
    a word only known at run time is unknown."""
    if isinstance(path, str):
        return (kind, Word(path, path, tilde=path.startswith("~")))
    return (kind, path) if path.value is not None else unknown(path.raw)


def lines(text: str) -> list[tuple[int, str]]:
    """The numbered lines of a script file that are not blank."""
    return [(number, line) for number, line in enumerate(text.splitlines(), 1) if line.strip()]


#: Debuggers: the options giving their own commands, the options giving files of them, the word
#: after which those end, the commands that run a shell (analyzed), read a file of commands, or
#: only run and inspect the program (others run code).
_Debugger = tuple[frozenset[str], frozenset[str], str, re.Pattern[str], re.Pattern[str], re.Pattern[str]]
DEBUGGERS: dict[str, _Debugger] = {
    "gdb": (
        _set("-ex --ex -iex --iex -eval-command --eval-command -init-eval-command --init-eval-command"),
        _set("-x --x -ix --ix -command --command -init-command --init-command"),
        "--args",
        re.compile(r"\s*(?:shell\s|!)(.*)", re.DOTALL),
        re.compile(r"\s*so(?:u|ur|urc|urce)?(?:\s+-[sv])*\s+(\S+)\s*"),
        re.compile(
            r"r|run|start|c|continue|k|kill|q|quit|bt|backtrace|where|bt full|backtrace full|"
            r"thread apply all (bt|backtrace)( full)?|info \w+( \w+)?|"
            r"set (pagination|confirm|width|height|print \w+|logging \w+) \w+|(b|br|break|tbreak) [\w:./-]+"
        ),
    ),
    "lldb": (
        _set("-o --one-line -O --one-line-before-file -k --one-line-on-crash"),
        _set("-s --source -S --source-before-file -K --source-on-crash"),
        "--",
        re.compile(r"\s*(?:platform\s+shell(?:\s+(?:-h|--host))?|shell)\s(.*)", re.DOTALL),
        re.compile(r"\s*command\s+source(?:\s+-[se]\s+\w+|\s+-c)*\s+(\S+)\s*"),
        re.compile(
            r"r|run|c|continue|process (launch|continue|kill)|k|kill|q|quit|bt( all)?|"
            r"thread (backtrace|bt)( all)?|thread list|frame variable( \w+)?|image list|"
            r"(b|br|breakpoint set -[nf]) [\w:./-]+"
        ),
    ),
}


def debugger(name: str, args: Sequence[Word]) -> tuple[list[Finding], bool]:
    """A debugger's own commands given before the program (``gdb -ex CMD``, ``lldb -o CMD``,
    ``--eval-command=CMD``) and files of them (``gdb -x FILE``, ``lldb -s FILE``): a command
    running a shell (``shell CMD``, ``!CMD``, ``platform shell CMD``) is a script, ``source FILE``
    (``command source FILE``) a file read in turn; any other but a few that only run and inspect
    the program (``run``, ``bt``, ``info ...``) can run code (``python``, ``call``, ``print f()``,
    ``script``), unknown. Also True when some command or file runs more than the program."""
    options, files, end = DEBUGGERS[name][:3]
    findings: list[Finding] = []
    runs = False
    for index, item in enumerate(args):
        text = item.value or ""
        if text == end:
            break
        option, eq, attached = text.partition("=")
        if option not in options | files or not (eq or index + 1 < len(args)):
            continue
        value = Word(attached, attached) if eq else args[index + 1]
        if option in files:
            findings.append(source(cast(Source, name), value))
            runs = True
            continue
        found = debugger_command(name, value)
        findings += [found] if found is not None else []
        runs = runs or found is not None
    return findings, runs


#: The init file a debugger reads from the folder it starts in (after ``-cd DIR``), and the options
#: that skip it. gdb reads ``./.gdbinit`` only where its auto-load safe-path allows, lldb
#: ``./.lldbinit`` only with ``target.load-cwd-lldbinit``: both set in the user's own configuration,
#: which is not read here, so the file counts as run.
INIT_FILES = {"gdb": (".gdbinit", _set("-n -nx --n --nx")), "lldb": (".lldbinit", _set("-x --no-lldbinit"))}


def init_file(name: str, args: Sequence[Word]) -> Word | None:
    """The init file the debugger reads from the folder it starts in; None when an option skips it."""
    file, skips = INIT_FILES[name]
    for item in args:
        if item.value in skips:
            return None
        if item.value == DEBUGGERS[name][2]:
            break
    return Word(file, file)


def debugger_command(name: str, command: Word) -> Finding | None:
    """What one of a debugger's commands runs: a script, a file of commands, unknown code, or
    nothing but the program (None)."""
    shell_command, sourcing, inspecting = DEBUGGERS[name][3:]
    text = command.value
    shell = shell_command.match(text or "")
    sourced = sourcing.fullmatch(text or "")
    if shell:
        return script(shell[1])
    if sourced:
        return source(cast(Source, name), sourced[1])
    if text is None or not inspecting.fullmatch(text.strip()):
        return unknown(command.raw)
    return None


def debugger_file(name: str, text: str) -> list[Finding]:
    """The commands of a debugger's command file (``gdb -x FILE``, a ``.gdbinit``), one a line;
    ``#`` starts a comment."""
    found = [
        (number, debugger_command(name, Word(line, line)))
        for number, line in lines(text)
        if not line.lstrip().startswith("#")
    ]
    return [numbered(number, finding) for number, finding in found if finding is not None]


def numbered(number: int, finding: Finding) -> Finding:
    """An unknown command of a file, named by its line number and text (``3: python ...``)."""
    kind, item = finding
    return unknown(f"{number}: {item.raw.strip()}") if kind == "unknown" else finding


#: hyperfine's parameters: ``-L NAME V1,V2`` (a list) and ``-P NAME MIN MAX`` (a range, by
#: ``-D STEP``), whose ``{NAME}`` is replaced in each command.
PARAMETER_LISTS = _set("-L --parameter-list")
PARAMETER_SCANS = _set("-P --parameter-scan")


def parameters(args: Sequence[Word], parsed: Parsed) -> dict[str, list[str]] | None:
    """The values of hyperfine's parameters, by name; None when some are not known (a value only
    known at run time, a range not of whole numbers or longer than ``MAX_WORDS``)."""
    found: dict[str, list[str]] = {}
    step = next(
        (option_value(args, i, a).value for o, i, a in parsed.values if o in ("-D", "--parameter-step-size")),
        "1",
    )
    for option, index, attached in parsed.values:
        if option not in PARAMETER_LISTS | PARAMETER_SCANS:
            continue
        count = 2 if option in PARAMETER_LISTS else 3
        words = [option_value(args, index, attached), *args[index + 1 : index + count]]
        items = [w.value for w in words]
        if len(items) < count or None in items:
            return None
        name, *rest = [item or "" for item in items]
        if option in PARAMETER_LISTS:
            found[name] = rest[0].split(",")
            continue
        if not all(re.fullmatch(r"-?\d+", v) for v in [*rest, step or ""]) or int(step or 0) <= 0:
            return None
        low, high = int(rest[0]), int(rest[1])
        if (high - low) // int(step or 1) >= MAX_WORDS:
            return None
        found[name] = [str(n) for n in range(low, high + 1, int(step or 1))]
    return found


def substituted(text: str, values: dict[str, list[str]]) -> list[str] | None:
    """``text`` once per combination of the parameters it names (``{NAME}``), each replaced by a
    value; None beyond ``MAX_WORDS`` combinations."""
    names = [name for name in values if "{" + name + "}" in text]
    runs = list(itertools.islice(itertools.product(*(values[n] for n in names)), MAX_WORDS + 1))
    if len(runs) > MAX_WORDS:
        return None
    out: list[str] = []
    for run in runs:
        item = text
        for name, value in zip(names, run, strict=True):
            item = item.replace("{" + name + "}", value)
        out.append(item)
    return out


# -- vim's Ex commands (-c CMD, --cmd CMD, +CMD) -----------------------------------------------------
_VIM_SPECIAL = re.compile(r"[%#!<`]")  # replaced by vim in a :! command or a file name
_VIM_SHELL = re.compile(
    r"(?:sil(?:e|en|ent)?!?\s*)?!(.*)|(?:r|re|rea|read)\s*!(.*)|w(?:r|ri|rit|rite)?\s+!(.*)", re.S
)
_VIM_SOURCE = re.compile(r"so(?:u|ur|urc|urce)?\s+(\S+)\s*")
_VIM_FILE = re.compile(
    r"(?:w|wr|wri|writ|write|wq|x|xi|xit|sav|savea|saveas|r|re|rea|read|e|ed|edi|edit|sp|split|vs|vsplit|tabe|tabedit|new|vne|vnew)!?\s+(\S+)\s*"
)
_VIM_OPTIONS = (
    r"(no|inv)?(nu|number|rnu|relativenumber|paste|list|wrap|ic|ignorecase|scs|smartcase|hls|hlsearch|is|incsearch|"
    r"et|expandtab|bin|binary|ro|readonly|ml|modeline|spell|cul|cursorline|ai|autoindent|si|smartindent)!?|"
    r"(ts|tabstop|sw|shiftwidth|sts|softtabstop|tw|textwidth|so|scrolloff|ul|undolevels)=\d+|"
    r"(ft|filetype|syn|syntax|ff|fileformat|fenc|fileencoding|enc|encoding|bg|background)=[\w-]+"
)
_VIM_SAFE = re.compile(
    r"\d+|\$|[/?].*|q|qa|qall|quit|quita|quitall|wq|wqa|wqall|x|xa|xall|xit|w|wa|wall|write|up|update|e|edit|"
    r"(q|qa|qall|quit|quitall|wq|wqa|x|xa|w|wa|e|edit)!|noh|nohlsearch|redraw!?|retab!?|%retab!?|sort!?|"
    rf"se?t?l?(ocal)?\s+(({_VIM_OPTIONS})\s*)+|syn(tax)?\s+(on|off|enable)|filet(ype)?(\s+(on|off|plugin|indent))*|"
    r"colo(rscheme)?\s+[\w-]+|(%|\d+(,\d+)?)?s(ubstitute)?/([^/\\]|\\[^=])*/([^/\\]|\\[^=])*/[gciInp&#lr]*|"
    r"g(lobal)?!?/([^/\\]|\\.)*/d(elete)?|v(global)?/([^/\\]|\\.)*/d(elete)?"
)


def vim(args: Sequence[Word], parsed: Parsed) -> list[Finding]:
    """vim's and nvim's commands given on the command line: ``-c CMD``, ``--cmd CMD`` and ``+CMD``,
    and the files of them it sources: ``-S FILE`` and ``-u FILE`` (not ``NONE``, ``NORC``,
    ``DEFAULTS``), read as ``vim_file``. ``-s FILE`` (typed keys), ``-l SCRIPT`` (nvim's Lua)
    and ``--remote-send``/``--remote-expr`` are unknown."""
    commands = [option_value(args, i, a) for o, i, a in parsed.values if o in ("-c", "--cmd")]
    pluses = [args[i].value or "" for i in parsed.operands if (args[i].value or "")[:1] == "+"]
    commands += [Word(value, value[1:]) for value in pluses]
    findings: list[Finding] = []
    for option, index, attached in parsed.values:
        value = option_value(args, index, attached)
        if option in ("-s", "-l", "--remote-send", "--remote-expr"):
            findings.append(unknown(f"(vim {option} {value.raw})"))
        elif option in ("-S", "-u") and value.value not in ("NONE", "NORC", "DEFAULTS"):
            findings.append(source("vim", value))
    return findings + [f for f in map(vim_command, commands) if f is not None]


def vim_command(command: Word) -> Finding | None:
    """One Ex command: a shell command (``!CMD``, ``:silent !CMD``, ``:r !CMD``, ``:w !CMD``) is a
    script, unknown when it has what vim replaces (``%``, ``#``, ``!``); a file written or read
    (``:w FILE``) a path, a file sourced (``:so FILE``) read in turn; a few commands that only
    edit, move or set display options are harmless (None); any other can run anything (``:call
    system()``, ``:lua``, ``:normal``) and is unknown."""
    text = (command.value or "").lstrip(": \t")
    shell = _VIM_SHELL.fullmatch(text) if command.value is not None else None
    written = _VIM_FILE.fullmatch(text) if command.value is not None else None
    sourced = _VIM_SOURCE.fullmatch(text) if command.value is not None else None
    if shell:
        line = next(group for group in shell.groups() if group is not None)
        return unknown(command.raw) if _VIM_SPECIAL.search(line) else script(line)
    named = written or sourced
    if named and not re.search(r"[%#`$]", named[1]):
        return ("vim" if sourced else "path", Word(named[1], named[1], tilde=named[1].startswith("~")))
    if command.value is None or not _VIM_SAFE.fullmatch(text.strip()):
        return unknown(command.raw)
    return None


def vim_file(text: str) -> list[Finding]:
    """The Ex commands of a vim script (``-S FILE``, ``:source FILE``), one a line: a line
    starting with ``\\`` continues the one before, one with ``"`` is a comment."""
    joined: list[tuple[int, str]] = []
    for number, line in lines(text):
        stripped = line.lstrip()
        if stripped.startswith("\\") and joined:
            joined[-1] = (joined[-1][0], joined[-1][1] + stripped[1:])
        elif not stripped.startswith('"'):
            joined.append((number, line))
    found = [(number, vim_command(Word(line, line))) for number, line in joined]
    return [numbered(number, finding) for number, finding in found if finding is not None]


# -- socat's addresses -------------------------------------------------------------------------------
_SOCAT_SCRIPTS = _set("exec system shell")
_SOCAT_FILES = _set("open create gopen pipe unix-connect unix-listen unix-sendto unix-recv unix-client unix")
_SOCAT_OPTIONS = re.compile(r"(,(?!path=)[\w-]+(=[\w.:/@+-]*)?)*", re.I)


def socat(args: Sequence[Word], parsed: Parsed) -> list[Finding]:
    """socat's two addresses (``!!`` joins a reading and a writing one): ``EXEC:CMD``,
    ``SYSTEM:SCRIPT`` and ``SHELL:SCRIPT`` run a command here, analyzed up to the first ``,`` when
    what follows are plain options (otherwise, or with quoting socat reads itself, unknown);
    ``OPEN:FILE``, ``CREATE:FILE``, ``GOPEN:FILE``, ``UNIX-CONNECT:FILE``, ... and a bare
    ``/PATH`` or ``./PATH`` name paths."""
    findings: list[Finding] = []
    for word in (args[i] for i in parsed.operands):
        if word.value is None:
            findings.append(unknown(word.raw))
            continue
        for address in word.value.split("!!"):
            kind, colon, rest = address.partition(":")
            body, comma, options = rest.partition(",")
            if not colon and re.match(r"\.{0,2}/", address):
                kind, body = "gopen", address.partition(",")[0]
            if kind.lower() in _SOCAT_SCRIPTS:
                plain = _SOCAT_OPTIONS.fullmatch(comma + options) and not re.search(r"[\"'\\({\[]", body)
                findings.append(script(body) if plain else unknown(word.raw))
            elif kind.lower() in _SOCAT_FILES or (not colon and kind == "gopen"):
                findings.append(("path", Word(body, body, tilde=body.startswith("~"))))
    return findings
