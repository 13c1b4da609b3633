"""What evaluating a value runs: arithmetic, indirection, and substitutions the grammar leaves as text.

Bash evaluates a variable's value as an arithmetic expression where arithmetic reads the variable
(``(( x ))``, ``$(( x + 1 ))``, ``for (( ...; i < n; ... ))``, ``let``, ``[[ x -eq y ]]``, an
indexed array's subscript, ``${x:OFFSET:LENGTH}``, a value assigned to a ``declare -i``
variable, the name ``-v`` tests), as a name in ``${!x}`` and as a prompt in ``${x@P}``; a value
such as ``a[$(cmd)]`` then runs ``cmd`` (an array subscript is expanded when evaluated). Values
are not followed here, so such a read of a variable not known to hold a number (one set by
arithmetic or to a literal number earlier in the command, a ``for`` variable over numbers, or
one such as ``RANDOM``: ``NUMERIC_VARIABLES``), or of a command's output (``$(( $(cmd) ))``),
is asked exactly behind ``(evaluates NAME)``: ``echo $((n + 1))`` asks ``echo $((n + 1))``
(``echo *``) and ``(evaluates n) $((n + 1))``. Arithmetic given as words (``let EXPR``, the
operands of ``[[ A -eq B ]]``) is parsed as ``(( EXPR ))``, so what its subscripts run is seen
(``let 'a[$(cmd)]'``). Assignments in arithmetic set their variables (``(( PATH = 1 ))``:
``Commands.sets``).

tree-sitter-bash leaves some words as text: the operands of ``${x#WORD}``, ``${x%WORD}``,
``${x^WORD}``, ``${x,WORD}``, a ``${x:-WORD}`` holding backticks, a ``[[ =~ ]]`` regex. The
substitutions in such text (``$(...)``, backticks, ``$((...))``) are found by their brackets
(``substitutions``) and analyzed as the scripts they run; its parameter expansions
(``${x#${a[i]}}``) by their braces (``expansions``), and read as any other.
"""

from __future__ import annotations

import re
from abc import abstractmethod

from tree_sitter import Node

from ._shell_parse import parse
from ._shell_paths import State
from ._shell_sessions import Sessions
from ._shell_specs import NUMERIC_VARIABLES
from ._shell_words import Word, word

