"""Shell command analysis: what a bash command runs and which paths it touches, as permission asks.

The command is parsed with tree-sitter-bash (one parser, reused) and every command in the tree is
visited: inside ``$(...)``, backticks, subshells, pipelines, lists, ``if``/``for``/``while``/``case``,
functions and process substitution. Wrappers (``sudo``, ``env``, ``timeout``, ``xargs``,
``find -exec``, ``bash -c``, ``eval``, ...) are unwrapped and what they run is analyzed too.

Each command gives a ``bash`` pattern, its text, and an "always" pattern, its prefix by arity plus
`` *`` (``_arity.py``). Paths of file commands and redirections are resolved against the working
directory (followed through ``cd``; ``~``, ``..`` and symlinks resolved); any outside the workspace
gives an ``external_directory`` pattern ``/dir/*``. A value only known at run time (``$VAR``,
``$(...)``, a glob reaching up) counts as outside, named by its text. ``permission_requests``
returns the ``external_directory`` request (if any) first, then the ``bash`` request.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from ._arity import always_prefix
from ._shell_specs import FILE_COMMANDS, HIJACK_VARIABLES, SHELLS, WRAPPERS, FileCommand, parse_options
from ._shell_words import SPECIAL, Word, word
from .context import is_within
from .permission import PermissionRequest

MAX_DEPTH = 8  # nested bash -c / eval strings analyzed before giving up (then: exact + outside)
#: Device files a redirection or file command may use without leaving the workspace.
HARMLESS = frozenset(
    f"/dev/{name}"
    for name in ("null", "stdin", "stdout", "stderr", "tty", "zero", "random", "urandom", "full")
)
_REACH = re.compile(r"(^|[/{,])\.\.($|[/},])|[{,][/~]")  # a glob or brace that can climb or jump out
_FORKS = frozenset({"subshell", "pipeline", "command_substitution", "process_substitution"})
_REDIRECTS = frozenset({"file_redirect", "herestring_redirect", "heredoc_redirect"})
_DUPS = frozenset({">&", "<&", ">&-", "<&-"})
XARGS_INPUT = "(xargs input)"


@cache
def parser() -> Parser:
    return Parser(Language(tree_sitter_bash.language()))


@dataclass
class _State:
    cwd: Path | str  # str: not known until run time, the text that set it
    stack: list[Path | str] = field(default_factory=list[Path | str])

    def fork(self) -> _State:
        return _State(self.cwd, list(self.stack))


@dataclass
class Analysis:
    #: One per command: (pattern, always pattern); the always pattern equals the pattern when only
    #: the exact command may be approved.
    commands: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    #: ``external_directory`` patterns: ``/dir/*``, or the text of a value unknown until run time.
    outside: list[str] = field(default_factory=list[str])


class _Visitor:
    def __init__(self, root: Path, trusted: Sequence[Path]) -> None:
        self.root = root
        self.trusted = [root, *trusted]
        self.result = Analysis()
        self.depth = 0

    # -- recording -------------------------------------------------------------------------------
    def _record(self, pattern: str, always: str | None) -> int:
        self.result.commands.append((pattern, always or pattern))
        return len(self.result.commands) - 1

    def _outside(self, pattern: str) -> None:
        if pattern not in self.result.outside:
            self.result.outside.append(pattern)

    # -- the tree --------------------------------------------------------------------------------
    def script(self, text: str, state: _State) -> None:
        if self.depth > MAX_DEPTH:
            self._record(text.strip(), None)
            self._outside(text.strip())
            return
        tree = parser().parse(text.encode())
        if tree.root_node.has_error:  # the shell may read it differently: no prefix approval
            self._record(text.strip(), None)
        self.depth += 1
        self._children(tree.root_node, state)
        self.depth -= 1

    def _children(self, node: Node, state: _State) -> None:
        for child in node.named_children:
            self._node(child, state)

    def _node(self, node: Node, state: _State) -> None:
        kind = node.type
        if kind == "command":
            self._command_node(node, state, [])
        elif kind == "redirected_statement":
            extras: list[Node] = []
            for redirect in node.children_by_field_name("redirect"):
                extras += self._redirect(redirect, state)
            body = node.child_by_field_name("body")
            if body is not None and body.type == "command":
                self._command_node(body, state, extras)
            elif body is not None:
                self._node(body, state)
        elif kind in _FORKS or kind == "function_definition":
            self._children(node, state.fork())
        elif kind in _REDIRECTS:
            self._redirect(node, state)
        elif kind == "variable_assignment":
            if self._assignment(node, state):
                self._record(_text(node), None)
        elif kind == "declaration_command":
            hijacks = [
                self._assignment(child, state)
                for child in node.named_children
                if child.type == "variable_assignment"
            ]
            if any(hijacks):
                self._record(_text(node), None)
        else:  # lists, compound statements, loops, conditionals, words with substitutions inside
            self._children(node, state)

    def _assignment(self, node: Node, state: _State) -> bool:
        """Visit the value's substitutions; True when the variable changes what programs run."""
        value = node.child_by_field_name("value")
        if value is not None:
            self._node(value, state.fork())
        name = node.child_by_field_name("name")
        return name is not None and _text(name) in HIJACK_VARIABLES

    def _redirect(self, node: Node, state: _State) -> list[Node]:
        """Check a redirection's target; returns words the grammar attached to it by mistake
        (``echo a > f b``: ``b`` is echo's argument)."""
        if node.type != "file_redirect":
            self._children(node, state)
            return []
        targets = node.children_by_field_name("destination")
        if not targets:
            return []
        target = targets[0]
        self._node(target, state.fork())
        operator = next((_text(c) for c in node.children if not c.is_named), "")
        duplicate = operator in _DUPS and (target.type == "number" or _text(target) == "-")
        if not duplicate and not (target.type == "number" and operator not in (">", ">>", "<", ">|")):
            self.path(word(target), state)
        return targets[1:]

    def _command_node(self, node: Node, state: _State, extras: list[Node]) -> None:
        words: list[Word] = []
        hijack: list[str] = []
        trailing = list(extras)
        for child in node.named_children:
            if child.type == "variable_assignment":
                if self._assignment(child, state):
                    hijack.append(_text(child))
            elif child.type in _REDIRECTS:
                trailing += self._redirect(child, state)
            else:
                target = (
                    child.named_children[0]
                    if child.type == "command_name" and child.named_children
                    else child
                )
                if target.named_child_count:  # may hold substitutions, which run first
                    self._node(target, state.fork())
                words.append(word(target))
        for extra in trailing:
            self._node(extra, state.fork())
            words.append(word(extra))
        if words:
            self.command(words, state, " ".join(hijack))

    # -- one command -----------------------------------------------------------------------------
    def command(
        self, words: list[Word], state: _State, hijack: str = "", xargs_input: bool = False
    ) -> int | None:
        """Record the command and analyze it; returns its "always" prefix length (None: exact)."""
        slot = self._record("", None)
        name = words[0].value
        base = name.rsplit("/", 1)[-1] if name and name.startswith("/") else name
        analyzed = [Word(base, base), *words[1:]] if base != name and base else words
        count = self._dispatch(base, analyzed, state, xargs_input) if base else None
        forms = [words, analyzed] if analyzed is not words else [words]
        entries: list[tuple[str, str]] = []
        for form in forms:
            text = " ".join(w.shown for w in form)
            if hijack:
                entries.append((f"{hijack} {text}", f"{hijack} {text}"))
            elif count is None:
                entries.append((text, text))
            else:
                entries.append((text, " ".join(w.shown for w in form[:count]) + " *"))
        self.result.commands[slot : slot + 1] = entries
        return None if hijack else count

    def _dispatch(self, name: str, words: list[Word], state: _State, xargs_input: bool) -> int | None:
        """Analyze what the command runs and touches; returns the length of its "always" prefix."""
        args = words[1:]
        values = [w.value for w in args]
        if name in WRAPPERS:
            return self._wrapper(name, words, state)
        if name in SHELLS:
            parsed = parse_options(values, frozenset({"-o", "-O", "+o", "+O", "--rcfile", "--init-file"}))
            if "-c" in parsed.flags:
                if parsed.operands:
                    self._string(args[parsed.operands[0]], state.fork())
                return None
        if name == "eval":
            text = " ".join(v for v in values if v is not None)
            self._string(Word(" ".join(w.raw for w in args), text if None not in values else None), state)
            return always_prefix([w.value for w in words]) if None not in values else None
        if name == "find":
            self._find(args, state)
        elif name in ("cd", "pushd", "popd"):
            self._cd(name, args, state)
        elif name in FILE_COMMANDS:
            self._file_paths(name, FILE_COMMANDS[name], args, state, xargs_input)
        return always_prefix([w.value for w in words])

    def _string(self, script: Word, state: _State) -> None:
        """A string the shell runs as code (``bash -c``, ``eval``): analyzed when literal."""
        if script.value is None:
            self._outside(script.raw)
        else:
            self.script(script.value, state)

    def _wrapper(self, name: str, words: list[Word], state: _State) -> int | None:
        spec = WRAPPERS[name]
        args = words[1:]
        values = [w.value for w in args]
        parsed = parse_options(values, spec.values | spec.paths, leading_options=True)
        inner_state = state
        for option, index, attached in parsed.values:
            value = Word(attached, attached) if attached is not None else args[index]
            if option in spec.paths:
                self.path(value, state)
            elif name == "env" and option in ("-C", "--chdir"):
                self.path(value, state)
                inner_state = state.fork()
                inner_state.cwd = self._resolve(value, state) or value.raw
            elif name == "env" and option in ("-S", "--split-string"):
                rest = " ".join(args[i].raw for i in parsed.operands)
                self._string(
                    Word(f"{value.raw} {rest}", f"{value.value} {rest}" if value.value else None), state
                )
                return None
        if name == "command" and parsed.flags & {"-v", "-V"}:
            return always_prefix([w.value for w in words])
        operands = parsed.operands[spec.leading :]
        start = operands[0] if operands else len(args)
        hijack: list[str] = []
        while spec.assignments and start < len(args) and re.match(r"[A-Za-z_]\w*=", values[start] or ""):
            if (values[start] or "").partition("=")[0] in HIJACK_VARIABLES:
                hijack.append(args[start].shown)
            start += 1
        if start >= len(args):
            return always_prefix([w.value for w in words])
        count = self.command(args[start:], inner_state, " ".join(hijack), xargs_input=name == "xargs")
        return None if count is None else 1 + start + count

    def _find(self, args: list[Word], state: _State) -> None:
        index = 0
        while index < len(args) and not _expression(args[index].value):
            self.path(args[index], state)
            index += 1
        if index == 0:
            self.path(Word(".", "."), state)
        while index < len(args):
            value = args[index].value
            if value in ("-exec", "-execdir", "-ok", "-okdir"):
                end = index + 1
                while end < len(args) and args[end].value not in (";", "+"):
                    end += 1
                if end > index + 1:
                    self.command(args[index + 1 : end], state.fork())
                index = end
            elif value in ("-fprint", "-fprint0", "-fls", "-fprintf", "-files0-from") and index + 1 < len(
                args
            ):
                self.path(args[index + 1], state)
                index += 1
            index += 1

    def _cd(self, name: str, args: list[Word], state: _State) -> None:
        if name == "popd":
            state.cwd = state.stack.pop() if state.stack else "(popd)"
            return
        operands = [args[i] for i in parse_options([w.value for w in args], frozenset()).operands]
        home = os.path.expanduser("~")
        target = operands[0] if operands else Word("~", home)
        if target.value == "-":
            target = Word("-", None)
        self.path(target, state)
        if name == "pushd":
            state.stack.append(state.cwd)
        state.cwd = self._resolve(target, state) or target.raw

    def _file_paths(
        self, name: str, spec: FileCommand, args: list[Word], state: _State, xargs_input: bool
    ) -> None:
        values = [w.value for w in args]
        if name == "tar" and values and values[0] and values[0][0] != "-" and values[0].isalpha():
            values[0] = "-" + values[0]
        parsed = parse_options(values, spec.values | spec.paths, spec.leading_options)
        if parsed.flags & spec.stops:
            return
        for option, index, attached in parsed.values:
            if option in spec.paths:
                self.path(Word(attached, attached) if attached is not None else args[index], state)
        operands = [args[i] for i in parsed.operands]
        if spec.operands == "none":
            return
        if spec.operands == "keyed":
            for operand in operands:
                key, eq, path = (operand.value or "").partition("=")
                if operand.value is None or (eq and key in spec.keys):
                    self.path(operand if operand.value is None else Word(path, path), state)
            return
        operands = operands[0 if parsed.flags & spec.supplied_by else spec.skip :]
        if spec.operands == "first":
            operands = operands[:1]
        if name in ("rsync", "scp"):
            operands = [o for o in operands if not re.match(r"[\w.@-]+:", o.value or "")]
        for operand in operands:
            self.path(operand, state)
        if xargs_input and spec.operands == "all":
            self.path(Word(XARGS_INPUT, None), state)

    # -- paths -----------------------------------------------------------------------------------
    def _resolve(self, path: Word, state: _State) -> Path | None:
        """The real path ``path`` names from the state's directory, or None if unknown until run."""
        value = path.value
        if value is None:
            return None
        if path.tilde:
            value = os.path.expanduser(value)
        if path.glob:
            head = SPECIAL.split(value, maxsplit=1)[0]
            if _REACH.search(value[len(head) :]):
                return None
            value = head.rpartition("/")[0] or ("/" if head.startswith("/") else ".")
        if not os.path.isabs(value):
            if isinstance(state.cwd, str):
                return None
            value = os.path.join(state.cwd, value)
        return Path(os.path.realpath(value))

    def path(self, path: Word, state: _State) -> None:
        if path.value is not None and (path.value in HARMLESS or path.value.startswith("/dev/fd/")):
            return
        if path.value == "-" or path.raw.startswith(("<(", ">(")):  # stdin; a pipe to analyzed commands
            return
        real = self._resolve(path, state)
        if real is None:
            relative = isinstance(state.cwd, str) and not (path.raw.startswith(("/", "~", "$")))
            self._outside(f"{state.cwd}/{path.raw}" if relative else path.raw)
            return
        if any(is_within(real, folder) for folder in self.trusted):
            return
        folder = real if real.is_dir() else real.parent
        self._outside(str(folder / "*"))


