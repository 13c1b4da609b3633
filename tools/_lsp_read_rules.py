"""The lsp tool shows no more than read would: which files the ``read`` rules deny, a filePath in
one refused, a hover withheld for a name defined in one, and the names and values a server
inferred from one cut out of hovers and diagnostics' messages.

Without a ``read`` deny rule (the defaults) ``read_denied`` is None and nothing here runs: no
check and no extra request per call. Results in denied files are left out where each answer is
read (``Sources.shows_uri``), and counted for ``left_out_note``.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import keyword
import re
import typing
from collections.abc import Callable
from pathlib import Path

import attrs
from lsprotocol import types as lsp

from lsp_bridge import Answer, Bridge, BridgeError

from ._lsp_format import plural
from ._lsp_resolve import Target, workspace_files
from ._lsp_source import IDENTIFIER, KEYWORDS, Sources
from .context import ToolContext, real_path
from .permission import PermissionDenied, wildcard_any

#: Said under a hover that ``unquoted`` cut.
UNQUOTED = (
    "(Names, values (…) and docs not written in this file or where the name is defined were left out: the "
    "server infers them from other files, and read rules deny some files.)"
)
#: A fenced code block of a hover (``hover_text`` writes them as ```lang ... ```), split out.
FENCE = re.compile(r"(```[^\n]*\n.*?\n```)", re.DOTALL)
#: Separators (``---``) left at the end when the docs after them were left out.
TRAILING_RULES = re.compile(r"(\s*\n-{3,})+\s*$")
#: A string or number literal in a hover's code or a diagnostic's quoted fragment.
LITERAL = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"|(?<![\w.])\d[\w.]*")
#: A quoted fragment of a diagnostic's message (a type, a name, a value), not an apostrophe.
FRAGMENT = re.compile(r"(?<!\w)(?:\"[^\"\n]*\"|'[^'\n]*')(?!\w)")
#: Said under diagnostics whose messages ``unquoted_message`` cut.
UNQUOTED_MESSAGES = (
    "(Names and values (…) that files the read rules deny hold and the file checked does not "
    "were left out of the messages.)"
)
#: The languages' own names (types, keywords, hover labels): shown even where a denied file writes them.
_OTHER = """
Self Unknown Never variable function method class module parameter property constant alias local
member field string number boolean any unknown never object symbol bigint Array ReadonlyArray
Promise Record Partial Required Pick Omit Exclude Extract ReturnType Parameters Map Set Date
RegExp Error Function Object String Number Boolean Symbol BigInt keyof infer auto size_t std
vector nullptr wchar_t
"""
BUILTINS = frozenset({*dir(builtins), *keyword.kwlist, *typing.__all__, *KEYWORDS, *_OTHER.split()})
#: Denied files larger than this are not read for their names.
NAMES_READ = 2_000_000


def read_denied(ctx: ToolContext) -> Callable[[str], bool] | None:
    """Whether the ``read`` rules deny a workspace-relative path (None when no rule denies
    anything, as by default: then nothing is checked)."""
    engine = ctx.env.permissions
    candidates = wildcard_any(engine.denial_patterns("read"))
    if candidates is None:
        return None
    fullmatch = candidates.fullmatch

    def hidden(relative: str) -> bool:
        return fullmatch(relative) is not None and engine.action("read", relative) == "deny"

    return hidden


def refuse_denied(ctx: ToolContext, path: Path, hidden: Callable[[str], bool]) -> None:
    """A filePath the read rules deny is refused as read would refuse it."""
    if hidden(shown := ctx.relative(real_path(path))):
        raise PermissionDenied(
            f"Permission denied: read {shown} (a read rule denies it), and the lsp tool shows "
            "no more than read would. This is configured by the user; do not retry it."
        )


def left_out_note(count: int, operation: str) -> str:
    """The note for ``count`` results left out (for diagnostics: files not checked)."""
    verb = "was" if count == 1 else "were"
    if operation == "diagnostics":
        return f"({plural(count, 'file')} the read rules deny {verb} not checked.)"
    return f"({plural(count, 'result')} in files the read rules deny {verb} left out.)"


async def hover_or_why_not(
    bridge: Bridge, sources: Sources, target: Target, hidden: Callable[[str], bool]
) -> tuple[Answer[list[lsp.Hover]], str | None, list[Path]]:
    """The hover at ``target``, why it is withheld (None: it may be shown), and the files it
    may quote (the target's and its definitions').

    The server's text for a name defined in a denied file is its signature, docstring or value
    from there. Where the name is defined is asked together with the hover (both at once, so the
    wait is the slower of the two); when that cannot be asked, the hover is withheld too."""
    path, pos = target.path, target.position
    hovers, defined = await asyncio.gather(
        bridge.hover(path, pos), bridge.definition(path, pos), return_exceptions=True
    )
    if isinstance(hovers, BaseException):
        raise hovers
    if isinstance(defined, BaseException):
        if not isinstance(defined, BridgeError):
            raise defined
        return (
            hovers,
            f"where it is defined could not be checked ({defined}), and while read rules deny some "
            "files the lsp tool shows a hover only for names defined in files read may show.",
            [],
        )
    if any(hidden(sources.named(span[0])[0]) for span in defined.value):
        return (
            hovers,
            "it is defined in a file the read rules deny, and the lsp tool shows no more than read "
            "would (the server's text would show its signature and docs from there).",
            [],
        )
    return hovers, None, [path, *(sources.named(span[0])[1] for span in defined.value)]


async def unquoted(text: str, sources: Sources, files: list[Path]) -> tuple[str, bool]:
    """A hover's ``text`` without what the files it may quote do not hold: in its code, a
    literal value (``Literal['s3cr3t']`` for a name assigned a ``Final`` constant from a denied
    file) and a name a denied file writes (``v: Vault``, the class of what a denied function
    returns) unless a file read allows declares it; its docs unless each of their lines is
    written there (a docstring inherited from a denied base class). The server's inference
    cannot be traced to a file, so a value or doc not written in these files is left out even
    when it came from another file read allows. True if anything was."""
    readable = " ".join(" ".join(line for f in files for line in sources.lines(f)).split())
    words, denied = set(IDENTIFIER.findall(readable)), denied_names(sources)
    parts = FENCE.split(text)
    words |= await declared_where_shown(sources, {files[0]: _suspects(parts[1::2], words, denied)})
    for i, part in enumerate(parts):
        if i % 2:  # code: its literals and names
            parts[i] = _cut(part, readable, words, denied)
        elif any(
            " ".join(line.replace("\\", "").split()) not in readable
            for line in part.splitlines()
            if line.strip(" -*_")  # not blank, not a rule
        ):
            parts[i] = ""  # docs
    kept = TRAILING_RULES.sub("", "".join(parts).strip())
    return (text, False) if kept == text else (kept, True)


async def unquoted_messages(sources: Sources, found: list[tuple[Path, lsp.Diagnostic]]) -> bool:
    """Diagnostics' messages without what the file each is about does not hold in their quoted
    fragments: a value (``"Literal['s3cr3t']"`` for a denied constant assigned to an int) and a
    name a denied file writes (the parameter a call misses, the class it returns) unless a
    file read allows declares it. A copy of each diagnostic cut (the bridge keeps pushed ones);
    True if anything was."""
    denied = denied_names(sources)
    texts: dict[Path, tuple[str, set[str]]] = {}
    suspects: dict[Path, set[str]] = {}
    for path, diag in found:
        if path not in texts:
            readable = " ".join(" ".join(sources.lines(path)).split())
            texts[path] = (readable, set(IDENTIFIER.findall(readable)))
        fragments = [m[0][1:-1] for m in FRAGMENT.finditer(diag.message)]
        suspects.setdefault(path, set()).update(_suspects(fragments, texts[path][1], denied))
    shown = await declared_where_shown(sources, suspects)
    cut = False
    for i, (path, diag) in enumerate(found):
        readable, words = texts[path]
        message = _cut_fragments(diag.message, readable, words | shown, denied)
        if message != diag.message:
            found[i], cut = (path, attrs.evolve(diag, message=message)), True
    return cut


async def declared_where_shown(sources: Sources, suspects: dict[Path, set[str]]) -> set[str]:
    """Of the names in ``suspects`` (by the file whose servers to ask), those declared in a
    file read allows (workspace/symbol, exact name): a class from a module read shows is named
    though a denied file writes its name too. A name the servers cannot look up stays out."""
    near: dict[str, Path] = {}
    for path, names in suspects.items():
        for name in names:
            near.setdefault(name, path)
    if not near:
        return set()
    hidden = sources.hidden or (lambda _relative: False)
    answers = await asyncio.gather(
        *(sources.bridge.workspace_symbols(name, near=path) for name, path in near.items()),
        return_exceptions=True,
    )
    shown: set[str] = set()
    for name, answer in zip(near, answers, strict=True):
        if isinstance(answer, BaseException):
            if not isinstance(answer, BridgeError):
                raise answer
            continue
        if any(
            item.name == name
            and isinstance(item.location, lsp.Location)
            and not hidden(sources.named(item.location.uri)[0])
            for item in answer.value
        ):
            shown.add(name)
    return shown


def _cut_fragments(message: str, readable: str, words: set[str], denied: frozenset[str]) -> str:
    """``_cut`` on each quoted fragment of a diagnostic's message."""
    return FRAGMENT.sub(lambda m: m[0][0] + _cut(m[0][1:-1], readable, words, denied) + m[0][-1], message)


