"""What a change broke, from the language servers: diagnostics before and after, only the new ones.

``before`` runs while the user looks at the permission ask (it reads the files as they are, so it
must finish before anything is written) and reuses what the bridge already knows for exactly that
text. ``after`` pulls the new version of every written file; for ``write`` and ``apply_patch`` it
also checks up to ``MAX_OTHER_FILES`` other files that used a symbol the change touched or deleted.
A change merged onto what the user typed meanwhile (``Applied.onto``) is compared with their text;
another file they typed in during the review gets its "before" again once the change is approved.
A diagnostic is old when one with the same severity, code, source and message was on a line with
the same text before, so lines moving up or down do not make old problems look new.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp

from lsp_bridge import Answer, Bridge, BridgeError
from lsp_bridge.documents import uri_to_path

from ._lsp_read_rules import UNQUOTED_MESSAGES, read_denied, unquoted_messages
from ._lsp_source import Sources
from .base import ToolError
from .changes import Applied, FileChange
from .context import ToolContext, is_within
from .diff import hunks

log = logging.getLogger(__name__)

MAX_PER_FILE = 20
MAX_OTHER_FILES = 5
MAX_SYMBOLS = 10
SEVERITY = {lsp.DiagnosticSeverity.Error: "ERROR", lsp.DiagnosticSeverity.Warning: "WARN"}

Key = tuple[Any, ...]


@dataclass
class FileReport:
    path: Path
    new: list[str] = field(default_factory=list[str])
    old: int = 0
    note: str = ""
    #: Names and values a read-denied file holds were cut from the messages (``unquoted_messages``).
    unquoted: bool = False


def _bridge(ctx: ToolContext) -> Bridge | None:
    try:
        return ctx.env.bridge
    except ToolError:
        return None


class Probe:
    def __init__(self, ctx: ToolContext, changes: list[FileChange], others: bool) -> None:
        self.ctx = ctx
        self.bridge = _bridge(ctx)
        self.changes = [c for c in changes if self.bridge and self.bridge.registry.for_file(c.target)]
        self.others = others
        #: The read rules' denials (None: none): the report shows no more than read would.
        self.hidden = read_denied(ctx)
        edit_settings = ctx.env.settings.get("tools", {}).get("edit", {})
        self.severities = {lsp.DiagnosticSeverity.Error}
        if isinstance(edit_settings, dict) and edit_settings.get("warnings"):  # pyright: ignore[reportUnknownMemberType]
            self.severities.add(lsp.DiagnosticSeverity.Warning)
        self._before: dict[Path, Counter[Key]] = {}
        self._other_text: dict[Path, str] = {}
        self._notes: dict[Path, str] = {}
        self._early: dict[Path, tuple[str, asyncio.Future[Answer[list[lsp.Diagnostic]]]]] = {}

    @property
    def active(self) -> bool:
        return bool(self.changes)

    async def before(self) -> None:
        """Diagnostics of the files as they are now (and, for ``others``, of the files using them)."""
        if not self.active:
            return
        await asyncio.gather(
            *(self._before_one(c.path, c.before, c.target) for c in self.changes if c.before is not None)
        )
        if self.others:
            for path in await self._dependents():
                await self._before_other(path)

    async def _before_other(self, path: Path) -> None:
        text = self._seen(path)
        self._other_text[path] = text
        self._notes.pop(path, None)
        await self._before_one(path, text, path)

    def _seen(self, path: Path) -> str:
        """The text of ``path`` the servers check: the editor's buffer when it is open there."""
        editor = self.ctx.env.changes.unsaved(path)
        return editor if editor is not None else path.read_text(errors="replace")

    def typed_meanwhile(self) -> list[Path]:
        """The other files whose editor buffer changed since their "before" was taken: the user
        typed there while the change was reviewed. None once a changed file holds the change
        already (a client applying a change as it confirms it), which their diagnostics would
        then count as old."""
        unsaved = self.ctx.env.changes.unsaved
        typed = [p for p, text in self._other_text.items() if unsaved(p) not in (None, text)]
        if typed and any(c.after != c.before and unsaved(c.path) == c.after for c in self.changes):
            return []
        return typed

    async def before_again(self, paths: list[Path]) -> None:
        """Once the change is approved, before it is written: the "before" of ``paths`` (from
        ``typed_meanwhile``), of what the user has in them now."""
        await asyncio.gather(*(self._before_other(path) for path in paths))

    def before_known(self) -> bool:
        """The "before" from what the bridge already knows for exactly these texts, without a
        request (and so without a task); False if some file must be asked (then call ``before``)."""
        if self.others or not self.active:
            return not self.active
        assert self.bridge is not None
        for change in self.changes:
            if change.before is not None and change.target not in self._before:
                known = self.bridge.known_diagnostics(change.path, change.before)
                if known is None:
                    return False
                self._keep(change.target, change.before, known)
        return True

    async def _before_one(self, path: Path, text: str, key: Path) -> None:
        """Diagnostics of ``path`` (holding ``text``), kept under ``key`` (where it will be after)."""
        assert self.bridge is not None
        known = self.bridge.known_diagnostics(path, text)
        try:
            found = known if known is not None else (await self.bridge.diagnostics_after_change(path)).value
        except BridgeError as error:
            self._notes[key] = f"no diagnostics ({error})"
            return
        self._keep(key, text, found)

    def _keep(self, key: Path, text: str, found: list[lsp.Diagnostic]) -> None:
        lines = text.split("\n")
        self._before[key] = Counter(_key(d, lines) for d in found if d.severity in self.severities)

    async def _before_onto(self, path: Path, onto: str) -> str:
        """Diagnostics of ``onto`` as the "before" of ``path`` (a note if none came). Its document
        holds the merged text now, the editor's: ``onto`` is put in it for the question, then
        the editor's text as it is by then goes back."""
        assert self.bridge is not None
        if path in self._early:  # of the proposed text, which is not what was written
            await self._drop(path)
        try:
            found = (await self.bridge.diagnostics_after_change(path, onto)).value
        except BridgeError as error:
            return f"no diagnostics ({error})"
        finally:
            editor = self.ctx.env.changes.unsaved(path)
            if editor is not None:
                self.bridge.update_document(path, editor)
            else:
                self.bridge.clear_overlay(path)
        self._keep(path, onto, found)
        return ""

    async def _dependents(self) -> list[Path]:
        """Other workspace files referring to symbols in changed or deleted lines (most uses first)."""
        assert self.bridge is not None
        changed = {c.path for c in self.changes} | {c.target for c in self.changes}
        uses: Counter[Path] = Counter()
        for change in self.changes:
            if change.before is None or change.path in self._notes:
                continue
            try:
                symbols = (await self.bridge.document_symbols(change.path)).value
                for symbol in _touched(symbols, change)[:MAX_SYMBOLS]:
                    refs = await self.bridge.references(change.path, symbol.selection_range.start, False)
                    for span in refs.value:
                        path = uri_to_path(span[0])
                        if path not in changed and is_within(path, self.ctx.root) and self._shown(path):
                            uses[path] += 1
            except BridgeError as error:
                log.info("no dependents of %s: %s", change.path, error)
        return [path for path, _n in uses.most_common(MAX_OTHER_FILES)]

    def _shown(self, path: Path) -> bool:
        return self.hidden is None or not self.hidden(self.ctx.relative(path))

    def start_after(self) -> bool:
        """Ask for the diagnostics of the new text now, while the sink writes it (the bridge reads
        the proposed text until ``after`` hands the file back to the disk); once per file. Files an
        editor has open with its own text are left alone. True if a request was started."""
        assert self.bridge is not None
        started = False
        for change in self.changes:
            doc = self.bridge.documents.get(change.target)
            if (
                change.after is None
                or change.target in self._notes
                or change.target in self._early
                or (doc is not None and doc.overlay)
            ):
                continue
            pull = asyncio.ensure_future(self.bridge.diagnostics_after_change(change.target, change.after))
            self._early[change.target] = (change.after, pull)
            started = True
        return started

    async def discard(self) -> None:
        """Nothing was written after all: drop the early pulls and the proposed texts."""
        for path in list(self._early):
            await self._drop(path)

    async def _drop(self, path: Path) -> None:
        assert self.bridge is not None
        _text, pull = self._early.pop(path)
        pull.cancel()
        await asyncio.gather(pull, return_exceptions=True)
        self.bridge.clear_overlay(path)

    async def after(self, applied: list[Applied]) -> list[FileReport]:
        """New problems in every written file and in the files that used what changed."""
        if not self.active:
            await self.discard()
            return []
        written = {a.change.target: a for a in applied if a.written is not None}
        assert self.bridge is not None
        # The watcher's events for these writes are read now, usually while the server still
        # works on the new text, rather than by the first bridge call after its answer.
        self.bridge.look_at_disk()
        targets = [
            (c.target, written[c.target].written, written[c.target].onto)
            for c in self.changes
            if c.target in written
        ]
        targets += [(p, None, None) for p in self._other_text]
        try:
            if len(targets) == 1:  # the usual case: no gather (a task, more loop turns)
                reports = [await self._after_one(*targets[0])]
            else:
                reports = await asyncio.gather(*(self._after_one(*target) for target in targets))
        finally:
            await self.discard()
        return [r for r in reports if r.new or r.note or r.path in written]

    async def _after_one(self, path: Path, text: str | None, onto: str | None) -> FileReport:
        """``onto``: the user's text the change was merged onto (``Applied.onto``), which
        replaces the "before": the change is to blame only for what it added to their edits."""
        assert self.bridge is not None
        report = FileReport(path, note=self._notes.get(path, ""))
        if not report.note and onto is not None:
            report.note = await self._before_onto(path, onto)
        if report.note:
            return report
        try:
            early = self._early.get(path)
            if early is not None and early[0] == text:
                answer = await early[1]
                self._early.pop(path)
                self.bridge.clear_overlay(path, written=text)
            else:
                if early is not None:  # the reviewer changed it: ask about what was written
                    await self._drop(path)
                answer = await self.bridge.diagnostics_after_change(path)
            text = text if text is not None else self._seen(path)
        except (BridgeError, OSError) as error:
            report.note = f"no diagnostics ({error})"
            return report
        if not answer.complete:
            report.note = "; ".join(answer.notes)
        old = Counter(self._before.get(path, Counter[Key]()))
        lines = text.split("\n")
        new: list[tuple[Path, lsp.Diagnostic]] = []
        for diagnostic in sorted(answer.value, key=lambda d: (d.range.start.line, d.range.start.character)):
            if diagnostic.severity not in self.severities:
                continue
            key = _key(diagnostic, lines)
            if old[key] > 0:
                old[key] -= 1
                report.old += 1
            else:
                new.append((path, diagnostic))
        if self.hidden is not None and new:  # messages quote what the server inferred elsewhere
            sources = Sources(self.ctx.root, self.bridge, self.hidden)
            report.unquoted = await unquoted_messages(sources, new)
        report.new = [format_diagnostic(diagnostic, lines) for _path, diagnostic in new]
        return report


