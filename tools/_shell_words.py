"""Shell words as the analysis sees them: the text as written, and the value once quoting is gone.

``"rm"``, ``'rm'`` and ``r\\m`` all have the value ``rm``; ``$HOME/x`` or ``$(pwd)`` have none (only
known at run time). Unquoted ``* ? [ {`` mark a word the shell expands as a glob or brace;
``expand`` does the brace expansion (``{.,.}./x`` is ``../x ../x``) the way bash does, ``climbs``
tells a glob that can reach up, ``stdin_script`` the literal script a heredoc or herestring feeds.
``parse_options`` reads a command's options the way getopt does (``-xzf FILE``, ``--file=FILE``,
``--`` ends them), so the operands are found even in clustered options.
"""

from __future__ import annotations

import fnmatch
import itertools
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tree_sitter import Node

_PLAIN = re.compile(r"[\w@%+=:,./^~-]+")  # words shown without quotes
SPECIAL = re.compile(r"[*?\[{]")
MAX_WORDS = 64  # a brace expansion into more words than this counts as unknown
_SEQUENCE = re.compile(r"(-?\d+|[A-Za-z])\.\.(-?\d+|[A-Za-z])(?:\.\.(-?\d+))?")


@dataclass(frozen=True)
class Word:
    raw: str  # as written
    value: str | None  # quoting removed; None when only known at run time
    glob: bool = False  # unquoted * ? [ { the shell expands
    tilde: bool = False

    @property
    def shown(self) -> str:
        """Canonical text: quoting normalised, so ``"rm"`` and ``r\\m`` both read ``rm``."""
        if self.value is None or self.glob or self.tilde:
            return self.raw
        if self.value == "{}" or (_PLAIN.fullmatch(self.value) and not self.value.startswith("~")):
            return self.value
        return shlex.quote(self.value)


def unescape(text: str, chars: str) -> str:
    """Backslashes removed before ``chars`` (inside double quotes, or in a heredoc that expands)."""
    return re.sub(f"\\\\([{re.escape(chars)}])", lambda m: "" if m[1] == "\n" else m[1], text)


def _unquote(text: str) -> tuple[str, bool]:
    if "\\" not in text:
        return text, SPECIAL.search(text) is not None
    out: list[str] = []
    glob = False
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            out.append("" if text[index + 1] == "\n" else text[index + 1])
            index += 2
            continue
        glob = glob or char in "*?[{"
        out.append(char)
        index += 1
    return "".join(out), glob


def _static(node: Node) -> tuple[str | None, bool]:
    """The node's value with quoting removed, and whether it holds an unquoted glob or brace."""
    text = (node.text or b"").decode(errors="replace")
    kind = node.type
    if kind == "word":
        return _unquote(text)
    if kind in ("number", "variable_name"):
        return text, False
    if kind == "raw_string":
        return text[1:-1], False
    if kind == "ansi_c_string":
        return ansi_c(text[2:-1]), False
    if kind in ("string", "translated_string"):
        if any(child.type == "$" for child in node.children):
            return None, False
        if any(part.type != "string_content" for part in node.named_children):
            return None, False
        content = text[text.index('"') + 1 : -1]  # its newlines too, which are no string_content
        return unescape(content, '$`"\\\n'), False
    if kind in ("concatenation", "variable_assignment"):
        values: list[str] = []
        glob = False
        children = node.children
        for index, child in enumerate(children):
            translated = index + 1 < len(children) and children[index + 1].type == "string"
            if not child.is_named and child.text == b"$" and translated:  # c$"1": $"1" is "1"
                continue
            value, child_glob = _static(child) if child.is_named else ((child.text or b"").decode(), False)
            if value is None:
                return None, False
            values.append(value)
            glob = glob or child_glob
        return "".join(values), glob
    if kind == "brace_expression":
        return text, True
    return None, False


_ANSI_C = re.compile(
    r"\\(?:([abeEfnrtv\\'\"?])|([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8})|c(\\\\|.)?)",
    re.DOTALL,
)
_ANSI_C_CHARS = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
}


