"""bash: run a shell command after asking exactly what it does, with hard limits.

The command is analyzed first (``_shell.py``): ``external_directory`` for paths outside the
workspace, then ``bash`` for the commands themselves. If a script file the analysis read (``sed -f
FILE``) changed while the user was asked, it does not run (``_shell_sources.stale``). It then
runs in bash in its own process group with stdin closed; combined stdout and stderr stream to
``ctx.metadata``. A timeout or an abort stops the whole group (SIGTERM, then SIGKILL). Long output
keeps its tail (errors come last) and is saved whole; values of credential variables
(``*_API_KEY``, ``*_TOKEN``, ...) are redacted. Limits come from ``[tools.bash]``:
``default_timeout_ms``, ``max_timeout_ms``, ``kill_grace_ms``.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel, ConfigDict, Field

from ._shell import (
    analyze,
    permission_requests,  # noqa: F401  (lspilot check-command imports it from here)
    requests_for,
)
from ._shell_process import GroupGuard, Redactor, choose_shell, secrets, stop_group
from ._shell_sources import stale
from .base import InitContext, Tool, ToolError, ToolResult
from .context import ToolContext
from .truncate import OutputLimits, save

CHUNK = 64 * 1024
SPILL_CHARS = 8 * 1024 * 1024  # beyond this the output goes to its file instead of memory
METADATA_CHARS = 30_000  # live output shown to whoever watches the call


class BashParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    command: str = Field(min_length=1, description="The command to run")
    timeout: int | None = Field(
        default=None, ge=1, description="Timeout in milliseconds (default 120000; see the maximum above)"
    )
    workdir: str | None = Field(
        default=None, description="Directory to run in (default: the workspace root). Use it instead of cd."
    )
    description: str = Field(
        description="What the command does in 5-10 words, shown to the user, e.g. 'Run the unit tests'"
    )


@dataclass(frozen=True)
class BashSettings:
    default_timeout_ms: int = 120_000
    max_timeout_ms: int = 600_000
    kill_grace_ms: int = 2_000

    @classmethod
    def from_settings(cls, settings: dict[str, Any]) -> BashSettings:
        table: Any = settings.get("tools", {}).get("bash", {})
        if not isinstance(table, dict):
            raise ToolError("[tools.bash] must be a table")
        known = set(cls.__dataclass_fields__)
        for key, value in table.items():  # pyright: ignore[reportUnknownVariableType]
            if key not in known:
                raise ToolError(f"unknown [tools.bash] setting {key!r}; known: {sorted(known)}")
            if not isinstance(value, int) or value < 1:
                raise ToolError(f"[tools.bash] {key} must be a positive integer, not {value!r}")
        chosen = cls(**table)  # pyright: ignore[reportUnknownArgumentType]
        if "default_timeout_ms" not in table and chosen.default_timeout_ms > chosen.max_timeout_ms:
            chosen = cls(**{**table, "default_timeout_ms": chosen.max_timeout_ms})  # pyright: ignore[reportUnknownArgumentType]
        if chosen.default_timeout_ms > chosen.max_timeout_ms:
            raise ToolError("[tools.bash] default_timeout_ms is larger than max_timeout_ms")
        return chosen


class Bash(Tool[BashParams]):
    id = "bash"
    Params = BashParams
    permission = "bash"

    async def init(self, ctx: InitContext) -> None:
        limits = BashSettings.from_settings(ctx.settings)
        self.description = (
            type(self)
            .description.replace("{default_timeout_ms}", str(limits.default_timeout_ms))
            .replace("{max_timeout_ms}", str(limits.max_timeout_ms))
        )

    async def run(self, params: BashParams, ctx: ToolContext) -> ToolResult:
        limits = BashSettings.from_settings(ctx.env.settings)
        timeout = params.timeout or limits.default_timeout_ms
        if timeout > limits.max_timeout_ms:
            raise ToolError(
                f"timeout {timeout} ms is above the maximum of {limits.max_timeout_ms} ms "
                "([tools.bash] max_timeout_ms). Use a smaller timeout, or start a long job in the "
                "background with its output redirected to a file and check on it later."
            )
        if not params.command.strip():
            raise ToolError("The command is empty.")
        if "\0" in params.command:  # no command line carries one (exec refuses it)
            raise ToolError("The command holds a NUL character (\\0), which no command line can carry.")
        workdir = ctx.resolve(params.workdir) if params.workdir else ctx.root
        if not workdir.is_dir():
            raise ToolError(f"workdir {params.workdir} is not an existing directory.")
        analysis = analyze(params.command, workdir, ctx.root, [ctx.env.output_dir])
        for request in requests_for(params.command, analysis):
            request.metadata["description"] = params.description
            await ctx.ask(request)
        if changed := stale(analysis.sources):
            raise ToolError(
                f"Nothing ran: {', '.join(changed)} changed after the command was checked, while it "
                "waited for approval, and the command runs it as a script. Call the tool again to "
                "have the new content checked."
            )
        run = _Run(params, ctx, workdir, timeout, limits.kill_grace_ms / 1000)
        result = await run.execute()
        if unsaved := ctx.env.changes.not_saved():
            names = ", ".join(ctx.relative(path) for path in unsaved)
            result.output += (
                f"\n(Not saved in the editor, so the command saw them as they are on disk: {names}. "
                "Ask the user to save them if it should see the editor's text.)"
            )
            result.metadata["unsaved"] = [str(path) for path in unsaved]
        return result


class _Capture:
    """Decoded, redacted output: whole in memory up to ``SPILL_CHARS``, then in its file, with the
    tail kept for the model and for live progress."""

    def __init__(self, limits: OutputLimits, folder: Path, name: str) -> None:
        self.limits = limits
        self.folder = folder
        self.name = name
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.redactor = Redactor(secrets(os.environ))
        self.parts: list[str] = []
        self.chars = 0
        self.newlines = 0
        self.tail = ""
        self.keep = max(limits.max_bytes, METADATA_CHARS)
        self.path: Path | None = None
        self.file: IO[str] | None = None

    def add(self, data: bytes, final: bool = False) -> None:
        text = self.redactor.feed(self.decoder.decode(data, final))
        if final:
            text += self.redactor.flush()
        if not text:
            return
        self.chars += len(text)
        self.newlines += text.count("\n")
        self.tail = (self.tail + text)[-self.keep :]
        if self.file is not None:
            self.file.write(text)
            return
        self.parts.append(text)
        if self.chars > SPILL_CHARS:
            self.path = save("".join(self.parts), self.folder, self.name)
            self.file = self.path.open("a")
            self.parts = []

    def finish(self) -> tuple[str, Path | None]:
        """The text for the model (the tail, with a note when cut) and where the whole is saved."""
        self.add(b"", final=True)
        if self.file is not None:
            self.file.close()
        text = self.tail if self.file is not None else "".join(self.parts)
        kept = _tail(text, self.limits)
        if self.path is None and kept == text:
            return text, None
        if self.path is None:
            self.path = save(text, self.folder, self.name)
        size = self.path.stat().st_size
        omitted = self.newlines - kept.count("\n")
        note = (
            f"... {omitted} earlier lines ({size - len(kept.encode())} bytes) not shown. The full output "
            f"is saved at {self.path}. Use the read tool with offset/limit on that file, or grep it, "
            "to see the rest; do not rerun the command just to see more.\n\n"
        )
        return note + kept, self.path


def _tail(text: str, limits: OutputLimits) -> str:
    """The end of ``text`` within the limits."""
    lines = text.split("\n")
    kept: list[str] = []
    size = 0
    for line in reversed(lines[-limits.max_lines :]):
        line_size = len(line.encode()) + 1
        if size + line_size > limits.max_bytes:
            if not kept:  # one enormous line: keep its end
                kept.append(line.encode()[-limits.max_bytes :].decode(errors="ignore"))
            break
        kept.append(line)
        size += line_size
    kept.reverse()
    return "\n".join(kept)


class _Run:
    def __init__(
        self, params: BashParams, ctx: ToolContext, workdir: Path, timeout: int, grace: float
    ) -> None:
        self.params = params
        self.ctx = ctx
        self.workdir = workdir
        self.timeout = timeout
        self.grace = grace
        self.capture = _Capture(ctx.env.limits, ctx.env.output_dir, f"bash-{ctx.call_id or 'call'}")
        self.shell = choose_shell(os.environ)

    def _progress(self, **extra: Any) -> None:
        output = self.capture.tail[-METADATA_CHARS:]
        self.ctx.metadata(
            self.params.description, {"output": output, "description": self.params.description, **extra}
        )

    async def _pump(self, stream: asyncio.StreamReader) -> None:
        while data := await stream.read(CHUNK):
            self.capture.add(data)
            self._progress()

    async def execute(self) -> ToolResult:
        guard = await GroupGuard.start()  # the group dies with lspilot, even killed with SIGKILL
        try:
            process = await guard.spawn(self.shell, self.params.command, self.workdir)
            return await self._follow(process)
        finally:
            await guard.release()

    async def _follow(self, process: asyncio.subprocess.Process) -> ToolResult:
        assert process.stdout is not None
        stopped: str | None = None
        shell_exit: int | None = None
        try:
            async with asyncio.timeout(self.timeout / 1000):
                await self._pump(process.stdout)
                await process.wait()
        except TimeoutError:
            shell_exit = process.returncode
            stopped = await stop_group(process, self.grace)
            try:
                async with asyncio.timeout(self.grace):  # what the group wrote before it died
                    await self._pump(process.stdout)
            except TimeoutError:
                pass  # a process that left the group still holds the output open
        except asyncio.CancelledError:
            stopped = await stop_group(process, self.grace)
            self._progress(aborted=True, stopped=stopped)
            raise
        return self._result(process.returncode, stopped, shell_exit)

    def _result(self, code: int | None, stopped: str | None, shell_exit: int | None) -> ToolResult:
        body, path = self.capture.finish()
        if stopped is not None:
            status = _timeout_status(self.timeout, stopped, shell_exit)
        elif code is not None and code < 0:
            status = f"(terminated by signal {signal.Signals(-code).name})"
        else:
            status = f"(exit code {code})"
        output = f"{body.rstrip()}\n\n{status}" if body.strip() else f"(no output)\n\n{status}"
        metadata: dict[str, Any] = {
            "output": self.capture.tail[-METADATA_CHARS:],
            "description": self.params.description,
            "exit": code,
            "timedOut": stopped is not None,
            "timeout": self.timeout,
            "stopped": stopped,
            "shell": self.shell,
            "truncated": path is not None,
        }
        if path is not None:
            metadata["outputPath"] = str(path)
        return ToolResult(self.params.description or self.params.command, output, metadata)


def _timeout_status(timeout: int, stopped: str, shell_exit: int | None) -> str:
    how = {
        "SIGTERM": "its process group was stopped with SIGTERM",
        "SIGKILL": "its process group ignored SIGTERM and was killed with SIGKILL",
        "exited": "it had already exited",
    }[stopped]
    held = (
        f" The shell itself had exited with code {shell_exit}, but a background process kept the "
        "output open; start long-running background processes with their output redirected "
        "(`cmd > log 2>&1 &`)."
        if shell_exit is not None
        else ""
    )
    return (
        f"(timed out after {timeout} ms: {how}.{held} If the command needs longer, call it again "
        "with a larger timeout.)"
    )
