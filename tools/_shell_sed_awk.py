"""What sed scripts and awk programs run and which files they write, read for the shell analysis.

GNU sed runs commands with ``e COMMAND`` (a script) and ``e`` or the ``s///e`` flag (the pattern
space: unknown), and ``r``, ``R``, ``w``, ``W`` and the ``s///w`` flag name files. awk runs
``system("CMD")``, ``print | "CMD"`` and ``"CMD" | getline`` with ``sh -c`` and writes and reads
``print > "FILE"``, ``>> "FILE"``, ``getline < "FILE"`` and ``ARGV[N] = "FILE"`` (a file it
reads next); anything but a string literal there is unknown, and so is gawk's ``@load``, ``-l``
and an indirect call (``@f()``). Scripts in files (``sed -f FILE``, ``awk -f FILE``, ``-i
FILE``, ``@include``) are findings of their kind, read by ``_shell_sources`` with ``sed_file``
and ``awk_file``. The readers return
``_shell_dialects.Finding`` lists and never guess: a script they cannot follow is unknown.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ._shell_dialects import NOT_FOLLOWED, Finding, script, source, unknown
from ._shell_words import Parsed, Word, option_value

# -- sed --------------------------------------------------------------------------------------------
_SED_PLAIN = set("=dDgGhHnNpPxzF")
_SED_FLAGS = set("gpiImMe0123456789")


class _Unknown(Exception):
    """A script not followed: the whole of it is unknown."""


def sed(args: Sequence[Word], parsed: Parsed) -> list[Finding]:
    """The commands and files of sed's scripts: ``-e SCRIPT``s and ``-f FILE``s (read by
    ``sed_file``), or else the first operand. Nothing under ``--sandbox``."""
    if "--sandbox" in parsed.flags:
        return []
    scripts = [option_value(args, i, a) for o, i, a in parsed.values if o in ("-e", "--expression")]
    files = [option_value(args, i, a) for o, i, a in parsed.values if o in ("-f", "--file")]
    if not scripts and not files and parsed.operands:
        scripts = [args[parsed.operands[0]]]
    findings = [source("sed", f) for f in files]
    for item in scripts:
        try:
            if item.value is None:
                raise _Unknown
            findings += _sed_script(item.value)
        except _Unknown:
            findings.append(unknown(item.raw))
    return findings


def sed_file(text: str) -> list[Finding]:
    """What a sed script in a file (``-f FILE``) runs and names; unknown as a whole
    (``NOT_FOLLOWED``) when it is not followed."""
    try:
        return _sed_script(text)
    except _Unknown:
        return [unknown(NOT_FOLLOWED)]


def _sed_script(text: str) -> list[Finding]:
    findings: list[Finding] = []
    at = 0
    while at < len(text):
        char = text[at]
        if char in " \t\n;}":
            at += 1
            continue
        if char == "#":
            at = _line_end(text, at)
            continue
        at = _address(text, at)
        if at < len(text) and text[at] == ",":
            at = _address(text, at + 1, second=True)
        at = _skip_space(text, at)
        if at < len(text) and text[at] == "!":
            at = _skip_space(text, at + 1)
        if at >= len(text):
            raise _Unknown
        command, at = text[at], at + 1
        if command == "{" or command in _SED_PLAIN:
            continue
        if command == "s":
            at, written = _substitute(text, at)
            command = "w" if written else ""
            at += written
            if not written:
                continue
        at = _sed_arguments(text, at, command, findings)
    return findings


def _substitute(text: str, at: int) -> tuple[int, bool]:
    """After ``s/RE/REPLACEMENT/FLAGS``, and whether a ``w FILE`` flag follows there."""
    at = _delimited(text, _delimited(text, at, 0), 1)
    end = at
    while end < len(text) and text[end] in _SED_FLAGS:
        end += 1
    if "e" in text[at:end]:
        raise _Unknown  # the pattern space is run
    if end < len(text) and text[end] == "w":
        return end, True
    if end < len(text) and text[end] not in " \t\n;}#":
        raise _Unknown
    return end, False


def _sed_arguments(text: str, at: int, command: str, findings: list[Finding]) -> int:
    """After the arguments of ``command``; the scripts and files among them added to ``findings``."""
    if command == "y":
        return _delimited(text, _delimited(text, at, 0), 1)
    if command in ("a", "i", "c"):
        return _line_end(text, at, continued=True)
    if command in ("r", "R", "w", "W", "e"):
        end = _line_end(text, at)
        rest = text[at:end].strip()
        if command == "e":
            if not rest:
                raise _Unknown  # e alone runs the pattern space
            findings.append(script(rest))
        elif rest:
            findings.append(_path(rest))
        return end
    if command in ("b", "t", "T", ":", "v"):
        while at < len(text) and text[at] not in ";\n":
            at += 1
        return at
    if command in ("q", "Q", "l", "L"):
        at = _skip_space(text, at)
        while at < len(text) and text[at].isdigit():
            at += 1
        return at
    raise _Unknown


def _path(text: str) -> Finding:
    return ("path", Word(text, text, tilde=text.startswith("~")))


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t":
        at += 1
    return at


def _line_end(text: str, at: int, *, continued: bool = False) -> int:
    while at < len(text) and text[at] != "\n":
        at += 2 if continued and text[at] == "\\" else 1
    return at


def _address(text: str, at: int, *, second: bool = False) -> int:
    """After an address (``12``, ``$``, ``/RE/I``, ``\\cREc``, ``0~4``, and ``+N``, ``~N`` second)."""
    match = re.compile(r"\d+(~\d+)?|\$" + (r"|[+~]\d+" if second else "")).match(text, at)
    if match:
        return match.end()
    if at < len(text) and text[at] in "/\\":
        if text[at] == "\\":
            at += 1
        at = _delimited(text, at, 0) - 1
        while at + 1 < len(text) and text[at + 1] in "IM":
            at += 1
        return at + 1
    return at


def _delimited(text: str, at: int, parts: int) -> int:
    """After a delimited part (``/RE/``): with ``parts`` 0, ``at`` is on the opening delimiter;
    with 1, just after the previous part (sharing its delimiter)."""
    if parts == 0:
        if at >= len(text) or text[at] in "\n\\":
            raise _Unknown
        delimiter = text[at]
        at += 1
    else:
        delimiter = text[at - 1]
    while at < len(text) and text[at] != delimiter:
        at += 2 if text[at] == "\\" else 1
    if at >= len(text):
        raise _Unknown
    return at + 1


# -- awk --------------------------------------------------------------------------------------------
_TOKEN = re.compile(
    r"""(?P<space>[ \t]+|\\\n)|(?P<comment>\#[^\n]*)|(?P<string>"(?:[^"\\]|\\.)*")|(?P<name>[A-Za-z_]\w*)"""
    r"""|(?P<number>\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+)|(?P<op>\|\||\|&|>>|&&|[<>!=]=|\+\+|--|[-+*/%^!<>|?:~$()\[\]{};,\n=@])""",
    re.S,
)
_OPERAND = {"name", "number", "string", ")", "]", "$"}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "/": "/"}
_ENDS = {";", "\n", "}"}
_AWK_FILES = frozenset({"-f", "--file", "-E", "--exec", "-i", "--include"})
_CHANGING = frozenset({"split", "sub", "gsub", "patsplit", "asort", "asorti"})  # change an argument
_ARITHMETIC = frozenset("+-*/%^")


