"""Shell command analysis: what a bash command runs and which paths it touches, as permission asks.

The command is parsed with tree-sitter-bash as bash's lexer reads it (line continuations joined:
``_shell_parse.py``) and every command in the tree is visited: inside ``$(...)``, backticks,
subshells, pipelines, lists, ``if``/``for``/``while``/``case``, functions and process substitution,
and in words the grammar leaves as text (``${x#$(cmd)}``: ``_shell_evaluation.py``, which also
asks for arithmetic and ``${!x}`` evaluating values not known). A text the grammar cannot parse is
asked for as a whole, exactly, behind ``(unparsed)``, which no prefix rule matches; and so is one
nested deeper than ``MAX_DEPTH``. This module is that walk: it finds the commands, their
assignments and redirections, forks the working directory for subshells, and hands each command to
``_shell_commands.py``, which unwraps wrappers (``sudo``, ``env``, ``timeout``, ``xargs``, ``su``,
``watch``, ``find -exec``, ``bash -c``, ``eval``, ...: ``_shell_wrappers.py``; runners such as
``uv run`` or ``docker exec``: ``_shell_runners.py``; ``tmux``, ``at``, ``crontab``:
``_shell_sessions.py``) and analyzes what they run too. Variables set other than by an assignment
(``for NAME``, ``(( NAME = 1 ))``, ``${NAME:=VALUE}``, ``export``, ``unset``) are read here too,
and so are ``BASH_CMDS[NAME]=PATH`` and ``BASH_ALIASES[NAME]=CODE``, which make ``NAME`` an alias.

Each command gives a ``bash`` pattern, its text, and an "always" pattern, its prefix by arity plus
`` *`` (``_arity.py``). Words are brace-expanded first (``{.,.}./x`` is ``../x``). Paths of file
commands and redirections are resolved against the working directory (followed through ``cd``,
logically as bash does, so ``cd link/..`` is where the link sits; ``~``, ``~+``, ``..`` and symlinks
resolved: ``_shell_paths.py``); any outside the workspace gives an ``external_directory`` pattern
``/dir/*``. A value only known at run time (``$VAR``, ``$(...)``, ``~-``, a glob reaching up, a
script a shell reads from a pipe) counts as outside, named by its text; "always" approves the folder,
or that text exactly (``$HOME/\\*``, not every path under ``$HOME``). A file in a git folder the command
changes, a git setting that runs a program or a job for later gives a ``protected`` pattern
(``_protected.py``). ``permission_requests`` returns the ``external_directory`` request (if
any) first, then ``bash``, then ``protected`` (if any: a configured deny of the command wins).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Sequence
from pathlib import Path

from tree_sitter import Node

from ._protected import request as protected
from ._shell_commands import COMMAND_TABLES, Analysis
from ._shell_evaluation import Evaluation, numeric
from ._shell_parse import parse
from ._shell_paths import State, glob_options
from ._shell_specs import setting
from ._shell_words import Word, expand, stdin_feed, stdin_script, word
from .permission import PermissionRequest, literal

MAX_DEPTH = 8  # nested bash -c / eval strings analyzed before giving up (then: exact + outside)
#: Nodes nested in one another ($(...) in $(...), subshells, ...) walked before giving up on the
#: innermost, as for ``MAX_DEPTH`` (its siblings are still analyzed): far below Python's stack.
MAX_NODE_DEPTH = 100
#: Labels before a text asked for exactly, as a whole: one the grammar cannot parse, one nested
#: deeper than ``MAX_DEPTH``. No rule for a prefix matches them.
UNPARSED = "(unparsed)"
#: Unparsed text that may name a protected path: its names, or an extglob pattern (``@(.g*)``).
_MAY_PROTECT = re.compile(r"\.git|lspilot|husky|lefthook|hook|[?*+@!]\(", re.IGNORECASE)

TOO_DEEP = "(nested too deep)"
_FORKS = frozenset({"subshell", "pipeline", "command_substitution", "process_substitution"})
_REDIRECTS = frozenset({"file_redirect", "herestring_redirect", "heredoc_redirect"})
_DUPS = frozenset({">&", "<&", ">&-", "<&-"})
_ARITHMETIC = frozenset({"arithmetic_expansion", "c_style_for_statement"})  # and (( ... ))
_ENTRY = re.compile(r"\[([^]]*)\]=(.*)", re.DOTALL)  # [NAME]=VALUE in an array's value
_COMMAND_NAME = re.compile(r"[^\s/$`'\"\\]+")  # a command name a table entry may give


class _Visitor(Evaluation):
    def __init__(self, root: Path, trusted: Sequence[Path]) -> None:
        super().__init__(root, trusted)
        self.depth = 0
        self.node_depth = 0

    # -- the tree --------------------------------------------------------------------------------
    def script(self, text: str, state: State) -> None:
        if self.depth > MAX_DEPTH:
            self.too_deep(text)
            return
        source = parse(text)  # as bash's lexer reads it: the tree's ranges are source.text's
        if source.tree.root_node.has_error or not source.complete:
            self._exactly(UNPARSED, source.text.strip())  # the shell may read it otherwise
            if _MAY_PROTECT.search(source.text):  # bash -O extglob: @(.git)/config
                self.protect(f"{UNPARSED} {source.text.strip()}")
        self.depth += 1
        self._children(source.tree.root_node, state)
        self.depth -= 1

    def _nested(self, node: Node, text: str, state: State) -> None:
        if self.depth > MAX_DEPTH:
            self.too_deep(text)
            return
        self.depth += 1
        self._node(node, state)
        self.depth -= 1

    def too_deep(self, text: str) -> None:
        """``text`` nests too deep to be analyzed: asked exactly, as reaching anywhere, and as
        changing what later commands run."""
        self._exactly(TOO_DEEP, text.strip())
        self._outside(text.strip())
        self.protect(f"{TOO_DEEP} {text.strip()}")

    def _exactly(self, label: str, text: str) -> None:
        """Record ``text`` as it is, so that a rule denying it applies, and exactly behind
        ``label``, which no rule for a prefix (``ls *``) matches: only a rule for every command
        (``*``) or an approval of this very text allows it."""
        self._record(text, None)
        self._record(f"{label} {text}", None)

    def _children(self, node: Node, state: State) -> None:
        for child in node.named_children:
            self._node(child, state)

    def _node(self, node: Node, state: State) -> None:
        if self.node_depth >= MAX_NODE_DEPTH:
            self.too_deep(_text(node))
            return
        self.node_depth += 1
        try:
            self._visit(node, state)
        finally:
            self.node_depth -= 1

    def _visit(self, node: Node, state: State) -> None:
        kind = node.type
        if kind in ("command", "command_name"):  # a bare command_name: in an ERROR ({rm,x})
            self._command_node(node, state, [])
        elif kind == "redirected_statement":
            extras: list[Node] = []
            redirects = node.children_by_field_name("redirect")
            body = node.child_by_field_name("body")
            if body is not None and body.type == "list":  # the grammar's `cd DIR && (cat > f)`:
                self._fed(body, state, stdin_feed(redirects))  # f is opened in DIR, after the cd
            for redirect in redirects:
                extras += self._redirect(redirect, state)
            if body is not None and body.type == "command":
                self._command_node(body, state, extras, stdin_script(redirects), stdin_feed(redirects))
            elif body is not None and body.type != "list":  # { ...; } < FILE: what is inside reads it
                self._fed(body, state, stdin_feed(redirects))
        elif kind == "pipeline":  # each command after the first reads the one before
            inner = state.fork()
            for index, child in enumerate(node.named_children):
                inner.fed, inner.stdin_file = (True, None) if index else (inner.fed, inner.stdin_file)
                self._node(child, inner)
        elif kind in _FORKS:
            self._children(node, state.fork())
        elif kind == "function_definition":  # its body runs where it is called: what it sets counts
            inner = state.fork()
            inner.fed, inner.stdin_file = True, None  # ... and reads whatever stdin it is given there
            self._children(node, inner)
            state.unknown |= inner.unknown
        elif kind in _REDIRECTS:
            self._redirect(node, state)
        elif kind == "variable_assignment":
            if self._assignment(node, state):
                self._record(_text(node), None)
        elif kind in ("declaration_command", "unset_command"):  # export, declare, local, unset, ...
            self._declaration(node, state)
        elif kind == "for_statement" or (
            kind == "expansion" and any(c.type in (":=", "=") for c in node.children)
        ):
            if kind == "expansion":
                self._evaluated(node, state)
            self._loop_or_default(node, state)
        else:  # lists, compound statements, loops, conditionals, words with substitutions inside
            if kind in _ARITHMETIC or (kind == "compound_statement" and node.children[0].type == "(("):
                self._arithmetic(node, state)
            self._evaluated(node, state)
            self._children(node, state)

    def _assignment(self, node: Node, state: State) -> bool:
        """Visit the value's substitutions; True when the variable changes what programs run."""
        value = node.child_by_field_name("value")
        if value is not None:
            self._node(value, state)
        self.assigned(node, state)
        name = node.child_by_field_name("name")
        target = None if name is None else _text(name).partition("[")[0]  # PATH[0]=x
        if target in COMMAND_TABLES and name is not None and value is not None:
            return self._command_table(target or "", name, value, state)
        was_number = target in state.numbers
        changes = self.sets(target, state)
        arithmetic = node.parent is not None and node.parent.type == "c_style_for_statement"
        number = value is None or numeric(value)
        appended = any(c.type == "+=" for c in node.children)  # x+=5 appends: a number if x was
        plain = target is not None and name is not None and target == _text(name)
        integer = target in state.integers  # declare -i x: whatever it is given, it holds a number
        if plain and target and (arithmetic or integer or (number and (was_number or not appended))):
            state.numbers.add(target)  # x=5, x=$((y)), for ((i = 0; ...)): holds a number
        return changes

    def _command_table(self, table: str, name: Node, value: Node, state: State) -> bool:
        """``BASH_CMDS[NAME]=PATH`` makes ``NAME`` run ``PATH`` (as ``hash -p`` does) and
        ``BASH_ALIASES[NAME]=CODE`` makes it an alias, also as ``BASH_CMDS=([NAME]=PATH ...)``:
        ``NAME`` is read as its alias from then on. A name or entry only known at run time makes
        every later command's program unknown (``sets``)."""
        entries: list[tuple[str | None, Word]] = []
        if name.type == "subscript":
            index = name.child_by_field_name("index")
            entries.append((None if index is None else word(index).value, word(value)))
        elif value.type == "array":
            for item in map(word, value.named_children):  # [NAME]=$X: NAME runs what $X holds
                match = _ENTRY.fullmatch(item.raw if item.value is None else item.value)
                entry = Word(match[2], None if item.value is None else match[2]) if match else item
                entries.append((match[1] if match else None, entry))
        else:
            entries.append((None, word(value)))
        for key, item in entries:
            if key is None or not _COMMAND_NAME.fullmatch(key):
                return self.sets(table, state)
            code = item.raw if item.value is None else item.value
            self.aliases[key] = code if table == "BASH_ALIASES" or item.value is None else shlex.quote(code)
        return True

    def _declaration(self, node: Node, state: State) -> None:
        """``export``, ``declare``, ``local``, ``readonly``, ``typeset``, ``unset``: read as the
        setter commands are; one that sets a variable changing what runs is recorded exactly, as
        itself and after ``(sets NAME)`` (see ``Commands.command``)."""
        keyword = _text(node.children[0])
        words = [Word(keyword, keyword)]
        previous: Node | None = None
        for child in node.named_children:  # options, NAME, NAME=VALUE: visit what VALUE runs
            value = child.child_by_field_name("value") if child.type == "variable_assignment" else child
            if value is not None:
                self._node(value, state)
            item = word(child)
            if _subscript_of(previous, child, item):  # unset a[i]: the grammar splits the word
                last = words[-1]
                joined = None if last.value is None or item.value is None else last.value + item.value
                item = Word(last.raw + item.raw, joined, last.glob or item.glob)
                words.pop()
            words.append(item)
            previous = child
        names = self.setter(words, state)
        self.declared(keyword, node, state)
        if names:
            self._record(_text(node), None)
            self._record(f"{setting(names)} {_text(node)}", None)

    def _loop_or_default(self, node: Node, state: State) -> None:
        """``for NAME in WORDS`` and ``select NAME in WORDS`` set NAME, and so does
        ``${NAME:=VALUE}`` (``${NAME=VALUE}``) when NAME is empty (unset)."""
        if node.type == "for_statement":
            name = node.child_by_field_name("variable")
            body = node.child_by_field_name("body")
            head = [c for c in node.children if body is None or c.end_byte <= body.start_byte]
            text = " ".join(_text(c) for c in head if c.type != ";")
        else:  # ${!REF:=VALUE} sets the variable REF names
            name = node.named_children[0] if node.children[1].type != "!" else None
            name = name.named_children[0] if name is not None and name.type == "subscript" else name
            text = _text(node)
        was_number = name is not None and _text(name) in state.numbers
        if self.sets(None if name is None else _text(name), state):
            self._record(text, None)
        counts = node.type == "for_statement" and name is not None and self.numbers_only(node, state)
        if counts and name is not None:
            state.numbers.add(_text(name))
        self._children(node, state)
        if counts and name is not None and not was_number and not self.runs_once(node):
            state.numbers.discard(_text(name))  # no index to loop over: it keeps its value

    def _redirect(self, node: Node, state: State) -> list[Node]:
        """Check a redirection's target; returns words the grammar attached to it by mistake
        (``echo a > f b``: ``b`` is echo's argument)."""
        if node.type != "file_redirect":  # a heredoc's words after its start are the command's
            words = node.children_by_field_name("argument") if node.type == "heredoc_redirect" else []
            more: list[Node] = []
            for child in node.named_children:
                if child.type == "file_redirect":  # <<EOF > f b: b too
                    more += self._redirect(child, state)
                elif child not in words:
                    self._node(child, state)
            row = node.start_point.row
            for body in [item for item in words + more if item.end_point.row != row]:
                self._node(body, state)  # a body line the grammar read as words (misread): visited
            return [item for item in words + more if item.end_point.row == row]
        targets = node.children_by_field_name("destination")
        if not targets:
            return []
        target = targets[0]
        self._node(target, state)
        operator = next((_text(c) for c in node.children if not c.is_named), "")
        duplicate = operator in _DUPS and (target.type == "number" or _text(target) == "-")
        if not duplicate and not (target.type == "number" and operator not in (">", ">>", "<", ">|")):
            reads, self.reads = self.reads, operator in ("<", "<&")  # the rest may write it
            for item in expand(word(target)):
                self.path(item, state)
            self.reads = reads
        return targets[1:]

    def _fed(self, node: Node, state: State, feed: tuple[bool, Word | None]) -> None:
        """Visit ``node`` with stdin fed by a redirection (``stdin_feed``), if it is."""
        saved = state.fed, state.stdin_file
        if feed[0]:
            state.fed, state.stdin_file = feed
        self._node(node, state)
        if feed[0]:
            state.fed, state.stdin_file = saved

    def _command_node(
        self,
        node: Node,
        state: State,
        extras: list[Node],
        stdin: str | None = None,
        feed: tuple[bool, Word | None] = (False, None),
    ) -> None:
        words: list[Word] = []
        hijack: list[str] = []
        trailing = list(extras)
        own = [c for c in node.named_children if c.type in _REDIRECTS]
        stdin = stdin_script(own) or stdin
        feed = own_feed if (own_feed := stdin_feed(own))[0] else feed
        end = -1  # where the last word ended
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
                    self._node(target, state)
                item = word(target)
                # no blank between them: one word, which the grammar split (.[\!g]it/hooks/)
                if words and target.start_byte == end:
                    words[-1] = _joined(words[-1], item)
                else:
                    words.append(item)
                end = target.end_byte
                continue
            end = -1
        for extra in trailing:
            self._node(extra, state)
            words.append(word(extra))
        first = words[0] if words else None
        if first is not None and first.value == first.raw and _split_brace(node):  # {rm,x}
            words[0] = Word("{" + first.raw, "{" + first.raw, glob=True)
        if not words:
            return
        saved = state.fed, state.stdin_file
        if feed[0]:
            state.fed, state.stdin_file = feed
        expanded = [item for written in words for item in expand(written)]
        self.command(expanded, state, " ".join(hijack), stdin=stdin, written=words)
        if feed[0] and [w.value for w in words] != ["exec"]:  # exec < FILE: the rest reads it too
            state.fed, state.stdin_file = saved


