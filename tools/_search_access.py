"""What a search may show: where glob, grep and list get their permissions.

``authorize_search`` authorizes the folder rg starts in (a glob's leading folders included: rg
follows a symlink given as a path argument) like any path, and ``ReadCheck`` applies the ``read``
rules to each file found, as the read tool would.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ._ripgrep import FileFilter, file_filter
from .context import ToolContext, is_within, real_path, relative_text, shown_path
from .permission import AnyPattern, PermissionEngine, Rule, evaluate, nfc, wildcard_any, wildcard_match
from .truncate import fitting

Verdict = Literal["show", "deny", "ask"]


@dataclass
class ReadCheck:
    """What the ``read`` rules say about each file a search finds, decided without asking anyone,
    so that a search shows no more than the read tool would.

    A file a rule denies is left out of every search. A content search (grep) also withholds a
    file a rule asks for (the default ``*.env``), unless that is the rule the user just answered
    for the search itself (``read = "ask"``: one ask per search, not one per file); listing its
    name is not reading it. The rules see what ``read`` sees: the real, workspace-relative path.

    Only a path matching a rule that could keep it out (``candidates``, one regex) is evaluated
    in full: with the default rules a file search checks nothing, a content search one regex per
    file found.
    """

    engine: PermissionEngine | None = None  # None: nothing to check
    #: The real path of the folder rg starts in, workspace-relative, ending in "/" ("" for the root),
    #: as ``os.fsdecode`` gives it (rules see it as ``ToolContext.relative`` shows it).
    prefix: str = ""
    #: How much of each path rg prints stands for that folder (its path argument and a "/").
    strip: int = 0
    contents: bool = False
    #: The rule that decided the search's own ``read`` permission.
    exempt: Rule | None = None
    rules: list[Rule] = field(default_factory=list[Rule])
    approvals: list[Rule] = field(default_factory=list[Rule])
    candidates: AnyPattern | None = None
    #: Files kept out so far, with why (each file once, however many batches name it).
    blocked: dict[bytes, Verdict] = field(default_factory=dict[bytes, Verdict])

    def __post_init__(self) -> None:
        if self.engine is None:
            return
        self.rules = [r for r in self.engine.rules if wildcard_match("read", r.permission)]
        self.approvals = [r for r in self.engine.approvals.rules if wildcard_match("read", r.permission)]
        risky = [r.pattern for r in self.rules if self._asks(r)] + self.engine.denial_patterns("read")
        if self.contents and self.exempt is not None and all(r.pattern != "*" for r in self.rules):
            risky.append("*")  # a path no rule matches is asked for
        self.candidates = wildcard_any(risky)

    def _asks(self, rule: Rule | None) -> bool:
        configured = rule.action if rule else "ask"
        return self.contents and configured == "ask" and rule != self.exempt

    @property
    def active(self) -> bool:
        return self.candidates is not None

    def shows(self, name: bytes) -> bool:
        """Whether the file rg printed as ``name`` may be shown (only called when ``active``)."""
        if name in self.blocked:
            return False
        assert self.candidates is not None
        path = self.prefix + os.fsdecode(name[self.strip :])
        if not path.isascii():  # as read's rules see it: bytes that are not UTF-8 as \xNN, and
            path = nfc(shown_path(path))  # composed as the rules are (macOS writes names decomposed)
        if self.candidates.fullmatch(path) is None:
            return True
        rule = evaluate("read", path, self.rules)
        assert self.engine is not None
        if (rule is not None and rule.action == "deny") or self.engine.inherited_denial("read", path):
            self.blocked[name] = "deny"
        elif self._asks(rule) and evaluate("read", path, self.approvals) is None:
            self.blocked[name] = "ask"
        else:
            return True
        return False

    def keep(self, names: list[bytes]) -> list[bytes]:
        return [name for name in names if self.shows(name)] if self.active else names

    def notes(self, one: str, many: str, show: Callable[[bytes], str]) -> list[str]:
        """One line for the files denied (``one``/``many``: "file"/"files" in the tool's words)
        and one naming the files withheld; ``show`` displays rg's paths."""
        denied = sum(1 for verdict in self.blocked.values() if verdict == "deny")
        withheld = [show(name) for name, verdict in self.blocked.items() if verdict == "ask"]
        notes: list[str] = []
        if denied:
            what, them = (f"{one} was", "it") if denied == 1 else (f"{many} were", "them")
            notes.append(f"({denied} {what} skipped: read rules deny {them}.)")
        if withheld:
            first = sorted(withheld)[:10]
            first = first[: max(1, fitting(first, 2048))]  # paths can be 4 KB long
            named = ", ".join(first)
            if len(withheld) > len(first):
                named += f" and {len(withheld) - len(first)} more"
            notes.append(
                f"(Matches in {named} were withheld: read rules ask the user before "
                f"{'this file is' if len(withheld) == 1 else 'these files are'} read. "
                "Read them with the read tool, which will ask.)"
            )
        return notes

    def counts(self) -> dict[str, int]:
        """``skipped`` and ``withheld`` for the result's metadata, when there are any."""
        verdicts = list(self.blocked.values())
        found = {"skipped": verdicts.count("deny"), "withheld": verdicts.count("ask")}
        return {key: count for key, count in found.items() if count}


@dataclass(frozen=True)
class Search:
    """Where a search runs once authorized: rg's working folder, its path arguments and filter,
    and the read rules to apply to what it finds."""

    target: Path  # the path searched, resolved as given (a folder, or for grep a file)
    folder: Path  # rg's working folder: the target, or a file target's folder
    names: list[str]  # rg's path arguments: the glob's leading folders, or a file target's name
    chosen: FileFilter
    reads: ReadCheck


async def authorize_search(
    ctx: ToolContext, path: str | None, glob: str | None, title: str, *, contents: bool = False
) -> Search:
    """Authorize a search of ``path`` (the workspace when None) restricted by ``glob``.

    The one ``read`` ask (and the ``external_directory`` ask) is for the folder rg really starts
    in: the glob's leading literal folders count, since rg follows a symlink given as a path
    argument where it follows none while walking.
    """
    target = ctx.resolve(path or ".")
    if target.is_dir():
        folder, chosen = target, file_filter(glob, target)
        names = chosen.roots
    else:  # a file (grep), or a missing path whose error comes once it is authorized
        folder, chosen = target.parent, FileFilter([], [])
        names = [target.name]
    start = folder / names[0] if names else folder
    await ctx.authorize(str(start), "read", title)
    reads = ReadCheck()
    if target.is_dir():
        reads = read_check(ctx, start, len(os.fsencode(names[0])) + 1 if names else 0, contents)
    return Search(target, folder, names, chosen, reads)


def read_check(ctx: ToolContext, folder: Path, strip: int, contents: bool) -> ReadCheck:
    """The ``read`` rules for the files found in ``folder`` (authorized already), whose names
    begin with ``strip`` bytes that stand for the folder itself."""
    real = real_path(folder)
    if is_within(real, ctx.env.output_dir_real):
        return ReadCheck()
    shown = relative_text(real, ctx.root)
    engine = ctx.env.permissions
    exempt = evaluate("read", shown_path(shown), engine.rules)
    prefix = "" if shown == "." else shown.rstrip("/") + "/"
    return ReadCheck(engine, prefix, strip, contents, exempt)