def _key(diagnostic: lsp.Diagnostic, lines: list[str]) -> Key:
    line = diagnostic.range.start.line
    content = lines[line].strip() if line < len(lines) else ""
    return (diagnostic.severity, diagnostic.code, diagnostic.source, diagnostic.message, content)


def _touched(
    symbols: list[lsp.DocumentSymbol | lsp.SymbolInformation], change: FileChange
) -> list[lsp.DocumentSymbol]:
    """The innermost symbols whose lines the change edits, then the symbols enclosing them (a
    changed ``__init__`` breaks the callers of its class); all top-level ones for a delete/move."""
    flat = [s for s in symbols if isinstance(s, lsp.DocumentSymbol)]
    if change.after is None or change.move_to is not None:
        return flat
    edited = [
        (h.old_start - 1, h.old_start - 1 + max(h.old_lines, 1))
        for h in hunks(change.before or "", change.after)
    ]

    def hit(symbol: lsp.DocumentSymbol) -> bool:
        return any(a <= symbol.range.end.line and symbol.range.start.line < b for a, b in edited)

    found: list[lsp.DocumentSymbol] = []
    todo = [(s, list[lsp.DocumentSymbol]()) for s in flat if hit(s)]
    while todo:
        symbol, outer = todo.pop()
        inner = [c for c in symbol.children or [] if hit(c)]
        todo += [(c, [symbol, *outer]) for c in inner]
        if not inner:
            found += [s for s in (symbol, *outer) if s not in found]
    return found