def _suspects(codes: list[str], words: set[str], denied: frozenset[str]) -> set[str]:
    """The names in ``codes`` that a denied file writes and ``words`` do not hold."""
    return {
        name for code in codes for name in IDENTIFIER.findall(code) if name in denied and name not in words
    }


def denied_names(sources: Sources) -> frozenset[str]:
    """The names written in the workspace's files the read rules deny (read once per answer),
    less the languages' own: what a server's inference may carry from there into an answer
    about another file."""
    if sources.denied is None:
        names: set[str] = set()
        hidden = sources.hidden or (lambda _relative: False)
        for path in workspace_files(sources.root) if sources.hidden is not None else []:
            with contextlib.suppress(OSError):
                if hidden(sources.relative(path)) and path.stat().st_size <= NAMES_READ:
                    for line in sources.bridge.source_lines(path):
                        names.update(IDENTIFIER.findall(line))
        sources.denied = frozenset(names - BUILTINS)
    return sources.denied


def _cut(code: str, readable: str, words: set[str], denied: frozenset[str]) -> str:
    """``code`` with "…" for its literals not written in ``readable`` and its names that a
    denied file writes and ``words`` (the names in ``readable``) do not hold."""
    code = LITERAL.sub(lambda m: m[0] if _written(m[0], readable) else "…", code)
    return IDENTIFIER.sub(lambda m: "…" if m[0] in denied and m[0] not in words else m[0], code)


def _written(literal: str, readable: str) -> bool:
    """Whether a literal from a hover is written as one in ``readable``."""
    if literal[:1] in "'\"":
        inner = literal[1:-1]
        return f"'{inner}'" in readable or f'"{inner}"' in readable
    return re.search(rf"(?<![\w.]){re.escape(literal)}(?![\w.])", readable) is not None
