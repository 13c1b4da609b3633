"""One running language server for one workspace root, on pygls's LanguageClient.

It initializes with honest client capabilities, answers the server's requests, tracks dynamic
registrations, feeds readiness signals ($/progress, log messages) to ``readiness.Loading`` and
pushed diagnostics to ``publishes.Publishes``, and sends requests with a timeout that ends in
$/cancelRequest. When the process dies, every pending request fails at once with
ServerTerminated.

The server's requests and notifications are dispatched by pygls (its handlers, lsprotocol types
and converter), except the frequent ones (progress, requests answered with null), read in
``_on_server_message``; our requests and their answers go through ``rpc.RpcStream`` (see there
why not through pygls). An answer is read by the caller's ``decode`` from raw JSON, by default
into the method's lsprotocol result type through the same converter.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient
from pygls.protocol import default_converter

from .capabilities import client_capabilities
from .errors import RequestFailed, RequestTimeout, ServerStartError, ServerTerminated
from .process import ServerProcess, spawn
from .publishes import Publishes
from .readiness import Loading
from .rpc import Message, RpcStream
from .spec import ServerSpec

log = logging.getLogger(__name__)

CONTENT_MODIFIED = -32801
SERVER_CANCELLED = -32802
INTERNAL_ERROR = -32603
READ_ONLY_RETRIES = 3
OUTPUT_CLOSED_GRACE = 2.0  # seconds a server whose stdout closed has to exit before it is killed

Decode = Callable[[Any], Any]

# Server requests whose answer is always null (diagnostics are pulled fresh for every question,
# so a refresh needs no work; lspilot shows no message boxes).
NULL_REPLIES = frozenset(
    {
        "window/workDoneProgress/create",
        "window/showMessageRequest",
        "workspace/diagnostic/refresh",
        "workspace/semanticTokens/refresh",
        "workspace/inlayHint/refresh",
        "workspace/codeLens/refresh",
    }
)


class ServerConnection:
    """A started, initialized server process for ``(spec, root)``."""

    def __init__(self, spec: ServerSpec, root: Path, argv: list[str]) -> None:
        self.spec = spec
        self.root = root
        self.argv = argv
        self.capabilities = lsp.ServerCapabilities()
        self.registrations: dict[str, lsp.Registration] = {}
        self.published = Publishes()
        # uri -> (version, text sent, publishDiagnostics count when it was sent, when: monotonic,
        # ``changes`` when it was sent)
        self.open_documents: dict[str, tuple[int, str, int, float, int]] = {}
        # What the server sees changed so far: documents changed (or opened or closed with text
        # the disk does not have), files changed on disk under its root. A publish about a
        # document sent before the latest change may be stale.
        self.changes = 0
        self.file_created_at = 0.0  # when the watcher last reported a file it handles created (monotonic)
        #: Changes under the root that no didChangeWatchedFiles registration covered when they were
        #: seen: sent once a registration covers them (see ``Synchronizer.refresh``).
        self.unwatched: dict[Path, lsp.FileChangeType] = {}
        self.watch_registered = False  # a didChangeWatchedFiles registration came since the last pass
        # the document store's latest version when open_documents were last brought up to date
        self.synced_version = 0
        self.process: ServerProcess | None = None
        self._spawning: asyncio.Future[ServerProcess] | None = None
        self.on_exit: Callable[[ServerConnection], None] | None = None
        self._terminated = asyncio.Event()
        self._why_ended = "is not running"
        self._rpc = RpcStream(spec.name, self._on_server_message)
        self.loading = Loading(spec.readiness, root, self._rpc)
        self._stopping = False
        self._tasks: list[asyncio.Task[None]] = []
        self._converter = default_converter()
        self.client = LanguageClient("lspilot", "0.1.0", converter_factory=lambda: self._converter)
        self._register_handlers()

    def publish_may_be_stale(self, uri: str) -> bool:
        """The server pushes diagnostics and something else changed since the open document
        ``uri`` was last sent: a push server re-checks a document only when it changes, so the
        publish for its version may predate a file it imports being deleted or edited."""
        sent = self.open_documents.get(uri)
        return not self.pull_diagnostics and sent is not None and sent[4] < self.changes

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self, timeout: float) -> None:
        # The spawn is a task of its own: a stop() or a cancelled caller during it waits for the
        # process and ends it, instead of leaving it to run unowned.
        self._spawning = asyncio.ensure_future(spawn(self.spec.name, self.argv, self.root, self.spec.env))
        try:
            self.process = process = await asyncio.shield(self._spawning)
        except asyncio.CancelledError:
            await self.stop(graceful=False)
            raise
        if self._stopping:  # stop() came during the spawn and ends the process
            raise ServerStartError(f"{self.spec.name} was stopped while it started")
        proc = process.proc
        assert proc.stdin is not None and proc.stdout is not None
        self.client.protocol.set_writer(proc.stdin)  # pygls answers the server's requests
        reader = self._rpc.start(proc.stdout, proc.stdin)
        reader.add_done_callback(self._on_output_end)
        self._tasks = [reader, asyncio.create_task(self._watch_exit())]
        root_uri = self.root.as_uri()
        params = lsp.InitializeParams(
            process_id=os.getpid(),
            root_uri=root_uri,
            root_path=str(self.root),
            workspace_folders=[lsp.WorkspaceFolder(uri=root_uri, name=self.root.name)],
            capabilities=client_capabilities(),
            initialization_options=self.spec.init_options or None,
            client_info=lsp.ClientInfo(name="lspilot", version="0.1.0"),
        )
        try:
            result: lsp.InitializeResult = await self.request("initialize", params, timeout)
        except (RequestTimeout, ServerTerminated, RequestFailed) as error:
            self._ended(f"failed to initialize: {error}")  # a crash, so restarts back off
            await self.stop(graceful=False)
            raise ServerStartError(
                f"{self.spec.name} failed to initialize: {error}{self._stderr_suffix()}"
            ) from error
        except asyncio.CancelledError:  # nobody will stop it later: the caller went away
            await self.stop(graceful=False)
            raise
        self.capabilities = result.capabilities
        self.notify("initialized", lsp.InitializedParams())
        if self.spec.settings:
            self.notify(
                "workspace/didChangeConfiguration",
                lsp.DidChangeConfigurationParams(settings=self.spec.settings),
            )

    async def stop(self, graceful: bool = True, timeout: float = 3.0) -> None:
        """shutdown + exit, then SIGTERM, then SIGKILL the process group."""
        if self._stopping:
            return
        self._stopping = True
        if self.process is None:
            if self._spawning is None:
                return
            try:
                self.process = await self._spawning
            except Exception:
                return  # no process was started
            graceful = False
        if graceful and not self.process.exited:
            params: dict[str, Any] | None = None if self.spec.shutdown_params_null else {}
            with contextlib.suppress(Exception):
                await self.request("shutdown", params, timeout)
                self.notify("exit", None)
                await asyncio.wait_for(self.process.proc.wait(), timeout)
        await self.process.stop()
        self._rpc.close()
        tasks = [*self._tasks, *self.loading.tasks]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    @property
    def rpc(self) -> RpcStream:
        """The wire: raw JSON-RPC on this server's pipes (benchmarks measure the bridge against it)."""
        return self._rpc

    @property
    def alive(self) -> bool:
        return self.process is not None and not self._terminated.is_set()

    def check_alive(self) -> None:
        """Raise ServerTerminated if the server is gone."""
        if self._terminated.is_set():
            raise self._gone()

    async def _watch_exit(self) -> None:
        assert self.process is not None
        code = await self.process.proc.wait()
        self._ended(f"exited with code {code}")

    def _on_output_end(self, reader: asyncio.Task[None]) -> None:
        """The server's stdout ended or could not be read: end the server, which is restarted on
        next use, rather than leave it looking alive while no answer can arrive."""
        if reader.cancelled() or self._stopping:  # by stop(), or by the event loop ending
            return
        if self._rpc.failure is not None:
            self._kill(self._rpc.failure)
        else:  # usually the server is exiting: its exit code says more than the closed output
            self._tasks.append(asyncio.create_task(self._kill_if_still_running()))

    async def _kill_if_still_running(self) -> None:
        assert self.process is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self.process.proc.wait()), OUTPUT_CLOSED_GRACE)
        self._kill("closed its output")

    def _kill(self, why: str) -> None:
        if not self._stopping and self.process is not None and not self.process.exited:
            self.process.kill()
            self._ended(f"{why}; killed it")

    def _ended(self, why: str) -> None:
        """The server is gone (or of no use): fail what is pending; a crash unless we stopped it."""
        if self._terminated.is_set():
            return
        self._terminated.set()
        self._why_ended = why
        self._rpc.close(why)
        # Wake whoever waits for readiness or a publish: what they do next raises ServerTerminated.
        self.loading.wake()
        self.published.wake()
        if not self._stopping:
            log.warning("%s (root %s) %s", self.spec.name, self.root, why)
            if self.on_exit is not None:
                self.on_exit(self)

    def _gone(self) -> ServerTerminated:
        return ServerTerminated(f"{self.spec.name} {self._why_ended}{self._stderr_suffix()}")

    def _stderr_suffix(self) -> str:
        tail = self.process.stderr_text() if self.process else ""
        return f"\n--- {self.spec.name} stderr (tail) ---\n{tail}" if tail else ""

    def _on_server_message(self, message: Message) -> None:
        """A request or notification from the server: answered here or by pygls's handlers."""
        method = message["method"]
        if method in NULL_REPLIES and "id" in message:
            # The server may wait for this (pyright does before every references search):
            # answer at once rather than through pygls's dispatch.
            self._rpc.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            return
        if method == "$/progress":  # several per request: read here, not structured by pygls
            params: Any = message.get("params")
            if isinstance(params, dict):
                progress = cast(dict[str, Any], params)
                value: Any = progress.get("value")
                kind = cast(dict[str, Any], value).get("kind") if isinstance(value, dict) else None
                self.loading.on_progress(str(progress.get("token")), kind)
            return
        protocol = self.client.protocol
        structured: Any = protocol.structure_message(message)
        protocol.handle_message(structured)

    # -- requests ------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: Any,
        timeout: float,
        *,
        read_only: bool = False,
        decode: Decode | None = None,
    ) -> Any:
        """Send a request; on timeout cancel it; retry ContentModified for read-only ones.

        ``params`` is an lsprotocol object, or its JSON already (a dict, sent as it is).
        The result is ``decode(raw JSON)``, or by default the lsprotocol type of ``method``.
        """
        for attempt in itertools.count():
            try:
                return await self._request_once(method, params, timeout, decode)
            except RequestFailed as error:
                if not (read_only and error.code == CONTENT_MODIFIED and attempt < READ_ONLY_RETRIES):
                    raise
                log.debug("%s: %s got ContentModified, retrying", self.spec.name, method)
        raise AssertionError("unreachable")

    async def _request_once(self, method: str, params: Any, timeout: float, decode: Decode | None) -> Any:
        if self._terminated.is_set():
            raise self._gone()
        raw: Any = params
        if params is not None and not isinstance(params, dict):
            raw = self._converter.unstructure(params)
        try:
            answer = await self._rpc.call(method, raw, timeout)
        except ServerTerminated as error:
            raise ServerTerminated(f"{error} during {method}{self._stderr_suffix()}") from None
        error: Any = answer.get("error")
        if error is not None:
            error = cast(dict[str, Any], error) if isinstance(error, dict) else {}
            raise RequestFailed(method, error.get("code"), str(error.get("message", "")))
        try:
            return (decode or self._decoder(method))(answer.get("result"))
        except Exception as problem:
            log.exception("%s: cannot read the result of %s", self.spec.name, method)
            raise RequestFailed(method, INTERNAL_ERROR, f"unreadable result: {problem}") from problem

    def diagnostics_from_json(self, report: Any) -> list[lsp.Diagnostic]:
        """The diagnostics of a pull answer (a full report; an unchanged one has none), without
        structuring the whole response."""
        items: list[Any] = cast(dict[str, Any], report).get("items") or [] if isinstance(report, dict) else []
        return [self._converter.structure(item, lsp.Diagnostic) for item in items]

    def _decoder(self, method: str) -> Decode:
        response_type = self.client.protocol.get_result_type(method)
        if response_type is None:
            return lambda result: result
        return lambda result: (
            self._converter.structure({"jsonrpc": "2.0", "id": 0, "result": result}, response_type).result
        )

    def notify(self, method: str, params: Any) -> None:
        if self._terminated.is_set():
            raise self._gone()
        if method == "textDocument/didOpen":
            self.loading.opened = True
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params if isinstance(params, dict) else self._converter.unstructure(params)
        self._rpc.send(message)

    # -- capabilities ----------------------------------------------------------------------

    def supports(self, provider: str, method: str | None = None) -> bool:
        """Whether a static ``*_provider`` capability or a dynamic registration exists."""
        value = getattr(self.capabilities, provider, None)
        if value is not None and value is not False:  # not "in (None, False)": that calls __eq__
            return True
        return method is not None and any(r.method == method for r in self.registrations.values())

    @property
    def pull_diagnostics(self) -> bool:
        return self.supports("diagnostic_provider", "textDocument/diagnostic")

    @property
    def incremental_sync(self) -> bool:
        sync = self.capabilities.text_document_sync
        kind = sync.change if isinstance(sync, lsp.TextDocumentSyncOptions) else sync
        return kind == lsp.TextDocumentSyncKind.Incremental

    # -- server -> client ------------------------------------------------------------------

    def _register_handlers(self) -> None:
        handlers: dict[str, Callable[[Any], Any]] = {
            "workspace/configuration": self._on_configuration,
            "client/registerCapability": self._on_register,
            "client/unregisterCapability": self._on_unregister,
            "workspace/workspaceFolders": lambda _params: [
                lsp.WorkspaceFolder(uri=self.root.as_uri(), name=self.root.name)
            ],
            "workspace/applyEdit": lambda _params: lsp.ApplyWorkspaceEditResult(
                applied=False, failure_reason="lspilot applies edits through its own tools"
            ),
            "window/logMessage": self._on_log_message,
            "window/showMessage": self._on_log_message,
            "textDocument/publishDiagnostics": self.published.add,
            "telemetry/event": lambda _params: None,
            "$/typescriptVersion": lambda _params: None,
            "textDocument/clangd.fileStatus": lambda _params: None,
        }
        for method, handler in handlers.items():
            # pygls tags handlers with attributes, which bound methods cannot carry.
            self.client.feature(method)(_function(handler))

    def _on_configuration(self, params: lsp.ConfigurationParams) -> list[Any]:
        return [self.spec.setting(item.section) for item in params.items]

    def _on_register(self, params: lsp.RegistrationParams) -> None:
        for registration in params.registrations:
            self.registrations[registration.id] = registration
            if registration.method == "workspace/didChangeWatchedFiles":
                self.watch_registered = True
            self.loading.on_register(registration.method)

    def _on_unregister(self, params: lsp.UnregistrationParams) -> None:
        for unregistration in params.unregisterations:
            self.registrations.pop(unregistration.id, None)

    def _on_log_message(self, params: lsp.LogMessageParams) -> None:
        log.debug("%s: %s", self.spec.name, params.message)
        self.loading.on_log(params.message)


def _function(handler: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def call(params: Any) -> Any:
        return handler(params)

    return call
