"""Programs' own languages that can run commands: gdb's and lldb's commands, hyperfine's
parameters, vim's Ex commands, sqlite3's dot commands and SQL, socat's addresses.

Each reader takes the program's words and returns a ``Finding`` list, applied by the analysis
(``_shell_commands.Commands.findings``): a ``script`` run by a shell (``gdb -ex 'shell CMD'``,
``vim -c '!CMD'``, ``sqlite3 DB '.shell CMD'``, ``socat - EXEC:CMD``), a ``path`` it reads or
writes (``vim -c 'w FILE'``), or ``unknown`` code that may run anything (``gdb -ex 'python
...'``, ``vim -c 'call system(...)'``), which counts as an outside value named by its text.
Readers are conservative: text they do not follow is unknown, never harmless. sed's and awk's
are in ``_shell_sed_awk.py``; ``_shell_files.DIALECTS`` names them for the file commands.
"""

from __future__ import annotations

import itertools
import re
import shlex
from collections.abc import Sequence
from typing import Literal

from ._shell_words import MAX_WORDS, Parsed, Word, option_value

Kind = Literal["script", "path", "unknown"]
Finding = tuple[Kind, Word]


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


def script(text: str) -> Finding:
    return ("script", Word(text, text))


def unknown(raw: str) -> Finding:
    return ("unknown", Word(raw, None))


#: Debuggers: the options giving their own commands, the word after which those end, and the
#: commands that run a shell (analyzed) or only run and inspect the program (others run code).
DEBUGGERS: dict[str, tuple[frozenset[str], str, re.Pattern[str], re.Pattern[str]]] = {
    "gdb": (
        _set("-ex --ex -iex --iex -eval-command --eval-command -init-eval-command --init-eval-command"),
        "--args",
        re.compile(r"\s*(?:shell\s|!)(.*)", re.DOTALL),
        re.compile(
            r"r|run|start|c|continue|k|kill|q|quit|bt|backtrace|where|bt full|backtrace full|"
            r"thread apply all (bt|backtrace)( full)?|info \w+( \w+)?|"
            r"set (pagination|confirm|width|height|print \w+|logging \w+) \w+|(b|br|break|tbreak) [\w:./-]+"
        ),
    ),
    "lldb": (
        _set("-o --one-line -O --one-line-before-file -k --one-line-on-crash"),
        "--",
        re.compile(r"\s*(?:platform\s+shell(?:\s+(?:-h|--host))?|shell)\s(.*)", re.DOTALL),
        re.compile(
            r"r|run|c|continue|process (launch|continue|kill)|k|kill|q|quit|bt( all)?|"
            r"thread (backtrace|bt)( all)?|thread list|frame variable( \w+)?|image list|"
            r"(b|br|breakpoint set -[nf]) [\w:./-]+"
        ),
    ),
}


def debugger(name: str, args: Sequence[Word]) -> tuple[list[Finding], bool]:
    """A debugger's own commands given before the program (``gdb -ex CMD``, ``lldb -o CMD``,
    ``--eval-command=CMD``): those running a shell (``shell CMD``, ``!CMD``, ``platform shell
    CMD``) are scripts; any other but a few that only run and inspect the program (``run``,
    ``bt``, ``info ...``) can run code (``python``, ``call``, ``print f()``, ``script``), unknown.
    Also True when some command runs more than the program."""
    options, end, shell_command, inspecting = DEBUGGERS[name]
    findings: list[Finding] = []
    runs = False
    for index, item in enumerate(args):
        text = item.value or ""
        if text == end:
            break
        option, eq, attached = text.partition("=")
        if option not in options or not (eq or index + 1 < len(args)):
            continue
        command = Word(attached, attached) if eq else args[index + 1]
        shell = shell_command.match(command.value or "")
        if shell:
            findings.append(script(shell[1]))
        elif command.value is None or not inspecting.fullmatch(command.value.strip()):
            findings.append(unknown(command.raw))
        runs = runs or not inspecting.fullmatch((command.value or "").strip())
    return findings, runs


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
    """vim's and nvim's commands given on the command line: ``-c CMD``, ``--cmd CMD`` and ``+CMD``.
    A shell command (``!CMD``, ``:silent !CMD``, ``:r !CMD``, ``:w !CMD``) is a script, unknown
    when it has what vim replaces (``%``, ``#``, ``!``); a file written or read (``:w FILE``) a path;
    a few commands that only edit, move or set display options are harmless; any other can run
    anything (``:call system()``, ``:lua``, ``:normal``, ``:source``) and is unknown. ``-s FILE``
    (typed keys), ``-l SCRIPT`` (nvim's Lua) and ``--remote-send``/``--remote-expr`` are unknown."""
    commands = [option_value(args, i, a) for o, i, a in parsed.values if o in ("-c", "--cmd")]
    pluses = [args[i].value or "" for i in parsed.operands if (args[i].value or "")[:1] == "+"]
    commands += [Word(value, value[1:]) for value in pluses]
    findings: list[Finding] = []
    for option, index, attached in parsed.values:
        if option in ("-s", "-l", "--remote-send", "--remote-expr"):
            findings.append(unknown(f"(vim {option} {option_value(args, index, attached).raw})"))
    for command in commands:
        text = (command.value or "").lstrip(": \t")
        shell = _VIM_SHELL.fullmatch(text) if command.value is not None else None
        written = _VIM_FILE.fullmatch(text) if command.value is not None else None
        if shell:
            line = next(group for group in shell.groups() if group is not None)
            findings.append(unknown(command.raw) if _VIM_SPECIAL.search(line) else script(line))
        elif written and not re.search(r"[%#`$]", written[1]):
            findings.append(("path", Word(written[1], written[1], tilde=written[1].startswith("~"))))
        elif command.value is None or not _VIM_SAFE.fullmatch(text.strip()):
            findings.append(unknown(command.raw))
    return findings


