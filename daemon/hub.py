"""The editor server's state for one workspace: its sessions, the turns running in them, and the
editor's buffers (fed to the shared lsp_bridge overlay so tools and language servers see unsaved text).

The pygls handlers in ``server.py`` parse nothing and decide nothing: they hand over to a ``Hub``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lsp_bridge import Bridge, BridgeConfig, BridgeError
from lsp_bridge.documents import BOM, from_utf16, lsp_lines, utf16_length
from tools import Rule, ToolError
from tools.context import shown_path
from tools.lsp import Operation, navigate

from . import config as configuration
from . import transcript
from .buffers import Buffers
from .config import ConfigError
from .editor import Editor, EditorAsker
from .follow import Follower
from .lease import SessionBusy
from .loop import Event, Loop
from .review import EditorChanges, Proposal
from .runtime import Runtime
from .updates import updates

log = logging.getLogger(__name__)


A = TypeVar("A", bound=BaseModel)


class CommandError(Exception):
    """Bad arguments or a request that cannot be served now; becomes a JSON-RPC error."""


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Position(_Args):
    line: int = Field(ge=0)
    character: int = Field(ge=0)


class Range(_Args):
    start: Position
    end: Position


class Context(_Args):
    uri: str
    range: Range | None = None
    version: int | None = None


class AskArgs(_Args):
    sessionId: str | None = None
    prompt: str = Field(min_length=1)
    agent: str | None = None
    model: str | None = None
    context: Context | None = None


class SessionArgs(_Args):
    sessionId: str


class NavigateArgs(_Args):
    operation: Operation
    uri: str | None = None
    position: Position | None = None
    symbol: str | None = None
    query: str | None = None


class FollowArgs(_Args):
    enabled: bool


class ResolveArgs(_Args):
    proposalId: str
    hunkIds: list[str] | None = None
    action: Literal["accept", "reject"]
    feedback: str | None = None


def parse(model: type[A], command: str, args: tuple[Any, ...]) -> A:
    """The single object argument of ``command``, validated; errors name the field and the problem."""
    if len(args) != 1 or not isinstance(args[0], dict):
        got = f"{len(args)} arguments" if len(args) != 1 else f"one {type(args[0]).__name__}"
        raise CommandError(f"{command} takes one object argument, got {got}")
    try:
        return model.model_validate(args[0])
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in error.errors()
        )
        raise CommandError(f"invalid arguments for {command}: {problems}") from None


@dataclass
class Running:
    loop: Loop
    task: asyncio.Task[Any]
    request_id: Any
    turn_id: str = ""

    def ids(self) -> dict[str, Any]:
        """What every update and review of this turn carries."""
        return {"sessionId": self.loop.env.session.id, "turnId": self.turn_id}


@dataclass
class Hub:
    root: Path
    editor: Editor
    running: dict[str, Running] = field(default_factory=dict[str, Running])
    buffers: Buffers = field(default_factory=Buffers)
    proposals: dict[str, Proposal] = field(default_factory=dict[str, Proposal])
    #: Each session's "reject for this session" rules, for its later turns.
    denied: dict[str, list[Rule]] = field(default_factory=dict[str, list[Rule]])
    _runtime: Runtime | None = None
    _config: tuple[Any, ...] = ()  # configuration.stamp of what _runtime was read from
    _bridge: Bridge | None = None
    _users: int = 0  # turns and navigations using the bridge's servers now
    follower: Follower = field(init=False)

    def __post_init__(self) -> None:
        self.follower = Follower(self.editor, self.root, self._source_lines)
        self.buffers.key = self.editor.names.key

    def _source_lines(self, path: Path) -> list[str]:
        return self.bridge.source_lines(path)  # the bridge starts on first use, not here

    @property
    def runtime(self) -> Runtime:
        """Read again when a configuration file (or the workspace's trust) changed: a tightened
        rule or another model applies from the next ask on, [lsp] settings as ``_servers`` says."""
        now = configuration.stamp(self.root)
        if self._runtime is None or now != self._config:
            try:
                self._runtime = self._runtime.reloaded() if self._runtime else Runtime.open(self.root)
            except ConfigError as error:
                raise CommandError(str(error)) from None
            self._config = now
        return self._runtime

    @property
    def bridge(self) -> Bridge:
        """One set of language servers for every session of this workspace."""
        if self._bridge is None:
            self._bridge = Bridge(self.root, self._bridge_config())
        return self._bridge

    def _bridge_config(self) -> BridgeConfig:
        try:
            return self.runtime.cfg.bridge()
        except ConfigError as error:
            raise CommandError(str(error)) from None

    @contextlib.asynccontextmanager
    async def _servers(self) -> AsyncIterator[Bridge]:
        """The bridge for a turn or a navigation, given the configuration's [lsp] settings first
        when they changed (trust granted or revoked, a file edited): the servers whose definition
        changed stop, to start with it at their next use; the others keep running. Not while a
        turn or a navigation uses the servers: those finish with the servers they have, and the
        first use after them switches."""
        if self._bridge is not None and not self._users:
            config = self._bridge_config()
            if config != self._bridge.config:
                try:
                    await self._bridge.reconfigure(config)
                except BridgeError as error:
                    raise CommandError(str(error)) from None
        self._users += 1
        try:
            yield self.bridge
        finally:
            self._users -= 1

    # -- buffers ----------------------------------------------------------------------------

    def buffer_changed(self, uri: str, text: str, version: int) -> None:
        if uri.startswith("file:"):
            path = self.editor.names.opened(uri)
            if path not in self.buffers.open:
                self.bridge.open_document(path, text)  # also a new file, not on disk yet
            else:
                self.bridge.update_document(path, text)
            self.buffers.update(path, version, text)

    def buffer_closed(self, uri: str) -> None:
        if not uri.startswith("file:"):
            return
        path, last = self.editor.names.closed(uri)
        if last and self.buffers.close(path):  # open under another name still: kept
            self.bridge.close_document(path)

    # -- turns ------------------------------------------------------------------------------

    async def ask(self, args: AskArgs, request_id: Any, progress: Any = None) -> dict[str, Any]:
        """Run one turn; ``progress`` is the client's workDoneToken, if it sent one."""
        self._refuse_if_running(args.sessionId)
        prompt = self._prompt(args)  # before a session exists: a bad context leaves none behind
        async with self._servers() as bridge:
            return await self._turn(args, prompt, bridge, request_id, progress)

    async def _turn(
        self, args: AskArgs, prompt: str, bridge: Bridge, request_id: Any, progress: Any
    ) -> dict[str, Any]:
        asker = EditorAsker(self.editor, args.sessionId or "")
        changes = EditorChanges(self.editor, self.buffers, self.proposals, self.follower)
        try:
            loop = self.runtime.loop(
                asker,
                session_id=args.sessionId,
                agent_name=args.agent,
                model=args.model,
                bridge=bridge,
                changes=changes,
            )
        except ConfigError as error:
            raise CommandError(str(error)) from None
        session_id = loop.env.session.id
        asker.session_id, asker.engine = session_id, loop.env.permissions
        asker.denied = self.denied.setdefault(session_id, [])
        loop.env.permissions.rules.extend(asker.denied)  # "reject for this session" of earlier turns
        try:
            await loop.initialize()
            self._refuse_if_running(session_id)  # another ask for it may have started meanwhile
        except BaseException:
            await loop.env.close()
            raise
        running = Running(loop, asyncio.create_task(loop.run_turn(prompt)), request_id)
        changes.ids = running.ids
        loop.listeners.append(lambda event: self._forward(running, event, progress))
        self.running[session_id] = running
        if progress is not None:
            self.editor.progress_begin(progress, "lspilot", args.prompt, on_cancel=running.task.cancel)
        try:
            result = await asyncio.shield(running.task)
            return {"sessionId": session_id, "turnId": result.turn_id, "stopReason": result.stop_reason}
        except SessionBusy as error:  # another process is running a turn in the session
            raise CommandError(str(error)) from None
        except asyncio.CancelledError:
            if not running.task.cancelled():  # the handler itself is being torn down
                running.task.cancel()
                raise
            return {"sessionId": session_id, "turnId": running.turn_id, "stopReason": "cancelled"}
        finally:
            del self.running[session_id]
            if progress is not None:
                self.editor.progress_end(progress)
            await loop.env.close()

    def _refuse_if_running(self, session_id: str | None) -> None:
        if session_id and session_id in self.running:
            raise CommandError(f"a turn is already running in session {session_id}; cancel it or wait")

    def _forward(self, running: Running, event: Event, progress: Any) -> None:
        """A loop event as ``lspilot/update`` notifications (and a progress message)."""
        if event.type == "turn.start":
            running.turn_id = event.data["turnId"]
        for update in updates(event, running.loop):
            self.editor.notify("lspilot/update", running.ids() | update)
        if event.type != "tool":
            return
        if progress is not None and event.data["state"] == "running":
            what = f"{event.data['tool']} {event.data.get('title') or ''}"
            self.editor.progress_report(progress, what.strip())
        if event.data["state"] == "completed":
            self.follower.tool_done(event.data["tool"], event.data.get("metadata") or {})

    def _prompt(self, args: AskArgs) -> str:
        if args.context is None or not args.context.uri.startswith("file:"):
            return args.prompt
        path = self.editor.names.path(args.context.uri)
        where = os.path.relpath(path, self.root) if path.is_relative_to(self.root) else str(path)
        selected = args.context.range
        if selected is None:
            return f"{args.prompt}\n\n(The user is looking at {where}.)"
        try:
            text = self._text(path)
        except OSError as error:
            raise CommandError(f"cannot read the context file {where}: {error.strerror or error}") from None
        lines = lsp_lines(text)[selected.start.line : selected.end.line + 1]
        span = f"{where}:{selected.start.line + 1}-{selected.end.line + 1}"
        excerpt = "\n".join(lines)
        return f"{args.prompt}\n\nThe user selected {span}:\n```\n{excerpt}\n```"

    def cancel(self, session_id: str) -> dict[str, Any]:
        running = self.running.get(session_id)
        if running is None:
            return {"cancelled": False}
        running.task.cancel()
        return {"cancelled": True}

    def cancel_request(self, request_id: Any) -> None:
        """``$/cancelRequest`` for an ``lspilot.ask`` stops its turn."""
        for running in list(self.running.values()):
            if running.request_id == request_id:
                running.task.cancel()

    def _text(self, path: Path) -> str:
        """The editor's text of ``path``, saved or not; else the file's (OSError if unreadable)."""
        text = self.buffers.text(path)
        text = text if text is not None else path.read_text(errors="replace")
        return text.removeprefix(BOM)  # the editor's positions count no BOM

    def _column(self, path: Path, at: Position) -> int:
        """The editor's UTF-16 column at ``at`` as the code point column the lsp tool takes."""
        try:
            lines = lsp_lines(self._text(path))
        except OSError:
            return at.character  # the tool says what is wrong with the file
        line = lines[at.line] if at.line < len(lines) else ""
        beyond = at.character - utf16_length(line)  # past the end: the tool says so
        return from_utf16(line, at.character) if beyond <= 0 else len(line) + beyond

    async def navigate(self, args: NavigateArgs) -> dict[str, Any]:
        """The lsp tool's structured answer (``locations`` / ``calls`` / ...) for the editor's own UI."""
        path = self.editor.names.path(args.uri) if args.uri else None
        at = args.position
        try:
            async with self._servers() as bridge:
                answer = await navigate(
                    bridge,
                    self.root,
                    args.operation,
                    path=path,
                    line=at.line + 1 if at else None,
                    character=(self._column(path, at) if path else at.character) + 1 if at else None,
                    symbol=args.symbol,
                    query=args.query,
                )
        except ToolError as error:
            raise CommandError(str(error)) from None
        return {"title": answer.title, "text": answer.text, **answer.metadata}

    def follow(self, args: FollowArgs) -> dict[str, Any]:
        """Show (or stop showing) where the agent reads, navigates and edits."""
        if args.enabled and not self.editor.shows_documents():
            raise CommandError("this editor cannot show documents (window/showDocument), so it cannot follow")
        self.follower.enabled = args.enabled
        return {"enabled": args.enabled}

    def resolve(self, args: ResolveArgs) -> dict[str, Any]:
        proposal = self.proposals.get(args.proposalId)
        if proposal is None or proposal.resolved.done():
            raise CommandError(f"no pending proposal {args.proposalId}")
        unknown = set(args.hunkIds or ()) - {h.id for h in proposal.blocks}
        if unknown:
            raise CommandError(f"proposal {args.proposalId} has no hunks {sorted(unknown)}")
        proposal.resolve(args.action, args.hunkIds, args.feedback)
        return {"resolved": True}

    # -- sessions ---------------------------------------------------------------------------

    def sessions(self) -> list[dict[str, Any]]:
        rows = self.runtime.store.sessions(self.root)
        elsewhere = self.runtime.store.running()  # also turns of other processes (lspilot run)
        return [
            {
                "sessionId": row["id"],
                "title": row["title"],
                "agent": row["agent"],
                "updated": row["updated"],
                "running": row["id"] in self.running or row["id"] in elsewhere,
            }
            for row in rows
        ]

    def history(self, args: SessionArgs) -> dict[str, Any]:
        """The session's transcript: one of this workspace (or of a project moved here since,
        whose old folder is gone), as a turn would continue it; not another project's."""
        root = self.runtime.store.session_root(args.sessionId)
        if root is None:
            raise CommandError(f"no session {args.sessionId!r}")
        if root != self.runtime.cfg.workspace and root.exists():
            raise CommandError(f"session {args.sessionId} belongs to {shown_path(str(root))}; open it there")
        return transcript.as_json(self.runtime.store, args.sessionId)

    async def close(self) -> None:
        """The editor went away: stop every turn, then the language servers; sessions stay consistent."""
        tasks = [running.task for running in self.running.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.follower.close()
        if self._bridge is not None:
            await self._bridge.shutdown()
        if self._runtime is not None:
            self._runtime.store.close()
