"""The lsp tool shows no more than read would: which files the ``read`` rules deny, a filePath in
one refused, and a hover withheld for a name defined in one.

Without a ``read`` deny rule (the defaults) ``read_denied`` is None and nothing here runs: no
check and no extra request per call. Results in denied files are left out where each answer is
read (``Sources.shows_uri``), and counted for ``left_out_note``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from pathlib import Path

from lsprotocol import types as lsp

from lsp_bridge import Answer, Bridge, BridgeError

from ._lsp_format import plural
from ._lsp_resolve import Target
from ._lsp_source import Sources
from .context import ToolContext, real_path
from .permission import PermissionDenied, wildcard_any, wildcard_match

#: Said under a hover that ``unquoted`` cut.
UNQUOTED = (
    "(Values (…) and docs not written in this file or where the name is defined were left out: the "
    "server infers them from other files, and read rules deny some files.)"
)
#: A fenced code block of a hover (``hover_text`` writes them as ```lang ... ```), split out.
FENCE = re.compile(r"(```[^\n]*\n.*?\n```)", re.DOTALL)
#: Separators (``---``) left at the end when the docs after them were left out.
TRAILING_RULES = re.compile(r"(\s*\n-{3,})+\s*$")
#: A string literal, or a number in ``Literal[...]``, in a hover's code.
LITERAL = re.compile(
    r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"|(?<=Literal\[)-?\d[\w.]*|(?<=, )-?\d[\w.]*(?=[,\]])"
)


def read_denied(ctx: ToolContext) -> Callable[[str], bool] | None:
    """Whether the ``read`` rules deny a workspace-relative path (None when no rule denies
    anything, as by default: then nothing is checked)."""
    engine = ctx.env.permissions
    denies = [r.pattern for r in engine.rules if r.action == "deny" and wildcard_match("read", r.permission)]
    candidates = wildcard_any(denies)
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


def unquoted(text: str, sources: Sources, files: list[Path]) -> tuple[str, bool]:
    """A hover's ``text`` without what the files it may quote do not hold: a literal value in
    its code (``Literal['s3cr3t']`` for a name assigned a ``Final`` constant from a denied file)
    and its docs unless each of their lines is written there (a docstring inherited from a
    denied base class). The server's inference cannot be traced to a file, so what is not
    written in these files is left out, even when it came from another file read allows.
    True if anything was."""
    readable = " ".join(" ".join(line for f in files for line in sources.lines(f)).split())
    parts = FENCE.split(text)
    for i, part in enumerate(parts):
        if i % 2:  # code: its literals
            parts[i] = LITERAL.sub(lambda m: m[0] if _written(m[0], readable) else "…", part)
        elif any(
            " ".join(line.replace("\\", "").split()) not in readable
            for line in part.splitlines()
            if line.strip(" -*_")  # not blank, not a rule
        ):
            parts[i] = ""  # docs
    kept = TRAILING_RULES.sub("", "".join(parts).strip())
    return (text, False) if kept == text else (kept, True)


def _written(literal: str, readable: str) -> bool:
    """Whether a literal from a hover is written as one in ``readable``."""
    if literal[:1] in "'\"":
        inner = literal[1:-1]
        return f"'{inner}'" in readable or f'"{inner}"' in readable
    return re.search(rf"(?<![\w.]){re.escape(literal)}(?![\w.])", readable) is not None
