"""Programs' own languages that can run commands: gdb's and lldb's commands, hyperfine's parameters.

Each reader takes the program's words or text and returns ``Finding`` lists, applied by the analysis
(``_shell_commands.Commands.findings``): a ``script`` run by a shell (``gdb -ex 'shell CMD'``), a
``path`` it reads or writes, or ``unknown`` code that may run anything (``gdb -ex 'python
...'``), which counts as an outside value named by its text. Readers are conservative: text they
do not follow is unknown, never harmless.
"""

from __future__ import annotations

import itertools
import re
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
