"""Shell command analysis: what a bash command runs and which paths it touches, as permission asks.

The command is parsed with tree-sitter-bash (one parser, reused) and every command in the tree is
visited: inside ``$(...)``, backticks, subshells, pipelines, lists, ``if``/``for``/``while``/``case``,
functions and process substitution. Wrappers (``sudo``, ``env``, ``timeout``, ``xargs``,
``find -exec``, ``bash -c``, ``eval``, ...) are unwrapped and what they run is analyzed too.

Each command gives a ``bash`` pattern, its text, and an "always" pattern, its prefix by arity plus
`` *`` (``_arity.py``). Words are brace-expanded first (``{.,.}./x`` is ``../x``). Paths of file
commands and redirections are resolved against the working directory (followed through ``cd``,
logically as bash does, so ``cd link/..`` is where the link sits; ``~``, ``~+``, ``..`` and symlinks
resolved); any outside the workspace gives an ``external_directory`` pattern ``/dir/*``. A value
only known at run time (``$VAR``, ``$(...)``, ``~-``, a glob reaching up, a script a shell reads
from a pipe) counts as outside, named by its text. ``permission_requests`` returns the
``external_directory`` request (if any) first, then the ``bash`` request.
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
from ._shell_specs import (
    FILE_COMMANDS,
    GIT_FOLDERS,
    SHELLS,
    WRAPPERS,
    FileCommand,
    Parsed,
    hijacks,
    parse_options,
)
from ._shell_words import SPECIAL, Word, climbs, expand, stdin_script, word
from .context import is_within
from .permission import PermissionRequest

MAX_DEPTH = 8  # nested bash -c / eval strings analyzed before giving up (then: exact + outside)
#: Device files a redirection or file command may use without leaving the workspace.
HARMLESS = frozenset(
    f"/dev/{name}"
    for name in ("null", "stdin", "stdout", "stderr", "tty", "zero", "random", "urandom", "full")
)
_STACK_TILDE = re.compile(r"~[+-]?\d*")  # ~- ($OLDPWD), ~N, ~+N, ~-N (the pushd stack)
_FORKS = frozenset({"subshell", "pipeline", "command_substitution", "process_substitution"})
_REDIRECTS = frozenset({"file_redirect", "herestring_redirect", "heredoc_redirect"})
_DUPS = frozenset({">&", "<&", ">&-", "<&-"})
XARGS_INPUT = "(xargs input)"
STDIN_SCRIPT = "(script on stdin)"


@cache
def parser() -> Parser:
    return Parser(Language(tree_sitter_bash.language()))


@dataclass
class _State:
    cwd: Path | str  # the real folder; str: not known until run time, the text that set it
    pwd: str | None  # the logical folder ($PWD) bash's ``cd`` works from; None: unknown
    stack: list[tuple[Path | str, str | None]] = field(default_factory=list[tuple[Path | str, str | None]])

    def fork(self) -> _State:
        return _State(self.cwd, self.pwd, list(self.stack))


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
        self.aliases: dict[str, str] = {}
        self.expanding: set[str] = set()  # aliases being expanded (bash does not recurse into one)
        self.traps: list[str] = []  # run later, from wherever the shell is then

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
        if kind in ("command", "command_name"):  # a bare command_name: in an ERROR ({rm,x})
            self._command_node(node, state, [])
        elif kind == "redirected_statement":
            extras: list[Node] = []
            redirects = node.children_by_field_name("redirect")
            for redirect in redirects:
                extras += self._redirect(redirect, state)
            body = node.child_by_field_name("body")
            if body is not None and body.type == "command":
                self._command_node(body, state, extras, stdin_script(redirects))
            elif body is not None:
                self._node(body, state)
        elif kind in _FORKS or kind == "function_definition":
            self._children(node, state.fork())
        elif kind in _REDIRECTS:
            self._redirect(node, state)
        elif kind == "variable_assignment":
            if self._assignment(node, state):
                self._record(_text(node), None)
        elif kind == "declaration_command":  # export, declare -x, local, readonly, typeset
            hijack = False
            for child in node.named_children:
                if child.type == "variable_assignment":
                    hijack = self._assignment(child, state) or hijack
                    continue
                if child.named_child_count:
                    self._node(child, state.fork())
                # a bare name, an option, or "NAME=VALUE" as one word
                name = _text(child) if child.type == "variable_name" else word(child).value
                hijack = hijack or name is None or hijacks(name.partition("=")[0])
            if hijack:
                self._record(_text(node), None)
        else:  # lists, compound statements, loops, conditionals, words with substitutions inside
            self._children(node, state)

    def _assignment(self, node: Node, state: _State) -> bool:
        """Visit the value's substitutions; True when the variable changes what programs run."""
        value = node.child_by_field_name("value")
        if value is not None:
            self._node(value, state.fork())
        name = node.child_by_field_name("name")
        return name is None or hijacks(_text(name).partition("[")[0])  # PATH[0]=x sets PATH too

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
            for item in expand(word(target)):
                self.path(item, state)
        return targets[1:]

    def _command_node(self, node: Node, state: _State, extras: list[Node], stdin: str | None = None) -> None:
        words: list[Word] = []
        hijack: list[str] = []
        trailing = list(extras)
        stdin = stdin_script([c for c in node.named_children if c.type in _REDIRECTS]) or stdin
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
        first = words[0] if words else None
        if first is not None and first.value == first.raw and _split_brace(node):  # {rm,x}
            words[0] = Word("{" + first.raw, "{" + first.raw, glob=True)
        if words:
            expanded = [item for written in words for item in expand(written)]
            self.command(expanded, state, " ".join(hijack), stdin=stdin, written=words)

    # -- one command -----------------------------------------------------------------------------
    def command(
        self,
        words: list[Word],
        state: _State,
        hijack: str = "",
        *,
        xargs_input: bool = False,
        stdin: str | None = None,
        written: list[Word] | None = None,
    ) -> int | None:
        """Record the command and analyze it; returns its "always" prefix length (None: exact).
        ``stdin`` is the literal script a heredoc or herestring feeds it; ``written`` the words
        before brace expansion, recorded too (by prefix only when the prefix has no braces)."""
        slot = self._record("", None)
        name = words[0].value
        base = name.rsplit("/", 1)[-1] if name and name.startswith("/") else name
        analyzed = [Word(base, base), *words[1:]] if base != name and base else words
        count = self._dispatch(base, analyzed, state, xargs_input, stdin) if base else None
        forms = [words, analyzed] if analyzed is not words else [words]
        if written is not None and written != words:
            forms.insert(0, written)
        entries: list[tuple[str, str]] = []
        for form in forms:
            text = " ".join(w.shown for w in form)
            prefix = " ".join(w.shown for w in form[:count]) if count is not None else None
            if prefix is not None and form is written and prefix != " ".join(w.shown for w in words[:count]):
                prefix = None  # the braces are in the prefix: only the expanded form by prefix
            if hijack:
                entries.append((f"{hijack} {text}", f"{hijack} {text}"))
            else:
                entries.append((text, text if prefix is None else prefix + " *"))
        self.result.commands[slot : slot + 1] = entries
        return None if hijack else count

    def _dispatch(
        self, name: str, words: list[Word], state: _State, xargs_input: bool, stdin: str | None
    ) -> int | None:
        """Analyze what the command runs and touches; returns the length of its "always" prefix."""
        args = words[1:]
        values = [w.value for w in args]
        if name in self.aliases and name not in self.expanding:  # bash would read the alias
            self.expanding.add(name)
            self.script(" ".join([self.aliases[name], *(w.raw for w in args)]), state)
            self.expanding.discard(name)
            return None
        if name in WRAPPERS:
            return self._wrapper(name, words, state, stdin)
        if name in SHELLS:
            parsed = parse_options(values, frozenset({"-o", "-O", "+o", "+O", "--rcfile", "--init-file"}))
            if "-c" in parsed.flags:
                if parsed.operands:
                    self._string(args[parsed.operands[0]], state.fork())
                return None
            if (not parsed.operands or "-s" in parsed.flags) and not parsed.flags & {"--help", "--version"}:
                self._string(Word(STDIN_SCRIPT, stdin), state.fork())  # its script is on stdin
                return None
        if name in ("eval", "trap", "alias"):
            return self._code(name, words, state)
        if name == "find":
            self._find(args, state)
        elif name in ("cd", "pushd", "popd"):
            self._cd(name, args, state)
        elif name in FILE_COMMANDS:
            self._file_paths(name, FILE_COMMANDS[name], args, state, xargs_input)
        return always_prefix([w.value for w in words])

    def _string(self, script: Word, state: _State) -> bool:
        """A string the shell runs as code (``bash -c``, ``eval``): analyzed when literal."""
        if script.value is None:
            self._outside(script.raw)
            return False
        self.script(script.value, state)
        return True

    def _code(self, name: str, words: list[Word], state: _State) -> int | None:
        """``eval ARGS``, ``trap CODE SIGNAL...``, ``alias NAME=CODE``: the code is analyzed as a
        script (the "always" prefix only when it is literal)."""
        args = words[1:]
        values = [w.value for w in args]
        known = True
        if name == "eval":
            text = " ".join(v for v in values if v is not None) if None not in values else None
            known = self._string(Word(" ".join(w.raw for w in args), text), state)
        operands = parse_options(values, frozenset()).operands
        if name == "trap" and len(operands) > 1 and values[operands[0]] not in ("-", ""):
            known = self._string(args[operands[0]], state.fork())
            self.traps += [values[operands[0]] or ""] if known else []
        for index in operands if name == "alias" else []:
            alias, eq, code = (values[index] or "").partition("=")
            if values[index] is None or eq:
                known = self._string(Word(args[index].raw, code if eq else None), state.fork()) and known
            if eq:
                self.aliases[alias] = code
        return always_prefix([w.value for w in words]) if known else None

    def _wrapper(self, name: str, words: list[Word], state: _State, stdin: str | None) -> int | None:
        spec = WRAPPERS[name]
        args = words[1:]
        values = [w.value for w in args]
        parsed = parse_options(values, spec.values | spec.paths, leading_options=True, optional=spec.optional)
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
        if name == "coproc":  # coproc [NAME] { list; }: the grammar splits the group at its ';'
            start += next((n + 1 for n, v in enumerate(values[start : start + 2]) if v == "{"), 0)
        hijack: list[str] = []
        while spec.assignments and start < len(args) and re.match(r"[^=]+=", values[start] or ""):
            if hijacks((values[start] or "").partition("=")[0]):
                hijack.append(args[start].shown)
            start += 1
        if start >= len(args):
            return always_prefix([w.value for w in words])
        xargs = name == "xargs"
        stdin = None if xargs else stdin  # xargs gives its command /dev/null
        count = self.command(args[start:], inner_state, " ".join(hijack), xargs_input=xargs, stdin=stdin)
        return None if count is None else 1 + start + count

    def _find(self, args: list[Word], state: _State) -> None:
        index = 0  # find [-H] [-L] [-P] [-D DEBUG] [-O LEVEL] START... EXPRESSION
        while index < len(args) and re.fullmatch(r"-[HLP]+|-D|-O\d*", args[index].value or ""):
            index += 2 if args[index].value == "-D" else 1
        first = index
        while index < len(args) and not _expression(args[index].value):
            self.path(args[index], state)
            index += 1
        if index == first:
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
        """cd is logical in bash (``cd link/..`` is the folder holding ``link``) unless ``-P``:
        both that folder and the physical one are checked; the shell goes to the logical one."""
        values = [w.value for w in args]
        if any(re.fullmatch(r"[+-]\d+", v or "") for v in values):  # pushd/popd +N: the stack turns
            values = [None]
        if name == "popd":
            state.cwd, state.pwd = state.stack.pop() if state.stack and not values else ("(popd)", None)
            return
        parsed = parse_options(values, frozenset())
        operands = [args[i] if values[i] is not None else Word(args[i].raw, None) for i in parsed.operands]
        target = operands[0] if operands else Word("~", os.path.expanduser("~"))
        if target.value == "-":
            target = Word("-", None)
        self.path(target, state)
        logical = None if "-P" in parsed.flags else self._absolute(target, state, logical=True)
        logical = os.path.normpath(logical) if logical is not None else None
        if logical is not None:
            self.path(Word(logical, logical), state)
        if name == "pushd":
            state.stack.append((state.cwd, state.pwd))
        real = self._resolve(target, state)
        if logical is not None and os.path.isdir(logical):
            state.cwd, state.pwd = Path(os.path.realpath(logical)), logical
        else:
            state.cwd, state.pwd = real or target.raw, str(real) if real else None

    def _file_paths(
        self, name: str, spec: FileCommand, args: list[Word], state: _State, xargs_input: bool
    ) -> None:
        values = [w.value for w in args]
        if name == "tar" and values and values[0] and values[0][0] != "-" and values[0].isalpha():
            values[0] = "-" + values[0]
        parsed = parse_options(values, spec.values | spec.paths, spec.leading_options)
        inputs = bool(parsed.flags & spec.inputs)
        if parsed.flags & spec.stops and not inputs:
            return
        for option, index, attached in parsed.values:
            if option in spec.paths:
                self.path(Word(attached, attached) if attached is not None else args[index], state)
        operands = [args[i] for i in parsed.operands]
        if name == "git":
            self._git(parsed, args, state)
        if spec.operands == "none":
            return
        if spec.operands == "keyed":
            for operand in operands:
                key, eq, path = (operand.value or "").partition("=")
                if operand.value is None or (eq and key in spec.keys):
                    tilde = operand.raw.partition("=")[2].startswith("~")  # bash expands of=~/x
                    value = Word(path, path, operand.glob, tilde)
                    self.path(operand if operand.value is None else value, state)
            return
        operands = operands[0 if parsed.flags & spec.supplied_by else spec.skip :]
        if spec.operands == "first" and not inputs:
            operands = operands[:1]
        if name in ("rsync", "scp"):
            operands = [o for o in operands if not re.match(r"[\w.@-]+:", o.value or "")]
        for operand in operands:
            self.path(operand, state)
        if xargs_input and spec.operands == "all":
            self.path(Word(XARGS_INPUT, None), state)

    def _git(self, parsed: Parsed, args: list[Word], state: _State) -> None:
        """``git clone URL DIR``, ``git init DIR``, ``git worktree add DIR``: the folders (and local
        repositories) are checked, from the folder ``-C`` names. Options are not told apart from
        their values here, which are then checked too (harmless: they resolve inside)."""
        words = [args[i].value or "" for i in parsed.operands[:2]]
        skip = 1 if words and words[0] in GIT_FOLDERS else 2 if " ".join(words) in GIT_FOLDERS else 0
        if not skip:
            return
        inner = state.fork()
        for option, index, attached in parsed.values:
            if option == "-C":
                value = Word(attached, attached) if attached is not None else args[index]
                inner.cwd = self._resolve(value, inner) or value.raw
        for item in args[parsed.operands[skip - 1] + 1 :]:
            value = item.value
            if value is not None and value.startswith("file://"):
                self.path(Word(value[7:], value[7:]), inner)
            elif value is None or not (value.startswith("-") or re.match(r"[\w.@-]+:", value)):
                self.path(item, inner)  # not an option nor a remote URL

    # -- paths -----------------------------------------------------------------------------------
    def _absolute(self, path: Word, state: _State, logical: bool = False) -> str | None:
        """The absolute path ``path`` names from the state's real folder (or ``logical`` one, for
        ``cd``), symlinks not resolved; None if unknown until it runs."""
        value = path.value
        if value is None:
            return None
        if path.tilde:
            head, slash, rest = value.partition("/")
            if head == "~+":  # $PWD
                if state.pwd is None:
                    return None
                value = state.pwd + slash + rest
            elif head != "~" and _STACK_TILDE.fullmatch(head):
                return None
            else:
                value = os.path.expanduser(value)
        if path.glob:
            folder = SPECIAL.split(value, maxsplit=1)[0].rpartition("/")[0]  # before the glob's part
            if logical or climbs(value[len(folder) :]):
                return None
            value = folder or ("/" if value.startswith("/") else ".")
        if not os.path.isabs(value):
            base = state.pwd if logical else state.cwd
            if base is None or (isinstance(base, str) and not logical):
                return None
            value = os.path.join(base, value)
        return value

    def _resolve(self, path: Word, state: _State) -> Path | None:
        """The real path ``path`` names from the state's folder, or None if unknown until run."""
        value = self._absolute(path, state)
        return None if value is None else Path(os.path.realpath(value))

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


def _split_brace(node: Node) -> bool:
    """Whether the grammar split the ``{`` of a brace expression off the command's first word:
    ``{rm,x}`` reads as an unclosed group (an ERROR) around the command ``rm,x}``."""
    start = node.start_byte
    while node.prev_sibling is None and node.parent is not None:
        node = node.parent
    before = node.prev_sibling
    return before is not None and before.type == "{" and before.end_byte == start


def _expression(value: str | None) -> bool:
    return value is not None and (value.startswith("-") or value in ("(", ")", "!", ","))


def analyze(command: str, cwd: Path, root: Path, trusted: Sequence[Path] = ()) -> Analysis:
    """The commands ``command`` runs and the outside paths it touches, run in ``cwd``."""
    visitor = _Visitor(root.resolve(), [t.resolve() for t in trusted])
    state = _State(cwd.resolve(), str(cwd.resolve()))
    visitor.path(Word(str(cwd), str(cwd)), state)  # running outside the workspace is outside
    visitor.script(command, state)
    for trap in visitor.traps:  # analyzed where it was set; it runs from where the script ends
        visitor.script(trap, state.fork())
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
