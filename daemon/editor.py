"""The editor on the other end of `lspilot serve`: what the daemon may ask it and tell it.

``Editor`` wraps the pygls server's outgoing side (requests the editor answers, notifications it
reads) and knows whether the client implements lspilot's own requests
(``initializationOptions.lspilot = {review, permissions}``) or gets the standard-LSP fallbacks.
``EditorAsker`` answers a session's permission asks and questions through it; ``EditorLog``
mirrors lspilot's warnings and errors to the editor's log.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from tools import PermissionRequest, Reply, Rule, ToolError

from .names import EditorNames
from .redact import REDACTOR

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

    from tools import PermissionEngine

log = logging.getLogger(__name__)

PERMISSION_OPTIONS = [
    {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
    {"optionId": "allow_always", "name": "Always allow", "kind": "allow_always"},
    {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
    {"optionId": "reject_always", "name": "Reject for this session", "kind": "reject_always"},
]


def _options(request: PermissionRequest) -> list[dict[str, str]]:
    """The options of ``request``: when "always" can remember none of its patterns, its option
    is still offered (an answer the user is used to giving), named for what it does then."""
    if request.scope.remembered or not request.scope.refused:
        return PERMISSION_OPTIONS
    return [
        o | {"name": "Always allow (counts as once here)"} if o["kind"] == "allow_always" else o
        for o in PERMISSION_OPTIONS
    ]


class EditorLog(logging.Handler):
    """lspilot's own warnings and errors, from any thread, as ``window/logMessage`` (the full
    record, traceback included, stays in the log file)."""

    PACKAGES = ("daemon", "tools", "lsp_bridge")

    def __init__(self, server: LanguageServer, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(logging.WARNING)
        self.addFilter(REDACTOR)
        self.server = server
        self.loop = loop

    def emit(self, record: logging.LogRecord) -> None:
        if not record.name.startswith(self.PACKAGES) or self.loop.is_closed():
            return
        kind = types.MessageType.Error if record.levelno >= logging.ERROR else types.MessageType.Warning
        params = types.LogMessageParams(kind, f"lspilot: {record.getMessage()}")
        self.loop.call_soon_threadsafe(self.server.window_log_message, params)


@dataclass
class Editor:
    server: LanguageServer
    review: bool = False
    permissions: bool = False
    questions: bool = False  # answers lspilot/question (a free answer too), not only showMessageRequest
    names: EditorNames = field(default_factory=EditorNames)

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.server.protocol.notify(method, params)

    async def request(self, method: str, params: Any) -> Any:
        """Send a request and wait; if the waiting is cancelled, the editor is told to drop it."""
        msg_id = f"lspilot-{uuid.uuid4().hex[:12]}"
        try:
            return await self.server.protocol.send_request_async(method, params, msg_id=msg_id)
        except asyncio.CancelledError:
            self.server.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
            raise

    def shows_documents(self) -> bool:
        """The editor answers ``window/showDocument``."""
        window = self.server.client_capabilities.window
        return bool(window and window.show_document and window.show_document.support)

    def resource_operations(self) -> set[str]:
        """The file operations (create, rename, delete) the editor applies in a workspace edit."""
        workspace = self.server.client_capabilities.workspace
        edits = workspace.workspace_edit if workspace else None
        return {str(kind.value) for kind in (edits.resource_operations if edits else None) or []}

    async def apply_edit(self, edit: types.WorkspaceEdit) -> tuple[bool, str | None]:
        """Whether the editor applied ``edit``, and the reason it gave when it did not."""
        params = types.ApplyWorkspaceEditParams(edit, label="lspilot")
        answer = await self.request(types.WORKSPACE_APPLY_EDIT, params)
        if isinstance(answer, dict):
            return bool(answer.get("applied")), answer.get("failureReason")
        return bool(getattr(answer, "applied", False)), getattr(answer, "failure_reason", None)

    async def show_message_request(self, kind: int, message: str, actions: list[str]) -> str | None:
        answer = await self.request(
            types.WINDOW_SHOW_MESSAGE_REQUEST,
            types.ShowMessageRequestParams(
                type=types.MessageType(kind),
                message=message,
                actions=[types.MessageActionItem(a) for a in actions],
            ),
        )
        return getattr(answer, "title", None)

    # -- work done progress on a client-provided token --------------------------------------

    def progress_begin(self, token: Any, title: str, message: str, on_cancel: Callable[[], Any]) -> None:
        progress = self.server.work_done_progress
        begin = types.WorkDoneProgressBegin(title=title, message=message[:80], cancellable=True)
        progress.begin(token, begin)
        cancelled = progress.tokens.get(token)
        if cancelled is not None:  # window/workDoneProgress/cancel from the client cancels this future
            cancelled.add_done_callback(lambda future: on_cancel() if future.cancelled() else None)

    def progress_report(self, token: Any, message: str) -> None:
        self.server.work_done_progress.report(token, types.WorkDoneProgressReport(message=message[:80]))

    def progress_end(self, token: Any) -> None:
        self.server.work_done_progress.end(token, types.WorkDoneProgressEnd())
        self.server.work_done_progress.tokens.pop(token, None)


def field_of(answer: Any, name: str) -> Any:
    """A field of a response to a custom request (pygls hands those over as plain objects)."""
    return answer.get(name) if isinstance(answer, dict) else getattr(answer, name, None)


@dataclass
class EditorAsker:
    """``tools.Asker`` for one session of the editor server."""

    editor: Editor
    session_id: str
    engine: PermissionEngine | None = None  # set once the session's engine exists
    #: The session's "reject for this session" rules: kept by the hub for the session's later
    #: turns (each turn has an engine of its own).
    denied: list[Rule] = field(default_factory=list[Rule])

    async def permission(self, request: PermissionRequest) -> Reply:
        if self.editor.permissions:
            answer = await self.editor.request(
                "lspilot/requestPermission",
                {
                    "sessionId": self.session_id,
                    "toolCallId": request.call_id,
                    "permission": request.permission,
                    "patterns": request.patterns,
                    "title": request.title,
                    "detail": request.metadata,
                    "always": request.scope.remembered,
                    "alwaysRefused": [{"pattern": p, "reason": r} for p, r in request.scope.refused.items()],
                    "options": _options(request),
                },
            )
            if answer is None or field_of(answer, "cancelled"):
                return Reply("reject")  # dismissed: the turn stops, as after a plain reject
            choice = field_of(answer, "optionId")
            feedback = field_of(answer, "feedback")
        else:
            labels = {"Allow once": "allow_once", "Always allow": "allow_always", "Reject": "reject_once"}
            lines = [f"lspilot: {request.title}", f"{request.permission}: {', '.join(request.patterns)}"]
            what = "\n".join([*lines, *request.scope.lines()])
            picked = await self.editor.show_message_request(types.MessageType.Warning, what, list(labels))
            if picked is None:
                return Reply("reject")
            choice, feedback = labels.get(picked), None
        return self._reply(request, choice, feedback)

    def _reply(self, request: PermissionRequest, choice: Any, feedback: Any) -> Reply:
        if choice == "allow_once":
            return Reply("once")
        if choice == "allow_always":
            return Reply("always")
        if choice == "reject_always" and self.engine is not None:
            for pattern in request.always or request.patterns:
                rule = Rule(request.permission, pattern, "deny", "the editor, this session")
                self.engine.rules.append(rule)
                self.denied.append(rule)
        if choice in ("reject_once", "reject_always"):
            return Reply("reject", str(feedback) if feedback else None)
        log.warning("the editor answered %r, not one of the options; taken as a reject", choice)
        return Reply("reject")

    async def question(self, question: str, options: list[str]) -> str:
        """The user's answer: one of ``options`` or their own words, where the editor asks with
        ``lspilot/question``; else one of ``options`` (``window/showMessageRequest`` has no place
        to type, and without options nothing to pick)."""
        if self.editor.questions:
            answer = await self.editor.request(
                "lspilot/question", {"sessionId": self.session_id, "question": question, "options": options}
            )
            picked = None if answer is None or field_of(answer, "cancelled") else field_of(answer, "answer")
        else:
            picked = await self.editor.show_message_request(types.MessageType.Info, question, options)
        if not isinstance(picked, str) or not picked.strip():
            raise ToolError("The user dismissed the question without answering.")
        return picked
