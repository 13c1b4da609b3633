"""The ``lspilot`` command's entry point (``[project.scripts]`` in pyproject.toml), and
``InterruptsAfter`` for the imports of lspilot's start.

The script pip writes runs ``from <module> import main`` before anything of lspilot can handle
Ctrl-C; for ``daemon.cli``, which loads the whole command line, that was most of lspilot's first
tenth of a second, and a Ctrl-C then ended in a ``KeyboardInterrupt`` traceback. So this module
loads nothing the script has not (``types`` comes with its ``re``; ``signal`` is imported where
Ctrl-C is handled), and loads the command line inside ``main``, where Ctrl-C exits 130 quietly, as
it does once ``cli.main`` runs. What comes before the script calls ``main`` is Python's: a Ctrl-C
in Python's own start (its first milliseconds, more in an editable install) can still end in
"Fatal Python error: init_import_site".
"""

from types import FrameType, TracebackType


class InterruptsAfter:
    """Ctrl-C during the block raises ``KeyboardInterrupt`` as the block ends, not inside it. Python
    does not deliver it well in the middle of an import: raised in a weakref callback or a
    ``__del__`` it is printed as "Exception ignored" and lost, in a class's ``__set_name__`` it
    becomes a ``RuntimeError``. Only for blocks that cannot wait on anything (imports): Ctrl-C does
    not interrupt the block. Where Ctrl-C does not raise ``KeyboardInterrupt`` (ignored, as in a
    job a script started with ``&``, or another thread) the block runs as it would without this."""

    def __enter__(self) -> None:
        import signal  # noqa: PLC0415 - see the module's docstring

        self._arrived = self._noting = False
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            try:
                signal.signal(signal.SIGINT, self._note)
                self._noting = True
            except ValueError:  # not the main thread: signals are not ours to handle
                pass

    def _note(self, signum: int, frame: FrameType | None) -> None:
        self._arrived = True

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        import signal  # noqa: PLC0415

        if self._noting:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        if self._arrived and kind is None:
            raise KeyboardInterrupt


def main() -> int:
    try:
        with InterruptsAfter():
            from .cli import main as command_line  # noqa: PLC0415
    except KeyboardInterrupt:
        return 130
    return command_line()