_ASSIGNING = frozenset({"=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "^=", "|="})
_STEPS = frozenset({"++", "--"})
_NAME = re.compile(r"[A-Za-z_]\w*|\d+")  # a variable, or a positional parameter
_NUMBER = re.compile(r"[-+]?\d+")
_ELEMENT = re.compile(r"([A-Za-z_]\w*)\[(.*)\]", re.DOTALL)  # a[INDEX]
_ENTRY = re.compile(r"\[(.*?)\]\+?=", re.DOTALL)  # [INDEX]=VALUE of a compound assignment
_NUMERIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_ASSOCIATIVE = frozenset({"BASH_ALIASES", "BASH_CMDS"})  # bash's own associative arrays
_DECLARES = frozenset({"declare", "typeset", "local", "readonly"})  # those that give attributes
_OPAQUE = frozenset({"word", "regex"})  # nodes the grammar may leave holding substitutions as text
_SUBSTITUTION = re.compile(r"\\.|`|\$\(|\$\[", re.DOTALL)


def _text(node: Node) -> str:
    return (node.text or b"").decode(errors="replace")


class Evaluation(Sessions):
    """Arithmetic, ``${!x}``/``${x@P}`` and substitutions left as text, for the tree walk
    (``_shell._Visitor``, whose ``_node`` visits a node)."""

    @abstractmethod
    def _node(self, node: Node, state: State) -> None:
        """Visit ``node`` of the tree."""

    @abstractmethod
    def _nested(self, node: Node, text: str, state: State) -> None:
        """Visit ``node``, parsed out of ``text``, as a script nested one level deeper."""

    def _arithmetic(self, node: Node, state: State) -> None:
        """``(( ))``, ``$(( ))`` and ``for (( ))``: the variables it evaluates, and what it sets."""
        body = node.child_by_field_name("body")
        read: list[str] = []
        for child in node.named_children:
            if body is None or child.start_byte < body.start_byte:
                self._expression(child, state, read)
        close = next((c.end_byte for c in node.children if c.type == "))"), node.end_byte)
        text = (node.text or b"")[: close - node.start_byte].decode(errors="replace")
        self._evaluates(read, text)

    def evaluate(self, item: Word, state: State, *, sets: bool = True) -> None:
        """Arithmetic given as a word (``let EXPR``, ``[[ A -eq B ]]``), read as ``(( EXPR ))``:
        what it evaluates, and (with ``sets``) what it sets; and what its substitutions run when
        its value is literal (``let 'a[$(cmd)]'``: otherwise the walk visits them). Text that is
        no arithmetic counts as evaluating anything (``?``)."""
        read: list[str] = []
        self._parsed(item, state, read, sets=sets)
        self._evaluates(read, item.raw if item.value is None else item.value)

    def _parsed(self, item: Word, state: State, read: list[str], *, sets: bool = True) -> None:
        """``item`` read as ``(( ITEM ))``: what it evaluates into ``read`` (``?`` when it is no
        arithmetic); when it is literal text (``'a[$(cmd)]'``), what its substitutions run (the
        walk does not see them: for the grammar they are text)."""
        text = item.raw if item.value is None else item.value
        root = parse(f"(( {text} ))").tree.root_node
        node = root.named_children[0] if root.named_child_count == 1 else None
        if node is None or root.has_error or node.type != "compound_statement":
            read.append("?")
            return
        for child in node.named_children:
            self._expression(child, state, read, sets=sets)
        for child in node.named_children if item.value is not None else ():
            self._node(child, state)

    def _arithmetic_node(self, node: Node, state: State, read: list[str]) -> None:
        """A node bash evaluates as arithmetic (an index, an offset): the grammar parses some as
        expressions, and leaves others as a word (``i+1``) or a word with expansions (``$i``,
        whose value is evaluated)."""
        if node.type == "number":
            return
        if node.type in ("word", "raw_string", "simple_expansion", "string", "concatenation", "expansion"):
            self._parsed(word(node), state, read)
        else:
            self._expression(node, state, read)

    def _subscript(self, node: Node, state: State, read: list[str]) -> None:
        """``a[INDEX]``: INDEX is evaluated as arithmetic unless ``a`` was declared associative in
        the command or is one of bash's own (an array cannot come from the environment, so every
        other one is indexed); ``@`` and ``*`` are all elements."""
        name, index = node.named_children[0], node.child_by_field_name("index")
        if index is not None and _text(index) not in ("@", "*") and not _associative(_text(name), state):
            self._arithmetic_node(index, state, read)

    def _expansion(self, node: Node, state: State) -> None:
        """``${a[INDEX]}`` evaluates INDEX, and ``${x:OFFSET:LENGTH}`` its offset and length, as
        arithmetic: ``i='x[$(cmd)]'; echo ${a[i]}`` runs ``cmd``."""
        read: list[str] = []
        substring = False
        for child in node.children:
            if child.type == "subscript":
                self._subscript(child, state, read)
            elif not child.is_named:
                substring = child.type == ":"  # ${x:1:2}; not :- := :? :+
            elif substring:
                self._arithmetic_node(child, state, read)
        self._evaluates(read, _text(node))

    def subscripted(self, item: Word, state: State) -> None:
        """A variable's name a builtin sets or tests (``read NAME``, ``printf -v NAME``, ``unset
        NAME``, ``test -v NAME``): a subscript in it (``a[i]``) is evaluated as arithmetic, and
        so may be one in a name only known at run time (``-v "$x"``)."""
        text = item.raw if item.value is None else item.value
        bare = text.strip("\"'") if item.value is None else text
        read: list[str] = []
        if element := _ELEMENT.fullmatch(bare):
            index = element[2]
            if index not in ("@", "*") and not _associative(element[1], state):
                self._parsed(Word(index, index if item.value is not None else None), state, read)
        elif item.value is None:
            self._parsed(item, state, read)
        self._evaluates(read, text)

    def numbers_only(self, loop: Node, state: State) -> bool:
        """Whether ``for NAME in WORDS`` gives NAME only numbers: literal ones, ``{1..9}``, or an
        indexed array's indices (``"${!a[@]}"``)."""
        words = _loop_words(loop)
        return bool(words) and all(self._numbers(w, state) for w in words)

    def runs_once(self, loop: Node) -> bool:
        """Whether ``for NAME in WORDS`` runs at least once: literal words (an array may be empty)."""
        return any(w.type in ("number", "brace_expression", "word") for w in _loop_words(loop))

    def _numbers(self, node: Node, state: State) -> bool:
        """A word of ``for NAME in WORDS`` that gives only numbers."""
        if node.type == "number":
            return True
        if node.type == "brace_expression":
            return all(c.type == "number" for c in node.named_children)
        inner = node.named_children[0] if node.type == "string" and node.named_child_count == 1 else node
        if inner.type != "expansion" or [c.type for c in inner.children[:2]] != ["${", "!"]:
            return False
        array = inner.named_children[0] if inner.named_children else None
        if array is None or array.type != "subscript" or len(array.named_children) < 2:
            return False
        name, index = _text(array.named_children[0]), _text(array.named_children[1])
        return index in ("@", "*") and not _associative(name, state)

    def declared(self, keyword: str, node: Node, state: State) -> None:
        """What a declaration makes of the variables it names: integers (``declare -i``, whose
        values it evaluates), associative arrays (``-A``); ``unset`` ends both."""
        options = [_text(c) for c in node.named_children if _text(c).startswith(("-", "+"))]
        flags = {f for o in options if o.startswith("-") for f in o[1:]} if keyword in _DECLARES else set()
        for child in node.named_children:
            if child.type not in ("variable_name", "variable_assignment", "word") or _text(child) in options:
                continue
            named = child.child_by_field_name("name") if child.type == "variable_assignment" else child
            name = "" if named is None else _text(named)
            if keyword == "unset":
                state.integers.discard(name)
                state.associative.discard(name)
            if "i" in flags:
                state.integers.add(name)
            if "A" in flags:
                state.associative.add(name)
            if child.type == "variable_assignment":
                self.assigned(child, state, subscript=False)  # the setter's: Commands.setter
                value = child.child_by_field_name("value")
                if name in state.integers or (value is not None and numeric(value)):
                    state.numbers.add(name)  # local i=0, declare -i n=$x

    def assigned(self, node: Node, state: State, *, subscript: bool = True) -> None:
        """``a[INDEX]=VALUE`` and ``a=([INDEX]=VALUE)`` evaluate INDEX (an indexed array's);
        assigning to a variable declared ``-i`` evaluates the value."""
        name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
        read: list[str] = []
        if subscript and name is not None and name.type == "subscript":
            self._subscript(name, state, read)
        target = "" if name is None else _text(name)
        if value is not None and value.type == "array" and not _associative(target, state):
            for item in map(word, value.named_children):  # a=([INDEX]=VALUE ...), [INDEX]+=VALUE
                entry = _ENTRY.match(item.raw if item.value is None else item.value)
                if entry is not None:
                    self._parsed(Word(entry[1], entry[1] if item.value is not None else None), state, read)
        elif value is not None and target in state.integers:
            self._arithmetic_node(value, state, read)
        self._evaluates(read, _text(node))

    def _evaluates(self, names: list[str], text: str) -> None:
        if names:
            self._record(f"(evaluates {' '.join(dict.fromkeys(names))}) {text}", None)

    def _expression(self, node: Node, state: State, read: list[str], *, sets: bool = True) -> None:
        """Walk an arithmetic expression in the order bash evaluates it: the variables read into
        ``read`` (unless known to hold numbers), assignments made (they leave numbers)."""
        kind = node.type
        operator = node.child_by_field_name("operator")
        operation = _text(operator) if operator is not None else ""
        if kind == "binary_expression" and operation in _ASSIGNING:
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if right is not None:
                self._expression(right, state, read, sets=sets)
            if left is not None:
                self._assigned(node, left, state, read, reads=operation != "=", sets=sets)
        elif kind in ("postfix_expression", "unary_expression") and operation in _STEPS:
            if node.named_children:
                self._assigned(node, node.named_children[0], state, read, reads=True, sets=sets)
        elif kind == "variable_assignment":  # for (( i = 0; ...)): made a number (see _assignment)
            value, name = node.child_by_field_name("value"), node.child_by_field_name("name")
            if value is not None:
                self._expression(value, state, read, sets=sets)
            if name is not None:
                state.numbers.add(_text(name))
        elif kind in ("variable_name", "word") and _NAME.fullmatch(_text(node)):
            self._read(_text(node), state, read)
        elif kind == "expansion" and node.children[1].type == "#":  # ${#x}: a length
            return
        elif kind == "command_substitution":  # it runs (the walk visits it); its output is evaluated
            read.append(_text(node))
        elif kind != "process_substitution":
            for child in node.named_children:
                self._expression(child, state, read, sets=sets)

    def _assigned(
        self, node: Node, target: Node, state: State, read: list[str], *, reads: bool, sets: bool
    ) -> None:
        """``target`` assigned by ``node`` (``x = 1``, ``x += y``, ``x++``): read first when
        ``reads``; a subscript's index is evaluated. ``(( PATH = 1 ))`` sets PATH; a target not
        a plain name (``(( $x = 1 ))``) may be any variable."""
        name = target.named_children[0] if target.type == "subscript" else target
        index = target.child_by_field_name("index") if target.type == "subscript" else None
        if index is not None:
            self._expression(index, state, read, sets=sets)
        plain = _text(name) if name.type in ("variable_name", "word") else None
        if reads and plain is not None:
            self._read(plain, state, read)
        if sets and self.sets(plain, state):
            self._record(_text(node), None)
        if plain is not None and target.type != "subscript":
            state.numbers.add(plain)

    def _read(self, name: str, state: State, read: list[str]) -> None:
        if name not in state.numbers and name not in NUMERIC_VARIABLES:
            read.append(name)

    def _evaluated(self, node: Node, state: State) -> None:
        """What a node of the walk evaluates or leaves as text: ``${!x}`` and ``${x@P}`` evaluate
        ``x``; ``[[ A -eq B ]]`` its operands as arithmetic; a word or regex the grammar left as
        text may hold substitutions."""
        kind = node.type
        if kind == "expansion":
            self._expansion(node, state)
            operators = [c.type for c in node.children if not c.is_named]
            name = next((c for c in node.named_children if c.type == "variable_name"), None)
            listing = operators[2:4] in (["*", "}"], ["@", "}"])  # ${!x*}: the names starting with x
            prompt = "@" in operators and node.children[-2].type == "P"
            if name is not None and ((operators[1:2] == ["!"] and not listing) or prompt):
                read: list[str] = []
                self._read(_text(name), state, read)
                self._evaluates(read, _text(node))
        elif kind == "unary_expression" and _text(node.children[0]) == "-v" and _test(node) is not None:
            if len(node.named_children) > 1:
                self.subscripted(word(node.named_children[1]), state)
        elif kind == "binary_expression" and _in_double_brackets(node):
            tests = [c for c in node.children if c.type == "test_operator" and _text(c) in _NUMERIC_TESTS]
            for operand in node.named_children if tests else ():
                if operand.type != "test_operator" and not _NUMBER.fullmatch(_text(operand)):
                    self.evaluate(word(operand), state)
        elif kind in _OPAQUE and not node.named_child_count:
            text = _text(node)
            for script in substitutions(text):
                self.script(script, state.fork())
            for nested in expansions(text):  # ${x#${a[i]}}: what ${a[i]} evaluates
                self._nested(nested, text, state)


def numeric(value: Node) -> bool:
    """Whether an assigned value is a number: literal, arithmetic (``$((...))``), or a length
    (``${#a[@]}``)."""
    kind = value.type
    if kind == "string" and value.named_child_count == 1:
        return numeric(value.named_children[0])
    return kind in ("number", "arithmetic_expansion") or (
        kind == "expansion" and value.child_count > 1 and value.children[1].type == "#"
    )


def _loop_words(loop: Node) -> list[Node]:
    """The words of ``for NAME in WORDS``."""
    body = loop.child_by_field_name("body")
    return [w for w in loop.named_children[1:] if body is None or w.end_byte <= body.start_byte]


def _associative(name: str, state: State) -> bool:
    """Whether array ``name`` takes strings as subscripts, not arithmetic."""
    return name in _ASSOCIATIVE or name in state.associative


def _test(node: Node) -> Node | None:
    """The ``[[ ]]`` or ``[ ]`` that ``node`` is a test of."""
    top = node.parent
    while top is not None and top.type in (
        "binary_expression",
        "parenthesized_expression",
        "unary_expression",
    ):
        top = top.parent
    return top if top is not None and top.type == "test_command" else None


def _in_double_brackets(node: Node) -> bool:
    """Whether ``node`` is a test of ``[[ ]]``, which evaluates ``-eq`` operands as arithmetic
    (``[`` and ``test`` read them as numbers)."""
    top = _test(node)
    return top is not None and top.children[0].type == "[["


def expansions(text: str) -> list[Node]:
    """The parameter expansions (``${...}``) in ``text``, found by their braces and parsed."""
    found: list[Node] = []
    for start, end in _expansion_spans(text):
        command = parse(f": {text[start:end]}").tree.root_node.named_children[0]
        found += [c for c in command.named_children[1:] if c.type == "expansion"]
    return found


def _expansion_spans(text: str) -> list[tuple[int, int]]:
    """Where the outermost ``${...}`` of ``text`` start and end, as bash reads the quotes: none
    in ``'...'`` or ``$'...'``, a backslash escaping the next character, and inside each the
    braces not quoted counted (quoting starts afresh there). An unclosed one is none: bash
    reports a bad substitution and runs nothing."""
    spans: list[tuple[int, int]] = []
    outer: list[bool] = []  # for each open brace, whether it was opened inside "..."
    double, start, at = False, 0, 0
    while at < len(text):
        char = text[at]
        if char == "\\":
            at += 2
        elif not double and (char == "'" or text.startswith("$'", at)):
            at = _after_quote(text, at)
        elif text.startswith("${", at):
            start = at if not outer else start
            outer.append(double)
            double, at = False, at + 2
        else:
            if char == '"':
                double = not double
            elif char == "{" and outer and not double:
                outer.append(double)
            elif char == "}" and outer and not double:
                double = outer.pop()
                if not outer:
                    spans.append((start, at + 1))
            at += 1
    return spans


def _after_quote(text: str, at: int) -> int:
    """Where the ``'...'`` (or ``$'...'``, whose backslashes escape) starting at ``at`` ends."""
    escapes = text[at] == "$"
    at += 2 if escapes else 1
    while at < len(text) and text[at] != "'":
        at += 2 if escapes and text[at] == "\\" else 1
    return at + 1


def substitutions(text: str) -> list[str]:
    """The scripts the substitutions in ``text`` run, found by their brackets: ``$(CMD)`` as
    ``(CMD)``, ``$((EXPR))`` as ``((EXPR))``, ``$[EXPR]`` as ``((EXPR))``, backticks as what they
    hold. Quotes are not told apart: a quoted one counts too."""
    found: list[str] = []
    at = 0
    while (match := _SUBSTITUTION.search(text, at)) is not None:
        start, token = match.start(), match[0]
        at = match.end()
        if token.startswith("\\"):
            continue
        if token == "`":
            end = at
            while end < len(text) and text[end] != "`":
                end += 2 if text[end] == "\\" else 1
            found.append(re.sub(r"\\([$`\\])", r"\1", text[at:end]))
            at = end + 1
            continue
        opening, closing = ("(", ")") if token == "$(" else ("[", "]")
        depth, end = 0, start + 1
        for end in range(start + 1, len(text)):
            depth += (text[end] == opening) - (text[end] == closing)
            if depth == 0:
                break
        inner = text[start + 1 : end + 1]
        found.append(inner if token == "$(" else f"(({inner[1:-1]}))")
        at = end + 1
    return found
