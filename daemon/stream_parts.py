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


class StreamedText:
    """An answer's text part while it streams: stored with its first piece, then again
    ``SAVE_EVERY`` seconds after a piece that came since (one write a second at most, however
    fast the pieces come). ``finish`` stores what the step keeps of it."""

    def __init__(self, store: Store, message: str) -> None:
        self.store, self.message = store, message
        self.part: int | None = None
        self._text = ""
        self._timer: asyncio.TimerHandle | None = None

    def streamed(self, text: str) -> None:
        """``text``: all of the answer's text so far."""
        self._text = text
        if self.part is None:
            self.part = self.store.add_part(self.message, "text", text)
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(SAVE_EVERY, self._save)

    def _save(self) -> None:
        self._timer = None
        assert self.part is not None
        try:
            self.store.update_part(self.part, text=self._text)
        except StoreError as error:  # said when the step stores its text at its end
            log.warning("the streamed text could not be saved: %s", error)

    def finish(self, text: str | None) -> None:
        """No more saves; the part (if any streamed) holds ``text`` (None: it is left as saved)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.part is not None and text is not None:
            self.store.update_part(self.part, text=text)