def awk(args: Sequence[Word], parsed: Parsed) -> list[Finding]:
    """What awk programs run and the files they name: the ``-e``/``--source`` programs and the
    ``-f``, ``-E`` and ``-i`` files (read by ``awk_file``), or else the first operand. gawk's
    ``-l`` loads code, unknown. Nothing under gawk's ``--sandbox``/``-S``."""
    if parsed.flags & {"--sandbox", "-S"}:
        return []
    findings: list[Finding] = [
        unknown(f"(awk {o} {option_value(args, i, a).raw})")
        for o, i, a in parsed.values
        if o in ("-l", "--load")
    ]
    programs = [option_value(args, i, a) for o, i, a in parsed.values if o in ("-e", "--source")]
    files = [option_value(args, i, a) for o, i, a in parsed.values if o in _AWK_FILES]
    if not programs and not parsed.flags & (_AWK_FILES - {"-i", "--include"}) and parsed.operands:
        programs = [args[parsed.operands[0]]]
    findings += [source("awk", f) for f in files]
    for item in programs:
        try:
            if item.value is None:
                raise _Unknown
            findings += _awk_program(_tokens(item.value))
        except _Unknown:
            findings.append(unknown(item.raw))
    return findings


def awk_file(text: str) -> list[Finding]:
    """What an awk program in a file (``-f FILE``, ``@include``) runs and names; unknown as a
    whole (``NOT_FOLLOWED``) when it is not followed."""
    try:
        return _awk_program(_tokens(text))
    except _Unknown:
        return [unknown(NOT_FOLLOWED)]


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) pairs: ``string`` (its value), ``regex``, ``name``, ``number``, or an operator."""
    tokens: list[tuple[str, str]] = []
    at = 0
    while at < len(text):
        previous = tokens[-1][0] if tokens else ""
        if text[at] == "/" and previous not in _OPERAND:  # a regex, not a division
            end = at + 1
            while end < len(text) and text[end] not in "/\n":
                if text[end] == "[":  # a / in a bracket expression is no end
                    close = text.find("]", end + 2 if text[end + 1 : end + 2] == "]" else end + 1)
                    end = close if close > 0 else len(text)
                end += 2 if text[end : end + 1] == "\\" else 1
            if end >= len(text) or text[end] != "/":
                raise _Unknown
            tokens.append(("regex", text[at + 1 : end]))
            at = end + 1
            continue
        match = _TOKEN.match(text, at)
        if match is None:
            raise _Unknown
        kind = match.lastgroup or ""
        if kind == "string":
            body = match[0][1:-1]
            tokens.append(
                (kind, re.sub(r"\\(.)", lambda m: _ESCAPES.get(m[1], "\\" + m[1]), body, flags=re.S))
            )
        elif kind in ("name", "number"):
            tokens.append((kind, match[0]))
        elif kind == "op":
            tokens.append((match[0], match[0]))
        at = match.end()
    return tokens


def _awk_program(tokens: list[tuple[str, str]]) -> list[Finding]:
    findings: list[Finding] = []
    printing, depth = False, 0
    for index, (kind, text) in enumerate(tokens):
        after = tokens[index + 1] if index + 1 < len(tokens) else ("", "")
        beyond = tokens[index + 2][0] if index + 2 < len(tokens) else ""
        before = tokens[index - 1] if index else ("", "")
        if kind == "name" and text in ("print", "printf"):
            printing, depth = True, 0
        elif kind in ("(", "["):
            depth += 1
        elif kind in (")", "]"):
            depth -= 1
        elif kind in _ENDS and depth <= 0:
            printing = False
        if kind == "name" and text == "system":
            literal = after[0] == "(" and beyond == "string" and tokens[index + 3 : index + 4] == [(")", ")")]
            findings.append(script(tokens[index + 2][1]) if literal else _awk_unknown("system()"))
        elif kind in ("|", "|&") and after == ("name", "getline"):  # "CMD" | getline
            starts = index < 2 or tokens[index - 2][0] not in _OPERAND
            findings.append(
                script(before[1]) if before[0] == "string" and starts else _awk_unknown("| getline")
            )
        elif kind in ("|", "|&"):  # print | "CMD"
            ends = beyond not in _OPERAND | {"("}  # not "CMD" ARG, a concatenation
            findings.append(script(after[1]) if after[0] == "string" and ends else _awk_unknown("print |"))
        elif kind in (">", ">>") and printing and depth <= 0:  # print > "FILE"
            ends = beyond in _ENDS | {""}
            findings.append(
                ("path", Word(after[1], after[1])) if after[0] == "string" and ends else _awk_unknown(">")
            )
        elif kind == "<" and (
            before == ("name", "getline") or tokens[index - 2 : index - 1] == [("name", "getline")]
        ):
            findings.append(
                ("path", Word(after[1], after[1])) if after[0] == "string" else _awk_unknown("getline <")
            )
        elif kind == "name" and text == "ARGV":  # ARGV[1] = "FILE": the files read
            findings += _argv(tokens, index)
        elif kind == "@" and after[1] != "include":  # @load "ext", @f(): gawk loads or calls anything
            findings.append(_awk_unknown("@" + after[1]))
        elif kind == "@" and beyond == "string":
            findings.append(source("awk", tokens[index + 2][1]))
    return findings


def _argv(tokens: list[tuple[str, str]], index: int) -> list[Finding]:
    """What setting ``ARGV`` makes awk read: ``ARGV[N] = "FILE"`` names ``FILE``; any other
    change of it (another value, ``ARGV[N]++``, ``split(S, ARGV)``, ``sub(R, S, ARGV[N])``,
    ``getline ARGV[N]``) is unknown. Reading it (``print ARGV[1]``, ``k in ARGV``) is harmless."""
    if index and (tokens[index - 1] == ("name", "getline") or _called(tokens, index) in _CHANGING):
        return [_awk_unknown("ARGV")]  # read into, or given to a function that changes it
    if tokens[index + 1 : index + 2] != [("[", "[")]:
        return []
    depth, end = 0, index + 1
    for end in range(index + 1, len(tokens)):
        depth += (tokens[end][0] == "[") - (tokens[end][0] == "]")
        if depth == 0:
            break
    after = [kind for kind, _ in tokens[end + 1 : end + 4]] + ["", "", ""]
    if after[0] == "=" and after[1] == "string" and after[2] in _ENDS | {""}:
        return [("path", Word(tokens[end + 2][1], tokens[end + 2][1]))]
    if after[0] in ("=", "++", "--") or (after[0] in _ARITHMETIC and after[1] == "="):
        return [_awk_unknown("ARGV")]
    return []


def _called(tokens: list[tuple[str, str]], index: int) -> str:
    """The function whose arguments hold the token at ``index`` (``split`` in ``split(s, ARGV)``)."""
    depth = 0
    for at in range(index - 1, 0, -1):
        depth += (tokens[at][0] == ")") - (tokens[at][0] == "(")
        if depth < 0:
            return tokens[at - 1][1] if tokens[at - 1][0] == "name" else ""
    return ""


def _awk_unknown(what: str) -> Finding:
    return ("unknown", Word(f"(awk {what})", None))
