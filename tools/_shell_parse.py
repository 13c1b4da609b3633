"""Shell text as bash's lexer reads it, parsed with tree-sitter-bash (one parser, reused).

tree-sitter-bash reads a backslash-newline as a blank between two words, and so a backslash
before a blank: ``r\\<newline>m x`` as ``r m x``, ``echo \\ #x; rm y`` as ``echo`` and a comment.
Bash's lexer removes a backslash-newline (a line continuation) wherever it is not quoted by single
quotes (``'...'``, ``$'...'``), in a comment or in a quoted heredoc (``<<'EOF'``), so that
``r\\<newline>m x`` is ``rm x`` and ``.gi\\<newline>t/config`` is ``.git/config``; and an escaped
blank (``\\ ``, ``\\<tab>``, ``\\<CR>``) is part of its word, outside quotes. ``parse`` rewrites
the text so that the grammar reads it as bash does (``joined``: continuations removed, an escaped
blank outside quotes written quoted, ``' '``) and parses that: the analysis reads the rewritten
text throughout, so the ranges of its tree are that text's.

tree-sitter-bash also runs a command on across a newline, which ends it in bash: a pipeline of
three commands and, on the lines after it, a command with a heredoc (``ls | sort | cat`` newline
``rm -rf x <<EOF``) read as one pipeline whose last command is ``cat rm -rf x``, which a rule
allowing ``cat *`` would allow. Such a newline gets a ``;`` before it (``_ended``), after the
command's last word on its line.

Where a change may change how the text after it is read (an escaped blank, which the grammar read
as a break; a heredoc's delimiter or body after it; ``<<`` or ``$(`` joined across lines), the
text is parsed again before the next change; text needing more than ``MAX_ROUNDS`` parses is not
worked out (``Source.complete`` is False).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from functools import cache
from typing import NamedTuple

import tree_sitter_bash
from tree_sitter import Language, Node, Parser, Query, QueryCursor, Tree

MAX_ROUNDS = 64  # parses of one text before giving up
_BLANKS = frozenset(b" \t\v\f\r")
_NEWLINE = ord("\n")
_JOINING = frozenset(b"<$")  # a continuation after these may start a heredoc or a substitution
_BACKSLASHES = re.compile(rb"\\+")
#: What a backslash is, by the node it is in: nothing (``keep``: single quotes, a comment), a line
#: continuation before a newline and otherwise itself (``quoted``: double quotes, a heredoc that
#: expands), or an escape of any character (``code``, the default).
_CONTEXTS = {
    "raw_string": "keep",
    "ansi_c_string": "keep",
    "comment": "keep",
    "string": "quoted",
    "translated_string": "quoted",
    "heredoc_start": "quoted",  # its quoting decides the delimiter: left as it is
    "command_substitution": "code",
    "process_substitution": "code",
}


class Source(NamedTuple):
    text: str  # as bash's lexer reads it (``joined``)
    tree: Tree
    #: False when the tree may not read the text as bash does: the text needed more than
    #: MAX_ROUNDS parses, or the tree has a shape the grammar gives what it misreads (``misread``).
    complete: bool


@cache
def _language() -> Language:
    return Language(tree_sitter_bash.language())


@cache
def parser() -> Parser:
    return Parser(_language())


@cache
def _commands() -> Query:
    return Query(_language(), "(command) @command")


#: Words bash reads as keywords where a command starts; unquoted, no command is named so.
_KEYWORDS = frozenset(
    [
        "do",
        "done",
        "then",
        "else",
        "elif",
        "fi",
        "esac",
        "{",
        "}",
        "if",
        "for",
        "while",
        "until",
        "case",
        "select",
        "function",
    ]
)
_QUOTED = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"|\\.", re.DOTALL)
_UNESCAPED_BACKTICK = re.compile(r"(?<!\\)(?:\\\\)*`")


@cache
def _shapes() -> Query:
    """The nodes ``misread`` looks at."""
    return Query(
        _language(),
        "(command_name) @name (heredoc_redirect) @heredoc (command_substitution) @substitution "
        "(redirected_statement) @redirected (ansi_c_string) @ansi (word) @word "
        "(concatenation) @concatenation (herestring_redirect) @herestring",
    )


def misread(root: Node) -> str | None:
    """What the tree shows the grammar misread, or None. tree-sitter-bash 0.25 gives no error for:

    - ``! for ...``, ``time { ...; }``, ``time if ...``: the keywords read as words, so the
      commands inside are arguments of commands named ``do``, ``}`` or ``then``;
    - a heredoc whose delimiter is not the line that ends it: ``<<X|cmd`` (the delimiter taken as
      ``X|cmd``), a body line ``$`` or a heredoc ending in ``|`` (the commands after it read
      as its body or delimiter);
    - backticks in a heredoc that expands (they run; the grammar leaves them as text) or two side
      by side (`` `a``b` `` read as one command, ``a``b``);
    - a redirection on a pipeline or a list followed by more words (``a | b >f $(cmd)``,
      ``a && b >f c``): the words are the last command's, read as more destinations;
    - a heredoc's body line starting with a backslash, read as words of the command (``sh <<EOF``
      with ``\\`x\\``` then ``rm -rf src``: ``sh`` asked as running a file);
    - ``$'\\\\'``, read as running on to the next ``'`` (``$'\\\\'; rm x # '`` as one string);
      backticks in backticks (escaped, they nest), or in a word (read as text: ``c\\`\\```);
      a here-string glued to the word after it (``<<< 'a '\\x``, read as two words).
    """
    found = QueryCursor(_shapes()).captures(root)
    for node in found.get("name", []):
        if (node.text or b"").decode(errors="replace") in _KEYWORDS:
            return f"a command named {(node.text or b'').decode(errors='replace')!r}"
    for node in found.get("heredoc", []):
        why = _heredoc(node)
        if why is not None:
            return why
    for node in found.get("substitution", []):
        text = (node.text or b"").decode(errors="replace")
        if text.startswith("`") and "`" in text[1:-1]:
            return "backticks in backticks"
    for node in found.get("ansi", []):
        if _ansi_c_end(node.text or b"") != len(node.text or b""):
            return "an ANSI-C string read past its end"
    for node in found.get("word", []):  # in ${x:-WORD}, found by the analysis (_shell_evaluation)
        in_expansion = node.parent is not None and node.parent.type == "expansion"
        if not in_expansion and _UNESCAPED_BACKTICK.search((node.text or b"").decode(errors="replace")):
            return "backticks in a word"
    for node in found.get("concatenation", []):
        if any(not part.is_named and b"`" in (part.text or b"") for part in node.children):
            return "backticks in a word"
    for node in found.get("herestring", []):
        after = node.next_sibling
        if after is not None and after.start_byte == node.end_byte and after.is_named:
            return "a here-string glued to the word after it"
    for node in found.get("redirected", []):
        body = node.child_by_field_name("body")
        if (
            body is not None
            and body.type != "command"
            and any(
                len(r.children_by_field_name("destination")) > 1 or r.children_by_field_name("argument")
                for r in node.children_by_field_name("redirect")
            )
        ):
            return "words after a redirection of a pipeline or a list"
    return None


def _ansi_c_end(text: bytes) -> int:
    """Where bash ends ``$'...'`` starting ``text``: after the first ``'`` no backslash escapes."""
    index = 2
    while index < len(text):
        if text[index] == ord("\\"):
            index += 2
        elif text[index] == ord("'"):
            return index + 1
        else:
            index += 1
    return len(text)


