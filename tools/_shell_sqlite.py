"""What sqlite3's dot commands and SQL run and which files they name, read for the shell analysis.

The sqlite3 shell runs commands with ``.shell CMD``, ``.system CMD`` and ``|CMD`` as the file of
``.output``, ``.once``, ``.read`` or ``.import``; ``.read FILE`` and ``-init FILE`` run a script
of dot commands and SQL (``sqlite_file``). SQL is tokenized as SQLite does (strings, quoted
identifiers ``"x"``, ``[x]``, ```x```, comments), so that a call of a function that loads code or
touches files (``load_extension``, ``writefile``, ``readfile``, ``edit``, ``lsdir``,
``zipfile``, ...) is found however its name is quoted or commented (``"writefile"/**/(...)``),
and so are ``ATTACH`` and ``VACUUM INTO``; those, and SQL that does not tokenize, are unknown.
In a script, as in the shell, a line is a dot command when it starts with ``.`` and no SQL
statement is pending, SQL runs up to its ``;`` (``END;`` in a ``CREATE TRIGGER``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from ._shell_dialects import Finding, numbered, script, source, unknown
from ._shell_words import Parsed, Word, option_value


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Dot commands whose last word (the first for ``.import``) is a file (``|CMD``: a script).
_FILES = _set("output once log import open backup save restore clone trace")
_HARMLESS = _set(
    "tables schema mode headers header dump indexes indices show help quit exit timer width nullvalue "
    "separator bail echo explain eqp print prompt stats changes databases dbinfo fullschema lint "
    "timeout limit dbconfig scanstats vfsinfo vfslist vfsname sha3sum recover expert"
)
#: SQL functions (and table-valued ones) of the sqlite3 shell that load code, run a program
#: (``edit``) or read and write files.
_RISKY_FUNCTIONS = _set("load_extension writefile readfile edit fts3_tokenizer lsdir fsdir zipfile eval")
_TOKEN = re.compile(
    r"(?P<space>\s+)|(?P<comment>--[^\n]*|/\*.*?\*/)|(?P<string>[xX]?'(?:[^']|'')*')"
    r'|(?P<name>"(?:[^"]|"")*"|\[[^\]]*\]|`(?:[^`]|``)*`)|(?P<word>[\w$\x80-\U0010ffff]+)|(?P<op>[^\s\w])',
    re.S,
)


class _Unknown(Exception):
    """SQL that does not tokenize: unknown as a whole."""


def sqlite(args: Sequence[Word], parsed: Parsed) -> list[Finding]:
    """sqlite3's dot commands and SQL given as arguments (after the database) or with ``-cmd``,
    each a whole command, and its ``-init FILE``. Nothing under ``-safe``."""
    if parsed.flags & {"-safe", "--safe"}:
        return []
    findings: list[Finding] = []
    texts: list[Word] = []
    for option, index, attached in parsed.values:
        value = option_value(args, index, attached)
        if option in ("-cmd", "--cmd"):
            texts.append(value)
        elif option in ("-init", "--init"):
            findings.append(source("sqlite", value))
    texts += [args[i] for i in parsed.operands[1:]]
    for text in texts:
        if text.value is None:
            findings.append(unknown(text.raw))
        elif text.value.lstrip().startswith("."):
            findings += _dot_command(text.value, text.raw)
        elif _risky(text.value):
            findings.append(unknown(text.raw))
    return findings


def sqlite_file(text: str) -> list[Finding]:
    """The dot commands and SQL of a script (``-init FILE``, ``.read FILE``, stdin), as the shell
    reads them: a line starting with ``.`` when no SQL is pending is a dot command (a ``.`` line
    within SQL is read as both), one starting with ``#`` a comment; SQL runs statement by
    statement. Unknown ones are named by their first line's number."""
    findings: list[Finding] = []
    sql, first = "", 0
    for number, line in enumerate(text.splitlines(), 1):
        pending = bool(sql.strip()) and not _only_comments(sql)
        if line.startswith("."):
            findings += [numbered(number, f) for f in _dot_command(line, line)]
            if not pending:
                continue
        elif line.startswith("#") and not pending:
            if re.search(r"(?i)\b(attach|vacuum|" + "|".join(_RISKY_FUNCTIONS) + r")\b", line):
                findings.append(numbered(number, unknown(line)))  # in case it continues SQL after all
            continue
        first = first or number
        sql += line + "\n"
        if _complete(sql):
            findings += [numbered(first, unknown(sql.strip()))] if _risky(sql) else []
            sql, first = "", 0
    if sql.strip() and _risky(sql):
        findings.append(numbered(first, unknown(sql.strip())))
    return findings


