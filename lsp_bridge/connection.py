"""One running language server for one workspace root, on pygls's LanguageClient.

It initializes with honest client capabilities, answers the server's requests, tracks
readiness ($/progress and per-server log signals), dynamic registrations and pushed diagnostics,
and sends requests with a timeout that ends in $/cancelRequest. When the process dies, every
pending request fails at once with ServerTerminated.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.io_ import run_async
from pygls.lsp.client import LanguageClient

from .capabilities import client_capabilities
from .errors import RequestFailed, RequestTimeout, ServerStartError, ServerTerminated
from .process import ServerProcess, spawn
from .spec import ServerSpec

log = logging.getLogger(__name__)

CONTENT_MODIFIED = -32801
SERVER_CANCELLED = -32802
READ_ONLY_RETRIES = 3


@dataclass
class PushedDiagnostics:
    version: int | None
    diagnostics: list[lsp.Diagnostic]
    seq: int  # how many publishes had arrived when this one did


class ServerConnection:
    """A started, initialized server process for ``(spec, root)``."""

    def __init__(self, spec: ServerSpec, root: Path, argv: list[str]) -> None:
        self.spec = spec
        self.root = root
        self.argv = argv
        self.capabilities = lsp.ServerCapabilities()
        self.registrations: dict[str, lsp.Registration] = {}
        self.diagnostics: dict[str, PushedDiagnostics] = {}
        # uri -> (version, text sent, publishDiagnostics count when it was sent)
        self.open_documents: dict[str, tuple[int, str, int]] = {}
        self.process: ServerProcess | None = None
        self.on_exit: Callable[[ServerConnection], None] | None = None
        self._publish_seq = 0
        self._published = asyncio.Event()  # replaced after every publish; waiters re-check
        self._progress: set[str] = set()
        self._progress_idle = asyncio.Event()
        self._progress_idle.set()
        self._log_ready = asyncio.Event()
        if spec.readiness.log_pattern is None:
            self._log_ready.set()
        self._terminated = asyncio.Event()
        self._opened = False
        self._load_done = asyncio.Event()  # a progress ended after the first didOpen
        if not any((root / name).exists() for name in spec.readiness.open_starts_progress):
            self._load_done.set()
        self._ids = itertools.count(1)
        self._stopping = False
        self.client = LanguageClient("lspilot", "0.1.0")
        self._register_handlers()

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self, timeout: float) -> None:
        self.process = await spawn(self.spec.name, self.argv, self.root, self.spec.env)
        proc = self.process.proc
        assert proc.stdin is not None and proc.stdout is not None
        self.client.protocol.set_writer(proc.stdin)
        self._tasks = [
            asyncio.create_task(
                run_async(
                    stop_event=self.client._stop_event,  # pyright: ignore[reportPrivateUsage]
                    reader=proc.stdout,
                    protocol=self.client.protocol,
                    logger=log,
                    error_handler=self._report_error,
                )
            ),
            asyncio.create_task(self._watch_exit()),
        ]
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
            await self.stop(graceful=False)
            raise ServerStartError(
                f"{self.spec.name} failed to initialize: {error}{self._stderr_suffix()}"
            ) from error
        self.capabilities = result.capabilities
        self.client.protocol.notify("initialized", lsp.InitializedParams())
        if self.spec.settings:
            self.client.protocol.notify(
                "workspace/didChangeConfiguration",
                lsp.DidChangeConfigurationParams(settings=self.spec.settings),
            )

    async def stop(self, graceful: bool = True, timeout: float = 3.0) -> None:
        """shutdown + exit, then SIGTERM, then SIGKILL the process group."""
        if self.process is None or self._stopping:
            return
        self._stopping = True
        if graceful and not self.process.exited:
            params: dict[str, Any] | None = None if self.spec.shutdown_params_null else {}
            with contextlib.suppress(Exception):
                await self.request("shutdown", params, timeout)
                self.client.protocol.notify("exit", None)
                await asyncio.wait_for(self.process.proc.wait(), timeout)
        await self.process.stop()
        self.client._stop_event.set()  # pyright: ignore[reportPrivateUsage]
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    @property
    def alive(self) -> bool:
        return self.process is not None and not self._terminated.is_set()

    async def _watch_exit(self) -> None:
        assert self.process is not None
        code = await self.process.proc.wait()
        self._terminated.set()
        if not self._stopping:
            log.warning("%s (root %s) exited with code %s", self.spec.name, self.root, code)
            if self.on_exit is not None:
                self.on_exit(self)

    def _stderr_suffix(self) -> str:
        tail = self.process.stderr_text() if self.process else ""
        return f"\n--- {self.spec.name} stderr (tail) ---\n{tail}" if tail else ""

    def _report_error(self, error: Exception, source: Any) -> None:
        log.error("%s sent something unexpected (%s): %s", self.spec.name, source, error)

    # -- requests ------------------------------------------------------------------------

    async def request(self, method: str, params: Any, timeout: float, *, read_only: bool = False) -> Any:
        """Send a request; on timeout cancel it; retry ContentModified for read-only ones."""
        for attempt in itertools.count():
            try:
                return await self._request_once(method, params, timeout)
            except RequestFailed as error:
                if not (read_only and error.code == CONTENT_MODIFIED and attempt < READ_ONLY_RETRIES):
                    raise
                log.debug("%s: %s got ContentModified, retrying", self.spec.name, method)
        raise AssertionError("unreachable")

    async def _request_once(self, method: str, params: Any, timeout: float) -> Any:
        if self._terminated.is_set():
            raise ServerTerminated(f"{self.spec.name} is not running{self._stderr_suffix()}")
        msg_id = next(self._ids)
        response = self.client.protocol.send_request_async(method, params, msg_id=msg_id)
        terminated = asyncio.ensure_future(self._terminated.wait())
        try:
            done, _ = await asyncio.wait(
                {response, terminated}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            terminated.cancel()
        if response in done:
            try:
                return response.result()
            except JsonRpcException as error:
                raise RequestFailed(method, error.code, error.message) from error
            except RuntimeError as error:  # pygls fails pending futures when the process exits
                raise ServerTerminated(f"{self.spec.name}: {error}{self._stderr_suffix()}") from error
        # The late answer (or the server's RequestCancelled error) is dropped when it arrives.
        response.add_done_callback(_consume)
        if terminated in done:
            raise ServerTerminated(f"{self.spec.name} exited during {method}{self._stderr_suffix()}")
        self.client.protocol.notify("$/cancelRequest", lsp.CancelParams(id=msg_id))
        raise RequestTimeout(f"{self.spec.name} did not answer {method} within {timeout:g}s")

    def notify(self, method: str, params: Any) -> None:
        if self._terminated.is_set():
            raise ServerTerminated(f"{self.spec.name} is not running{self._stderr_suffix()}")
        if method == "textDocument/didOpen":
            self._opened = True
        self.client.protocol.notify(method, params)

    # -- readiness -----------------------------------------------------------------------

    async def wait_ready(self, bound: float) -> bool:
        """Wait until the server's answers are complete; False if ``bound`` passed first."""

        async def ready() -> None:
            await self._log_ready.wait()
            if self._opened:
                await self._load_done.wait()
            if self.spec.readiness.progress:
                while not self._progress_idle.is_set():
                    await self._progress_idle.wait()

        try:
            await asyncio.wait_for(ready(), bound)
        except TimeoutError:
            return False
        return True

    def expect_rescan(self) -> None:
        """Files were created or deleted: servers with a load log message load again."""
        if self.spec.readiness.log_pattern is not None:
            self._log_ready.clear()

    @property
    def busy(self) -> list[str]:
        """Progress tokens still running (for messages about incomplete answers)."""
        return sorted(self._progress)

    # -- capabilities ----------------------------------------------------------------------

    def supports(self, provider: str, method: str | None = None) -> bool:
        """Whether a static ``*_provider`` capability or a dynamic registration exists."""
        if getattr(self.capabilities, provider, None) not in (None, False):
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

    def watched_file_globs(self) -> list[str | lsp.RelativePattern]:
        globs: list[str | lsp.RelativePattern] = []
        for reg in self.registrations.values():
            if reg.method != "workspace/didChangeWatchedFiles" or reg.register_options is None:
                continue
            for watcher in _watchers(reg.register_options):
                globs.append(watcher)
        return globs

    # -- pushed diagnostics ----------------------------------------------------------------

    async def wait_published(
        self, uri: str, predicate: Callable[[PushedDiagnostics], bool], timeout: float
    ) -> PushedDiagnostics | None:
        async def arrived() -> PushedDiagnostics:
            while True:
                current = self.diagnostics.get(uri)
                if current is not None and predicate(current):
                    return current
                await self._published.wait()

        try:
            return await asyncio.wait_for(arrived(), timeout)
        except TimeoutError:
            return None

    @property
    def publish_seq(self) -> int:
        return self._publish_seq

    # -- server -> client ------------------------------------------------------------------

    def _register_handlers(self) -> None:
        handlers: dict[str, Callable[[Any], Any]] = {
            "workspace/configuration": self._on_configuration,
            "client/registerCapability": self._on_register,
            "client/unregisterCapability": self._on_unregister,
            "window/workDoneProgress/create": lambda _params: None,
            "workspace/workspaceFolders": lambda _params: [
                lsp.WorkspaceFolder(uri=self.root.as_uri(), name=self.root.name)
            ],
            "window/showMessageRequest": lambda _params: None,
            "workspace/applyEdit": lambda _params: lsp.ApplyWorkspaceEditResult(
                applied=False, failure_reason="lspilot applies edits through its own tools"
            ),
            "workspace/diagnostic/refresh": lambda _params: None,
            "workspace/semanticTokens/refresh": lambda _params: None,
            "workspace/inlayHint/refresh": lambda _params: None,
            "workspace/codeLens/refresh": lambda _params: None,
            "$/progress": self._on_progress,
            "window/logMessage": self._on_log_message,
            "window/showMessage": self._on_log_message,
            "textDocument/publishDiagnostics": self._on_publish_diagnostics,
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

    def _on_unregister(self, params: lsp.UnregistrationParams) -> None:
        for unregistration in params.unregisterations:
            self.registrations.pop(unregistration.id, None)

    def _on_progress(self, params: lsp.ProgressParams) -> None:
        value: Any = params.value
        kind: Any = (
            cast(dict[str, Any], value).get("kind")
            if isinstance(value, dict)
            else getattr(value, "kind", None)
        )
        token = str(params.token)
        if kind == "begin":
            self._progress.add(token)
        elif kind == "end":
            self._progress.discard(token)
            if self._opened:
                self._load_done.set()
        if self._progress:
            self._progress_idle.clear()
        else:
            self._progress_idle.set()

    def _on_log_message(self, params: lsp.LogMessageParams) -> None:
        log.debug("%s: %s", self.spec.name, params.message)
        pattern = self.spec.readiness.log_pattern
        if pattern is not None and pattern.search(params.message):
            self._log_ready.set()

    def _on_publish_diagnostics(self, params: lsp.PublishDiagnosticsParams) -> None:
        self._publish_seq += 1
        self.diagnostics[params.uri] = PushedDiagnostics(
            params.version, list(params.diagnostics), self._publish_seq
        )
        published, self._published = self._published, asyncio.Event()
        published.set()


def _function(handler: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def call(params: Any) -> Any:
        return handler(params)

    return call


def _consume(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


def _watchers(options: Any) -> list[str | lsp.RelativePattern]:
    """Glob patterns of a didChangeWatchedFiles registration (typed or raw JSON)."""
    raw: list[Any] = (
        cast(dict[str, Any], options).get("watchers", []) if isinstance(options, dict) else options.watchers
    )
    patterns: list[str | lsp.RelativePattern] = []
    for watcher in raw:
        pattern: Any = (
            cast(dict[str, Any], watcher).get("globPattern")
            if isinstance(watcher, dict)
            else watcher.glob_pattern
        )
        if isinstance(pattern, dict):
            relative = cast(dict[str, str], pattern)
            pattern = lsp.RelativePattern(base_uri=relative["baseUri"], pattern=relative["pattern"])
        if pattern is not None:
            patterns.append(pattern)
    return patterns