def _heredoc(node: Node) -> str | None:
    parts = {child.type: (child.text or b"").decode(errors="replace") for child in node.children}
    row = node.start_point.row
    if any(
        child.end_point.row != row
        for child in node.named_children
        if child.type not in ("heredoc_body", "heredoc_end") and child.type != "heredoc_start"
    ):  # a body line starting with a backslash read as words of the command
        return "a heredoc's body read as words"
    start = parts.get("heredoc_start", "")
    if any(char in _QUOTED.sub("", start) for char in "|&;()<> \t"):
        return f"a heredoc delimiter {start!r}"
    if parts.get("heredoc_end") != _QUOTED.sub(lambda m: m[0][1:-1] if m[0][0] in "'\"" else m[0][1:], start):
        return f"a heredoc not ended by its delimiter {start!r}"
    quoted = any(char in start for char in "'\"\\")
    if not quoted and _UNESCAPED_BACKTICK.search(parts.get("heredoc_body", "")):
        return "backticks in a heredoc"
    return None


def parse(text: str) -> Source:
    """``text`` rewritten as bash's lexer reads it (the module docstring), and its tree."""
    data = text.encode()
    tree = parser().parse(data)
    for _ in range(MAX_ROUNDS):
        changed = _round(data, tree.root_node) if b"\\" in data else data
        if changed == data:
            changed = _ended(data, tree.root_node) if b"\n" in data else data
            if changed == data:
                return Source(data.decode(errors="replace"), tree, misread(tree.root_node) is None)
        data = changed
        tree = parser().parse(data)
    return Source(data.decode(errors="replace"), tree, False)