def _dot_command(text: str, raw: str) -> list[Finding]:
    """One dot command (its arguments split as the shell splits them, quotes removed)."""
    try:
        words = shlex.split(text.lstrip()[1:])
    except ValueError:
        return [unknown(raw)]
    name, rest = (words[0], words[1:]) if words else ("", [])
    files = [w for w in rest if not w.startswith("-")]
    if name in ("shell", "system"):
        return [script(" ".join(rest))]
    if name == "read" and files:
        return [script(files[0][1:])] if files[0].startswith("|") else [source("sqlite", files[0])]
    if name == "parameter" and rest[:1] == ["set"] and len(rest) > 2:
        return [unknown(raw)] if _risky(" ".join(rest[2:])) else []  # its value is an SQL expression
    if name == "parameter" and rest[:1] in (["list"], ["init"], ["clear"], ["unset"], []):
        return []
    if name in _FILES and not {"-e", "-x"} & set(rest):
        if files and files[-1].startswith("|"):
            return [script(files[-1][1:])]
        target = files[0] if name == "import" and files else files[-1] if files else None
        if target is None or target in ("stdout", "stderr", "off", "on"):
            return []
        return [("path", Word(target, target, tilde=target.startswith("~")))]
    return [] if name in _HARMLESS else [unknown(raw)]


def _tokens(sql: str) -> list[tuple[str, str]]:
    """(kind, text) of the SQL's tokens but space and comments; ``name`` has its quotes removed."""
    out: list[tuple[str, str]] = []
    at = 0
    while at < len(sql):
        match = _TOKEN.match(sql, at)
        if match is None or (match.lastgroup == "op" and (match[0] in "'\"[`" or sql.startswith("/*", at))):
            raise _Unknown  # an unterminated string, identifier or comment
        kind = match.lastgroup or ""
        if kind == "name":
            out.append(("word", match[0][1:-1].replace(match[0][0] * 2, match[0][0])))
        elif kind in ("string", "op", "word"):
            out.append((kind, match[0]))
        at = match.end()
    return out


def _risky(sql: str) -> bool:
    """Whether the SQL calls a risky function, attaches a database or vacuums into a file, or does
    not tokenize."""
    try:
        tokens = _tokens(sql)
    except _Unknown:
        return True
    words = {text.lower() for kind, text in tokens if kind == "word"}
    if "attach" in words or {"vacuum", "into"} <= words:
        return True
    return any(
        kind == "word" and text.lower() in _RISKY_FUNCTIONS and tokens[index + 1 : index + 2] == [("op", "(")]
        for index, (kind, text) in enumerate(tokens)
    )


def _only_comments(sql: str) -> bool:
    try:
        return not _tokens(sql)
    except _Unknown:
        return False


def _complete(sql: str) -> bool:
    """Whether the SQL ends a statement, as ``sqlite3_complete`` says: a ``;`` outside strings and
    comments, after ``END`` in a ``CREATE [TEMP] TRIGGER``."""
    try:
        tokens = _tokens(sql)
    except _Unknown:
        return False  # an open string or comment: more lines follow
    if not tokens or tokens[-1] != ("op", ";"):
        return False
    words = [text.lower() for kind, text in tokens[:4] if kind == "word"]
    words = words[1:] if words[:1] == ["explain"] else words
    trigger = words[:2] == ["create", "trigger"] or (
        words[:1] == ["create"] and words[1:2] in (["temp"], ["temporary"]) and words[2:3] == ["trigger"]
    )
    return not trigger or (len(tokens) > 1 and tokens[-2][1].lower() == "end")
