"""The parts of a streamed answer that come in pieces, put together: tool calls and signed
thinking blocks (``daemon/model.py`` streams the answer), and its text as stored while it streams
(``daemon/loop.py``)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .store_errors import StoreError

if TYPE_CHECKING:
    from .model import Step
    from .store import Store

log = logging.getLogger(__name__)

#: Seconds between saves of an answer's text while it streams: what a process killed mid-answer
#: (kill -9, out of memory, a crash) can lose of what the user already saw.
SAVE_EVERY = 1.0


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str  # raw JSON text, parsed by the tool wrapper (which reports malformed JSON)


class Thinking:
    """Signed reasoning blocks put together from stream deltas: a block's text comes in pieces,
    then a piece with its signature (whose text, from litellm, repeats all of the answer's
    thinking so far: litellm's own ``stream_chunk_builder`` doubles the text, which voids the
    signature); a redacted block comes whole."""

    def __init__(self) -> None:
        self.blocks: list[dict[str, Any]] = []
        self._text: list[str] = []

    def add(self, pieces: list[Any] | None) -> None:
        for piece in pieces or []:
            if piece.get("type") == "redacted_thinking":
                self.blocks.append(dict(piece))
                self._text = []
            elif piece.get("signature"):
                text = "".join(self._text) or piece.get("thinking") or ""
                self.blocks.append({"type": "thinking", "thinking": text, "signature": piece["signature"]})
                self._text = []
            elif piece.get("thinking"):
                self._text.append(piece["thinking"])


class ToolCalls:
    """Tool calls put together from stream deltas.

    OpenAI sends each call's id and name once, then its arguments in pieces under the same
    ``index``. Ollama sends every call whole, all with index 0: a delta with a new id at an index
    starts a new call there."""

    def __init__(self) -> None:
        self.calls: list[dict[str, str]] = []
        self.at: dict[int, dict[str, str]] = {}  # a delta's index -> the call it continues

    def add(self, delta: Any) -> None:
        index = delta.index or 0
        entry = self.at.get(index)
        if entry is None or (delta.id and entry["id"] and delta.id != entry["id"]):
            entry = self.at[index] = {"id": "", "name": "", "arguments": ""}
            self.calls.append(entry)
        entry["id"] = delta.id or entry["id"]
        if delta.function:
            entry["name"] += delta.function.name or ""
            entry["arguments"] += delta.function.arguments or ""

    def finished(self) -> list[ToolCall]:
        """The calls in order, each with an id of its own: a missing id is made up and a repeated
        one gets a suffix, so every call's result can be told apart (in the store and when the
        history is sent back)."""
        seen: set[str] = set()
        out: list[ToolCall] = []
        for number, call in enumerate(self.calls):
            base = call["id"] or f"call_{number}"
            unique, n = base, 1
            while unique in seen:
                n += 1
                unique = f"{base}_{n}"
            seen.add(unique)
            out.append(ToolCall(unique, call["name"], call["arguments"]))
        return out


class StoredAnswer:
    """What is stored of one attempt at an answer while it streams: its reasoning and its text,
    each a part of the message, so a process killed mid-answer keeps what the user saw."""

    def __init__(self, store: Store, message: str) -> None:
        self.reasoning = Streamed(store, message, "reasoning")
        self.text = Streamed(store, message, "text")

    def streamed(self, kind: str, step: Step) -> None:
        """A piece of ``kind`` ("text" or "reasoning") came; ``step`` holds all so far."""
        if kind == "text":
            self.text.streamed(step.text)
        else:
            self.reasoning.streamed(step.reasoning)

    def keep(self, step: Step) -> None:
        """The parts hold all of ``step``'s reasoning (with its signed thinking) and text."""
        self.reasoning.finish(step.reasoning, {"thinking": step.thinking} if step.thinking else None)
        self.text.finish(step.text)

    def drop(self) -> None:
        """The attempt is tried again: no parts (the editors drop what they showed of it too)."""
        self.reasoning.drop()
        self.text.drop()

    def stop(self) -> None:
        """No more saves (the store failed: nothing more is written)."""
        self.reasoning.stop()
        self.text.stop()


class Streamed:
    """One part of an answer as it streams, its text or its reasoning (``kind``): stored with its
    first piece, then again ``SAVE_EVERY`` seconds after a piece that came since (one write a
    second at most, however fast the pieces come)."""

    def __init__(self, store: Store, message: str, kind: str) -> None:
        self.store, self.message, self.kind = store, message, kind
        self.part: int | None = None
        self._text = ""
        self._timer: asyncio.TimerHandle | None = None

    def streamed(self, text: str) -> None:
        """``text``: all of the part's text so far."""
        self._text = text
        if self.part is None:
            self.part = self.store.add_part(self.message, self.kind, text)
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(SAVE_EVERY, self._save)

    def _save(self) -> None:
        self._timer = None
        assert self.part is not None
        try:
            self.store.update_part(self.part, text=self._text)
        except StoreError as error:  # said when the step stores its parts at its end
            log.warning("the streamed %s could not be saved: %s", self.kind, error)

    def finish(self, text: str, metadata: dict[str, Any] | None = None) -> None:
        """No more saves; the part holds ``text`` and ``metadata``. A part nothing streamed of is
        stored only with ``metadata`` (a redacted thinking block)."""
        self.stop()
        if self.part is not None:
            self.store.update_part(self.part, text=text, metadata=metadata)
        elif metadata:
            self.part = self.store.add_part(self.message, self.kind, text, metadata=metadata)

    def drop(self) -> None:
        """No more saves, and no part."""
        self.stop()
        if self.part is not None:
            self.store.drop_part(self.part)
            self.part = None

    def stop(self) -> None:
        """No more saves."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