def joined(text: str) -> str:
    """``text`` as bash's lexer reads it: line continuations removed, escaped blanks quoted."""
    return parse(text).text


def _round(data: bytes, root: Node) -> bytes:
    """The text with the changes ``root`` (its tree) tells, up to the first that may change how
    the text after it reads."""
    spans, heredocs = _spans(root)
    out = bytearray()
    last = 0
    for run in _BACKSLASHES.finditer(data):
        at, char = run.end() - 1, data[run.end()] if run.end() < len(data) else None
        if char is None or (run.end() - run.start()) % 2 == 0 or (char != _NEWLINE and char not in _BLANKS):
            continue  # an escaped backslash, or a backslash before an ordinary character
        context = next((kind for start, end, kind in reversed(spans) if start <= at < end), "code")
        if context == "keep" or (context == "quoted" and char != _NEWLINE):
            continue
        out += data[last:at]
        if char != _NEWLINE and out.endswith(b"$") and _unescaped(out, len(out) - 1):
            out[-1:] = b"\\$"  # $\  is a $ and a blank, $' ' would be $'...' quoting
        out += b"" if char == _NEWLINE else b"'" + bytes([char]) + b"'"
        last = at + 2
        if char != _NEWLINE or any(end > at for end in heredocs) or (out[-1:] and out[-1] in _JOINING):
            break  # the grammar may read what follows otherwise than after this change: parse again
    return bytes(out + data[last:])


def _ended(data: bytes, root: Node) -> bytes:
    """The text with a ``;`` ending each command the grammar read across a newline, which ends a
    command in bash: after its last word before that newline (a comment runs to the end of its
    line). All of them at once: one parse for the text, however many there are."""
    ends: set[int] = set()
    for node in QueryCursor(_commands()).captures(root).get("command", []):
        if node.start_point.row == node.end_point.row:
            continue
        words = node.children
        for index, (left, right) in enumerate(itertools.pairwise(words)):
            if b"\n" in data[left.end_byte : right.start_byte]:
                ends.add(next(w.end_byte for w in reversed(words[: index + 1]) if w.type != "comment"))
                break
    for end in sorted(ends, reverse=True):
        data = data[:end] + b";" + data[end:]
    return data


def _unescaped(data: bytearray, at: int) -> bool:
    """Whether the character at ``at`` follows an even number of backslashes."""
    return (at - len(data[:at].rstrip(b"\\"))) % 2 == 0


def _nodes(root: Node) -> Iterator[Node]:
    """The tree's nodes, each before those inside it."""
    stack = [root]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(reversed(node.children))


def _spans(root: Node) -> tuple[list[tuple[int, int, str]], list[int]]:
    """The nodes where a backslash means other than in plain code, outermost first; and where
    each heredoc ends."""
    spans: list[tuple[int, int, str]] = []
    heredocs: list[int] = []
    for node in _nodes(root):
        kind = _CONTEXTS.get(node.type)
        if node.type == "heredoc_redirect":
            heredocs.append(node.end_byte)
            start = next((c.text or b"" for c in node.children if c.type == "heredoc_start"), b"")
            quoted = any(char in start for char in b"'\"\\")
            body = next((c for c in node.children if c.type == "heredoc_body"), None)
            if body is not None:
                spans.append((body.start_byte, body.end_byte, "keep" if quoted else "quoted"))
        if kind is not None:
            spans.append((node.start_byte, node.end_byte, kind))
    return spans, heredocs