def _subscript_of(name: Node | None, node: Node, item: Word) -> bool:
    """Whether ``node`` (read as ``item``) is the rest of the word the variable ``name`` starts,
    a subscript (``a[i]``, ``a"[i]"``, ``a""[i]``) or what is only known at run time."""
    return (
        name is not None
        and name.type == "variable_name"
        and node.start_byte == name.end_byte
        and (item.value is None or item.value.startswith("["))
    )


def _joined(left: Word, right: Word) -> Word:
    value = None if left.value is None or right.value is None else left.value + right.value
    return Word(left.raw + right.raw, value, glob=left.glob or right.glob, tilde=left.tilde)


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


def _glob_settings(command: str) -> set[str]:
    """How globs may match anywhere in ``command``: a ``shopt -s dotglob`` (or ``globstar``,
    ``GLOBIGNORE``, an option only known at run time) in a loop's body or a trap may apply before
    the analysis reads it, so its mention anywhere counts from the start."""
    flat = re.sub(r"[\\'\"]", "", command)  # dot''glob is dotglob
    names: list[str | None] = [name for name in ("dotglob", "globstar") if name in flat]
    names += ["dotglob"] if "GLOBIGNORE" in flat else []
    names += [None] if "$" in flat and ("shopt" in flat or "BASHOPTS" in flat) else []
    return glob_options(names) if names else set()