def ansi_c(body: str) -> str | None:
    """The value of ``$'body'`` as bash decodes it (``\\e``, ``\\cA``, ``\\?``, octal to a byte, an
    unknown escape kept as written), up to a NUL, where bash ends it; None for a byte that is not
    ASCII (bash puts a character together from such bytes) or no character."""
    out: list[str] = []
    last = 0
    for escape in _ANSI_C.finditer(body):
        out.append(body[last : escape.start()])
        last = escape.end()
        simple, octal, hexa, short, long, control = escape.groups()
        if simple is not None:
            out.append(_ANSI_C_CHARS.get(simple, simple))
        elif octal is not None or hexa is not None:
            code = int(octal, 8) if octal is not None else int(hexa or "0", 16)
            if code >= 0x80:  # one byte of a character bash puts together: not worked out
                return None
            out.append(chr(code))
        elif short is not None or long is not None:
            code = int(short or long or "0", 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                return None
            out.append(chr(code))
        elif control is None:  # a \c ending the text: kept as written
            out.append("\\c")
        elif control[0] == "\\":  # \c\\ and \c\: control-backslash
            out.append("\x1c")
        elif not control.isascii():  # bash takes the control of the character's first byte
            return None
        else:
            out.append("\x7f" if control == "?" else chr(ord(control) & 0x1F))
    out.append(body[last:])
    return "".join(out).partition("\0")[0]


def word(node: Node) -> Word:
    raw = _source(node)
    value, glob = _static(node)
    return Word(raw, value, glob, node.type in ("word", "concatenation") and raw.startswith("~"))


def option_value(args: Sequence[Word], index: int, attached: str | None) -> Word:
    """An option's value: the text attached to it (``-fFILE``, ``--file=FILE``) or the next word."""
    return args[index] if attached is None else Word(attached, attached)


def expand(item: Word) -> list[Word]:
    """The words an unquoted brace expression becomes (``file{1..3}`` is three words). A brace in a
    word that also has quoting, or one giving more than ``MAX_WORDS`` words, is unknown."""
    if not item.glob or item.value is None or "{" not in item.value:
        return [item]
    if item.raw != item.value:  # quoting decides which braces count: not worked out here
        return [Word(item.raw, None)]
    texts = braces(item.value)
    if texts is None:
        return [Word(item.raw, None)]
    if texts == [item.value]:
        return [item]
    texts = [text for text in texts if text] or texts  # bash drops empty words: c1 {,-f} is c1 -f
    return [Word(text, text, SPECIAL.search(text) is not None, text.startswith("~")) for text in texts]


def braces(text: str) -> list[str] | None:
    """Bash's brace expansion of unquoted ``text``: ``{a,b}`` alternatives and ``{1..9..2}`` or
    ``{a..e}`` sequences, nested, an unmatched brace kept as it is; None beyond ``MAX_WORDS``."""
    start = 0
    while (open_ := text.find("{", start)) >= 0:
        start = open_ + 1
        depth, commas, close = 0, list[int](), -1
        for index in range(open_, len(text)):
            char = text[index]
            depth += (char == "{") - (char == "}")
            if char == "," and depth == 1:
                commas.append(index)
            elif depth == 0:
                close = index
                break
        if close < 0 or (open_ > 0 and text[open_ - 1] == "$"):
            continue
        bounds = [open_, *commas, close]
        parts = [text[a + 1 : b] for a, b in itertools.pairwise(bounds)] if commas else None
        parts = parts if parts is not None else _sequence(text[open_ + 1 : close])
        if parts is None:
            continue
        tails = braces(text[close + 1 :])
        if tails is None:
            return None
        out: list[str] = []
        for part in parts:
            heads = braces(part)
            if heads is None or len(out) + len(heads) * len(tails) > MAX_WORDS:
                return None
            out += [text[:open_] + head + tail for head in heads for tail in tails]
        return out
    return [text]


def _sequence(body: str) -> list[str] | None:
    match = _SEQUENCE.fullmatch(body)
    if match is None or match[1].isalpha() != match[2].isalpha():
        return None
    step = abs(int(match[3] or 1)) or 1
    letters = match[1].isalpha()
    first, last = (ord(match[1]), ord(match[2])) if letters else (int(match[1]), int(match[2]))
    numbers = range(first, last + (1 if last >= first else -1), step if last >= first else -step)
    numbers = numbers[: MAX_WORDS + 1]  # more than MAX_WORDS: the caller gives up
    if letters:
        return [chr(n) for n in numbers]
    padded = any(re.match(r"-?0\d", bound) for bound in match.group(1, 2))
    width = max(len(match[1]), len(match[2])) if padded else 0
    return [str(n).zfill(width) for n in numbers]


def climbs(pattern: str) -> bool:
    """Whether a glob can reach up: a ``..`` part, or one that can match ``..`` (``.?``, ``.*``:
    bash before 5.2 matches them)."""
    return any(
        part == ".." or (part[:1] not in ("*", "?") and fnmatch.fnmatchcase("..", part))
        for part in pattern.split("/")
    )


def stdin_feed(redirects: Sequence[Node]) -> tuple[bool, Word | None]:
    """Whether redirections feed stdin (``<``, ``<<``, ``<<<``, ``<&N``, ``<>``; not ``3< FILE``),
    and the file the last one reads when it is ``< FILE``."""
    fed, source = False, None
    for node in redirects:
        descriptor = next((c for c in node.children if c.type == "file_descriptor"), None)
        operator = next((_source(c) for c in node.children if not c.is_named), "")
        target = node.child_by_field_name("destination")
        if descriptor is not None and _source(descriptor) != "0":
            continue
        if node.type in ("heredoc_redirect", "herestring_redirect"):
            fed, source = True, None
        elif node.type == "file_redirect" and operator.startswith("<"):
            fed, source = True, word(target) if operator in ("<", "<>") and target is not None else None
    return fed, source


def stdin_script(redirects: Sequence[Node]) -> str | None:
    """The literal script a heredoc or herestring feeds to stdin; None if there is none, or it
    is only known at run time."""
    script = None
    for node in redirects:
        if node.type == "herestring_redirect":
            value = word(node.named_children[-1]).value if node.named_children else None
            script = None if value is None else value + "\n"
        elif node.type == "heredoc_redirect":
            start = next((_source(c) for c in node.children if c.type == "heredoc_start"), "")
            body = next((c for c in node.children if c.type == "heredoc_body"), None)
            quoted = any(char in start for char in "'\"\\")
            if body is None or (not quoted and any(c.type != "heredoc_content" for c in body.named_children)):
                script = None
                continue
            script = _source(body) if quoted else unescape(_source(body), "$`\\\n")
            if any(_source(c) == "<<-" for c in node.children):
                script = re.sub(r"(?m)^\t+", "", script)
        elif node.type == "file_redirect" and any(_source(c) == "<" for c in node.children):
            script = None
    return script


def _source(node: Node) -> str:
    return (node.text or b"").decode(errors="replace")


@dataclass
class Parsed:
    """A command's arguments sorted the getopt way: option values and operands."""

    #: (option, word index, value attached to the option inside that word or None for the whole word)
    values: list[tuple[str, int, str | None]] = field(default_factory=list[tuple[str, int, str | None]])
    operands: list[int] = field(default_factory=list[int])  # word indexes
    flags: set[str] = field(default_factory=set[str])


def parse_options(
    words: Sequence[str | None],
    takes_value: frozenset[str],
    leading_options: bool = False,
    optional: frozenset[str] = frozenset(),
    *,
    long_only: bool = False,
    spans: Mapping[str, int] | None = None,
) -> Parsed:
    """Split ``words`` (the arguments, quoting removed, None when unknown) getopt-style:
    ``-xzf FILE``, ``-fFILE``, ``--file=FILE``, ``--file FILE``; ``--`` ends the options, and with
    ``leading_options`` so does the first operand. ``optional`` options take a value only when it
    is attached (``-iX``, ``--replace=X``). An unknown word counts as an operand. A word that is a
    listed option of several letters after one dash is that option (``zip -TT CMD``, ``gdb -ex
    CMD``, ``-ex=CMD``); with ``long_only`` every word after one dash is (getopt_long_only:
    ``gdb -nx``). ``spans`` gives the options whose value is several words (``hyperfine -L NAME
    VALUES``): the value is recorded at its first word, and the others skipped."""
    parsed = Parsed()
    index = 0
    options_done = False
    while index < len(words):
        word = words[index]
        if options_done or word is None or word == "-" or not word.startswith("-"):
            parsed.operands.append(index)
            options_done = options_done or leading_options
        elif word == "--":
            options_done = True
        elif word.startswith("--") or long_only or _long(word, takes_value, optional):
            name, eq, value = word.partition("=")
            parsed.flags.add(name)
            if (name in takes_value or name in optional) and eq:
                parsed.values.append((name, index, value))
                index += (spans or {}).get(name, 1) - 1
            elif name in takes_value and index + 1 < len(words):
                index += 1
                parsed.values.append((name, index, None))
                index += (spans or {}).get(name, 1) - 1
        else:
            for position in range(1, len(word)):
                option = "-" + word[position]
                parsed.flags.add(option)
                if option not in takes_value and option not in optional:
                    continue
                if position + 1 < len(word):
                    parsed.values.append((option, index, word[position + 1 :]))
                    index += (spans or {}).get(option, 1) - 1
                elif option in optional:
                    break
                elif index + 1 < len(words):
                    index += 1
                    parsed.values.append((option, index, None))
                    index += (spans or {}).get(option, 1) - 1
                break
        index += 1
    return parsed


def _long(word: str, takes_value: frozenset[str], optional: frozenset[str]) -> bool:
    """Whether ``word`` is an option of several letters after one dash (``-ex``, ``-ex=CMD``)."""
    name = word.partition("=")[0]
    return len(name) > 2 and (name in takes_value or name in optional)