def format_diagnostic(diagnostic: lsp.Diagnostic, lines: list[str]) -> str:
    """``ERROR [line:col] message (source)``, 1-based, the column in characters."""
    start = diagnostic.range.start
    text = lines[start.line] if start.line < len(lines) else ""
    units = text.encode("utf-16-le")[: start.character * 2]
    column = len(units.decode("utf-16-le", errors="ignore")) + 1
    label = SEVERITY.get(diagnostic.severity or lsp.DiagnosticSeverity.Error, "INFO")
    source = f" ({diagnostic.source})" if diagnostic.source else ""
    message = " ".join(diagnostic.message.split())
    return f"{label} [{start.line + 1}:{column}] {message}{source}"


def render(reports: list[FileReport], ctx: ToolContext) -> str:
    """The text the model reads under the tool's own output (empty when there is nothing to say)."""
    blocks: list[str] = []
    for report in reports:
        shown = ctx.relative(report.path)
        if report.new:
            head = f"New problems in {shown} after this change, please fix:"
            body = report.new[:MAX_PER_FILE]
            if len(report.new) > MAX_PER_FILE:
                body.append(f"... and {len(report.new) - MAX_PER_FILE} more")
            blocks.append("\n".join([head, *body, *([UNQUOTED_MESSAGES] if report.unquoted else [])]))
        if report.old:
            blocks.append(f"({shown}: {report.old} problem(s) that were there before are not shown.)")
        if report.note:
            blocks.append(f"({shown}: {report.note})")
    return "\n".join(blocks)