def analyze(command: str, cwd: Path, root: Path, trusted: Sequence[Path] = ()) -> Analysis:
    """The commands ``command`` runs and the outside paths it touches, run in ``cwd``."""
    visitor = _Visitor(root.resolve(), [t.resolve() for t in trusted])
    state = State(cwd.resolve(), str(cwd.resolve()))
    if os.environ.get("CDPATH"):  # inherited by the shell: where cd NAME goes is not worked out here
        state.unknown.add("CDPATH")
    state.unknown |= _glob_settings(command)  # set in a loop or a trap, it may apply before it is read
    visitor.path(Word(str(cwd), str(cwd)), state)  # running outside the workspace is outside
    try:
        visitor.script(command, state)
        for trap in visitor.traps:  # analyzed where it was set; it runs from where the script ends
            visitor.script(trap, state.fork())
        visitor.check_sources()
    except RecursionError:  # nested deeper than Python's stack ($(...) inside $(...) hundreds deep)
        visitor.too_deep(command)
    if not visitor.result.commands and command.strip():
        visitor.result.commands.append((command.strip(), literal(command.strip())))
    return visitor.result


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))


def permission_requests(
    command: str, cwd: Path, root: Path, trusted: Sequence[Path] = ()
) -> list[PermissionRequest]:
    """The asks for running ``command`` in ``cwd``: ``external_directory`` (if any), ``bash``,
    then ``protected`` (if any)."""
    return requests_for(command, analyze(command, cwd, root, trusted))


def requests_for(command: str, result: Analysis) -> list[PermissionRequest]:
    """The asks for ``command``, analyzed as ``result``."""
    requests: list[PermissionRequest] = []
    meta = {"command": command}
    if result.outside:
        requests.append(
            PermissionRequest(
                "external_directory",
                list(result.outside),
                list(result.outside.values()),
                f"Command reaches outside the workspace: {', '.join(result.outside)}",
                meta,
            )
        )
    patterns = _unique(p for p, _ in result.commands) or [command.strip()]
    always = _unique(a for _, a in result.commands) or [literal(p) for p in patterns]
    requests.append(PermissionRequest("bash", patterns, always, f"Run: {command.strip()}", dict(meta)))
    if result.protected:
        what = (
            "Command changes what later commands or sessions run "
            "(git's or lspilot's own files or settings, jobs for later)"
        )
        requests.append(protected(result.protected, f"{what}: {', '.join(result.protected)}", dict(meta)))
    return requests
