"""A command's answer on stdout, written and flushed: when that fails (a full disk) it is one line
on stderr saying so, and what was done nonetheless, not a traceback. A reader that went away
(``lspilot sessions list | head``) is a ``BrokenPipeError`` still, which ``cli.main`` ends quietly.
Standard library only."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator


class Unwritable(Exception):
    """The output could not be written; the message says so, and what was done."""


def why(error: OSError) -> str:
    """What the system said (``No space left on device``)."""
    return error.strerror or str(error)


@contextlib.contextmanager
def written(command: str, ran: str | None = None) -> Iterator[None]:
    """Write stdout in the block, then flush it; an ``Unwritable`` when that fails, saying that
    the tool ``ran`` nonetheless."""
    try:
        yield
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as error:
        said = f"{ran} ran, but its output cannot be written" if ran else "cannot write the output"
        raise Unwritable(f"lspilot {command}: {said} ({why(error)})") from None
