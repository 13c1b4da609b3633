"""The lsp tool shows no more than read would: which files the ``read`` rules deny, a filePath in
one refused, and a hover withheld for a name defined in one.

Without a ``read`` deny rule (the defaults) ``read_denied`` is None and nothing here runs: no
check and no extra request per call. Results in denied files are left out where each answer is
read (``Sources.shows_uri``), and counted for ``left_out_note``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from lsprotocol import types as lsp

from lsp_bridge import Answer, Bridge, BridgeError

from ._lsp_format import plural
from ._lsp_resolve import Target
from ._lsp_source import Sources
from .context import ToolContext, real_path
from .permission import PermissionDenied, wildcard_any, wildcard_match


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
) -> tuple[Answer[list[lsp.Hover]], str | None]:
    """The hover at ``target``, and why it is withheld (None: it may be shown).

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
        return hovers, (
            f"where it is defined could not be checked ({defined}), and while read rules deny some "
            "files the lsp tool shows a hover only for names defined in files read may show."
        )
    if any(hidden(sources.named(span[0])[0]) for span in defined.value):
        return hovers, (
            "it is defined in a file the read rules deny, and the lsp tool shows no more than read "
            "would (the server's text would show its signature and docs from there)."
        )
    return hovers, None
