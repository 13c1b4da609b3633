"""What the psql and mysql clients run here and which files they name, read for the shell analysis.

Both run shell commands from their own commands: psql's backslash commands (``\\! CMD``, ``\\o
|CMD``, ``\\g |CMD``, ``\\w |CMD``, ``\\copy ... program 'CMD'``, any word in backquotes), mysql's
(``system CMD``, ``\\! CMD``, ``pager CMD``), which are scripts; they read files of their
commands (``\\i FILE``, ``source FILE``: read in turn as script files by ``_shell_sources``) and
write and read others (``\\o FILE``, ``tee FILE``: paths). An editor (``\\e``), a setting that
changes what runs (``\\setenv``, ``\\cd``) or a command not known is unknown, and so is SQL that has
the server run a program or touch its files (``COPY ... PROGRAM``, ``pg_read_file``, ``LOAD DATA
LOCAL``, ``INTO OUTFILE``), since the server may be this machine. ``-c``/``-e`` texts, ``-f``
files and what they read on stdin (``_shell_stdin``) are read so.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from ._shell_dialects import Finding, lines, numbered, script, source, unknown
from ._shell_words import Parsed, Word, option_value

_PSQL_HARMLESS = re.compile(
    r"[dl]\S*|x|a|t|H|q|quit|timing|conninfo|c|connect|encoding|echo|qecho|warn|set|unset|pset|"
    r"if|elif|else|endif|gset|gexec|gdesc|watch|prompt|errverbose|r|reset|p|print|sf|sv|z|"
    r"bind|parse|close|crosstabview|f|C|T|sv\+?|sf\+?"
)
_PSQL_FILES = frozenset({"o", "out", "g", "w", "s", "lo_export", "lo_import"})
_PSQL_INCLUDES = frozenset({"i", "include", "ir", "include_relative"})
_PSQL_READ = frozenset({"-c", "--command", "-f", "--file", "-o", "--output", "-L", "--log-file"})
#: SQL that makes the server run a program or touch its files.
_SERVER = re.compile(
    r"(?i)\bprogram\b|\bcopy\b(?![^;]*\b(stdin|stdout)\b)|\b(pg_read_file|pg_read_binary_file|pg_ls_dir|"
    r"pg_stat_file|lo_import|lo_export|load_file)\s*\(|\binto\s+(out|dump)file\b|\bload\s+data\b"
)


def psql(args: Sequence[Word], parsed: Parsed) -> list[Finding]:
    """psql's ``-c``/``--command`` texts (a backslash command, or SQL sent as it is), ``-f`` files
    and ``-o |CMD`` (or ``-o FILE``, ``-L FILE``)."""
    findings: list[Finding] = []
    for option, index, attached in parsed.values:
        value = option_value(args, index, attached)
        if value.value is None:
            findings += [unknown(value.raw)] if option in _PSQL_READ else []
        elif option in ("-c", "--command"):
            text = value.value.lstrip()
            found = _psql_meta(text[1:], value.raw) if text.startswith("\\") else _sql(text, value.raw)
            findings += found
        elif option in ("-f", "--file") and value.value != "-":
            findings.append(source("psql", value))
        elif option in ("-o", "--output", "-L", "--log-file"):
            findings.append(_output(value.value))
    return findings


def psql_file(text: str) -> list[Finding]:
    """A psql script (``-f FILE``, ``\\i FILE``, stdin): a backslash starts a command that runs to
    the end of its line (a backslash in a string is read so too); the rest is SQL."""
    findings: list[Finding] = []
    for number, line in lines(text):
        sql, backslash, meta = line.partition("\\")
        found = _sql(sql, line) + (_psql_meta(meta, line) if backslash else [])
        findings += [numbered(number, f) for f in found]
    return findings


def _psql_meta(text: str, raw: str) -> list[Finding]:
    """One backslash command (``text`` after the backslash) and those after it on its line."""
    if "`" in text:
        return [unknown(raw)]  # `CMD` in an argument runs CMD
    name, _, rest = text.partition(" ")
    if name == "!":
        return [script(rest)]
    if name.startswith("!"):
        return [script(name[1:] + " " + rest)]
    parts = _split(rest)
    if parts is None:
        return [unknown(raw)]
    if name in _PSQL_INCLUDES:
        return [source("psql", parts[0])] if parts else []
    if name in ("copy",) and re.search(r"(?i)\bprogram\b", rest):
        match = re.search(r"(?i)\bprogram\s+'((?:[^']|'')*)'", rest)
        return [script(match[1].replace("''", "'"))] if match else [unknown(raw)]
    if name in _PSQL_FILES and rest.lstrip().startswith("|"):
        return [script(rest.lstrip()[1:])]  # \o |CMD: the rest of the line
    if name in _PSQL_FILES:
        target = parts[-1] if name == "lo_export" else parts[0] if parts else ""
        return [_output(target)] if target else []
    if name == "copy":
        match = re.search(r"(?i)\b(from|to)\s+('(?:[^']|'')*'|\S+)", rest)
        where = match[2].strip("'") if match else "stdin"
        return [] if where.lower() in ("stdin", "stdout", "pstdin", "pstdout") else [_output(where)]
    return [] if _PSQL_HARMLESS.fullmatch(name) else [unknown(raw)]


def mysql(args: Sequence[Word], parsed: Parsed) -> list[Finding]:
    """mysql's ``-e``/``--execute`` texts and ``--init-command``, read as a script; ``--pager CMD``,
    a script; ``--defaults-file`` and the like (which may set a pager) are unknown."""
    findings: list[Finding] = []
    for option, index, attached in parsed.values:
        value = option_value(args, index, attached)
        if option in ("-e", "--execute", "--init-command"):
            found = mysql_file(value.value) if value.value is not None else [unknown("")]
            findings += [unknown(value.raw) if f[0] == "unknown" else f for f in found]
        elif option == "--pager":
            findings.append(script(value.value) if value.value is not None else unknown(value.raw))
        elif option in ("--defaults-file", "--defaults-extra-file"):
            findings.append(unknown(f"(mysql {option} {value.raw})"))
    return findings


def mysql_file(text: str) -> list[Finding]:
    """A mysql script (``-e``, ``source FILE``, stdin): ``system CMD``, ``\\! CMD`` and ``pager
    CMD`` (``\\P``) run a command, ``source FILE`` (``\\.``) reads a script, ``tee FILE`` (``\\T``)
    writes one; ``edit`` (``\\e``) is unknown; the rest is SQL."""
    findings: list[Finding] = []
    for number, line in lines(text):
        command, _, rest = line.strip().partition(" ")
        long = command.lower().rstrip(";")
        short = re.search(r"\\([!.PTe])\s*(.*)", line)
        if long in ("system", "pager") or (short and short[1] in "!P"):
            found = [script(rest if long in ("system", "pager") else short[2] if short else "")]
        elif long == "source" or (short and short[1] == "."):
            found = [source("mysql", (rest if long == "source" else short[2] if short else "").rstrip(";"))]
        elif long == "tee" or (short and short[1] == "T"):
            found = [_output((rest if long == "tee" else short[2] if short else "").rstrip(";"))]
        elif long == "edit" or (short and short[1] == "e"):
            found = [unknown(line)]
        else:
            found = _sql(line, line)
        findings += [numbered(number, f) for f in found]
    return findings


def _sql(text: str, raw: str) -> list[Finding]:
    return [unknown(raw)] if _SERVER.search(text) else []


def _output(target: str) -> Finding:
    """A file written or read, or ``|CMD``, a command written to."""
    if target.startswith("|"):
        return script(target[1:])
    return ("path", Word(target, target, tilde=target.startswith("~")))


def _split(text: str) -> list[str] | None:
    try:
        return shlex.split(text)
    except ValueError:
        return None