def _text(node: Node) -> str:
    return (node.text or b"").decode(errors="replace")


def _expression(value: str | None) -> bool:
    return value is not None and (value.startswith("-") or value in ("(", ")", "!", ","))


def analyze(command: str, cwd: Path, root: Path, trusted: Sequence[Path] = ()) -> Analysis:
    """The commands ``command`` runs and the outside paths it touches, run in ``cwd``."""
    visitor = _Visitor(root.resolve(), [t.resolve() for t in trusted])
    state = _State(cwd.resolve())
    visitor.path(Word(str(cwd), str(cwd)), state)  # running outside the workspace is outside
    visitor.script(command, state)
    if not visitor.result.commands and command.strip():
        visitor.result.commands.append((command.strip(), command.strip()))
    return visitor.result


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def permission_requests(
    command: str, cwd: Path, root: Path, trusted: Sequence[Path] = ()
) -> list[PermissionRequest]:
    """The asks for running ``command`` in ``cwd``: ``external_directory`` (if any), then ``bash``."""
    result = analyze(command, cwd, root, trusted)
    requests: list[PermissionRequest] = []
    meta = {"command": command}
    if result.outside:
        requests.append(
            PermissionRequest(
                "external_directory",
                list(result.outside),
                list(result.outside),
                f"Command reaches outside the workspace: {', '.join(result.outside)}",
                meta,
            )
        )
    patterns = _unique(p for p, _ in result.commands) or [command.strip()]
    always = _unique(a for _, a in result.commands) or patterns
    requests.append(PermissionRequest("bash", patterns, always, f"Run: {command.strip()}", dict(meta)))
    return requests