# -- sqlite3's dot commands and SQL ------------------------------------------------------------------
#: Dot commands by what their last word is: a file (``|CMD`` a script), or harmless.
_SQLITE_FILES = _set("output once log read import open backup save restore clone trace cd")
_SQLITE_HARMLESS = _set(
    "tables schema mode headers header dump indexes indices show help quit exit timer width nullvalue "
    "separator bail echo explain eqp print prompt stats changes databases dbinfo fullschema lint "
    "parameter timeout limit dbconfig scanstats vfsinfo vfslist vfsname sha3sum recover expert"
)
_SQL_RISKY = re.compile(
    r"\b(load_extension|writefile|readfile|edit|fts3_tokenizer|lsdir)\s*\(|\battach\b|\bvacuum\b[^;]*\binto\b",
    re.I,
)


def sqlite(args: Sequence[Word], parsed: Parsed) -> list[Finding]:
    """sqlite3's dot commands and SQL given as arguments (after the database) or with ``-cmd``:
    ``.shell CMD`` and ``.system CMD`` are scripts, and so is ``|CMD`` for ``.output``, ``.once``,
    ``.read`` or ``.import``; the files other dot commands write or read are paths; ``.load``, a
    dot command not known, and SQL that loads code or touches files (``load_extension()``,
    ``writefile()``, ``edit()``, ``ATTACH``, ``VACUUM INTO``) are unknown. Nothing under ``-safe``."""
    if parsed.flags & {"-safe", "--safe"}:
        return []
    texts = [option_value(args, i, a) for o, i, a in parsed.values if o in ("-cmd", "--cmd")]
    texts += [args[i] for i in parsed.operands[1:]]
    findings: list[Finding] = []
    for text in texts:
        if text.value is None:
            findings.append(unknown(text.raw))
        elif text.value.lstrip().startswith("."):
            findings += _dot_command(text)
        elif _SQL_RISKY.search(text.value):
            findings.append(unknown(text.raw))
    return findings


def _dot_command(text: Word) -> list[Finding]:
    try:
        words = shlex.split((text.value or "").lstrip()[1:])
    except ValueError:
        return [unknown(text.raw)]
    name, rest = (words[0], words[1:]) if words else ("", [])
    if name in ("shell", "system"):
        return [script(" ".join(rest))]
    files = [w for w in rest if not w.startswith("-")]
    if name in _SQLITE_FILES and not {"-e", "-x"} & set(rest):
        if files and files[-1].startswith("|"):
            return [script(files[-1][1:])]
        target = files[-1] if files and name != "import" else files[0] if files else None
        if target is None or target in ("stdout", "stderr", "off", "on"):
            return []
        return [("path", Word(target, target, tilde=target.startswith("~")))]
    return [] if name in _SQLITE_HARMLESS else [unknown(text.raw)]


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
