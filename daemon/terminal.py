"""Answering asks from a terminal: a TTY prompt, ``--yes``, or a refusal when no one can answer."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading

from tools import PermissionDenied, PermissionRequest, Reply, ToolError

CHOICES = {"o": "once", "once": "once", "a": "always", "always": "always", "r": "reject", "reject": "reject"}


def _prompt(text: str) -> str:
    """The line typed to ``text``; EOFError at the end of input (Ctrl-D, or a terminal gone:
    every read then ends at once, so asking again would never stop)."""
    sys.stderr.write(text)
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        sys.stderr.write("\n")
        raise EOFError
    return line.strip()


async def _ask(text: str) -> str:
    """The answer typed to ``text``, read on a daemon thread of its own.

    Not ``asyncio.to_thread``: ``asyncio.run`` joins the default executor on the way out, so after
    Ctrl-C at a prompt the process would wait for a line that no one is going to type."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[str] = loop.create_future()

    def settle(value: str | BaseException) -> None:
        if answer.done():
            return
        if isinstance(value, BaseException):
            answer.set_exception(value)
        else:
            answer.set_result(value)

    def read() -> None:
        try:
            value: str | BaseException = _prompt(text)
        except Exception as error:
            value = error
        with contextlib.suppress(RuntimeError):  # the loop is gone: no one is waiting any more
            loop.call_soon_threadsafe(settle, value)

    threading.Thread(target=read, name="lspilot-prompt", daemon=True).start()
    return await answer


class TerminalAsker:
    """Asks on the terminal when stdin is a TTY; ``yes`` approves every ask (never a configured deny)."""

    def __init__(self, yes: bool = False) -> None:
        self.yes = yes
        self.interactive = sys.stdin.isatty()
        self._lock = asyncio.Lock()  # one prompt at a time, even when tools run concurrently

    async def permission(self, request: PermissionRequest) -> Reply:
        if self.yes:
            return Reply("once")
        if not self.interactive:
            raise PermissionDenied(
                f"{request.permission} {', '.join(request.patterns)} needs approval and there is no "
                "terminal to ask; run again with --yes to approve, or allow it in the config."
            )
        async with self._lock:
            sys.stderr.write(f"\nlspilot asks: {request.title}\n  {request.permission}: ")
            sys.stderr.write(", ".join(request.patterns) + "\n")
            for line in request.scope.lines():
                sys.stderr.write(f"  {line}\n")
            try:
                while True:
                    answer = await _ask("  allow [o]nce, [a]lways, or [r]eject? ")
                    if answer.lower() in CHOICES:
                        break
            except EOFError:  # Ctrl-D: no
                return Reply("reject")
            kind = CHOICES[answer.lower()]
            if kind != "reject":
                return Reply(kind)  # pyright: ignore[reportArgumentType]
            with contextlib.suppress(EOFError):
                feedback = await _ask("  tell the agent why or what to do instead (optional): ")
                return Reply("reject", feedback or None)
            return Reply("reject")

    async def question(self, question: str, options: list[str]) -> str:
        if not self.interactive:
            raise ToolError(
                "There is no one to answer questions in this session; decide yourself and say so."
            )
        async with self._lock:
            sys.stderr.write(f"\nlspilot asks: {question}\n")
            for number, option in enumerate(options, 1):
                sys.stderr.write(f"  {number}. {option}\n")
            try:
                answer = await _ask("  answer: ")
            except EOFError:
                raise ToolError("The user gave no answer; decide yourself and say so.") from None
            if answer.isdigit() and 1 <= int(answer) <= len(options):
                return options[int(answer) - 1]
            return answer
