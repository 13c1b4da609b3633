"""Answers, and asking several servers one question: what the ones that answered said.

A config can route a file to several servers. One of them crashing or timing out must not lose
what the others answered: the answer is then incomplete, and a note names the server and why.
The question fails only when no server answered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from .errors import BridgeError

T = TypeVar("T")
S = TypeVar("S")


@dataclass
class Answer(Generic[T]):
    """A result, and whether it may be incomplete (a server was still busy), with why."""

    value: T
    complete: bool = True
    notes: list[str] = field(default_factory=list[str])


async def each(
    servers: Sequence[S], work: Callable[[S], Awaitable[T]], name: Callable[[S], str], notes: list[str]
) -> tuple[list[S], list[T]]:
    """``work`` for every server at once: the servers that answered and their answers.

    A server that failed with a ``BridgeError`` (terminated, timed out, refused) is left out
    with a note; if every server failed, the first error is raised. Other errors are bugs and
    are raised as they are.
    """
    results = await asyncio.gather(*(work(server) for server in servers), return_exceptions=True)
    answered = [(s, r) for s, r in zip(servers, results, strict=True) if not isinstance(r, BaseException)]
    for server, result in zip(servers, results, strict=True):
        if isinstance(result, BaseException):
            if not isinstance(result, BridgeError) or not answered:
                raise result
            others = ", ".join(name(s) for s, _r in answered)
            notes.append(f"{name(server)} failed ({result}); the answer is only from {others}")
    return [s for s, _r in answered], [r for _s, r in answered]
