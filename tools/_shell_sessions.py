"""Commands run in a terminal session or later: ``tmux``, ``screen``, ``at``, ``batch``, ``crontab``.

What they run is analyzed as if run directly, so that its own rules apply, and the outer command
can only be approved exactly. ``tmux new-session``, ``new-window``, ``split-window``,
``respawn-*`` and ``display-popup`` run a command (several words) or a script (one); ``run-shell``,
``pipe-pane`` and ``if-shell`` a script; ``bind-key``, ``set-hook``, ``if-shell`` and
``confirm-before`` a tmux command, read in turn; ``send-keys`` types into a pane, whose keys are
read as a script (``Enter`` ends a line). Only ``new-session`` runs in the current folder: the
others run where the session or pane is, unless ``-c DIR`` says, so their relative paths are
unknown (``(tmux pane)/x``). ``screen CMD`` runs a command here, ``screen -X stuff TEXT`` types.
``at`` and ``batch`` run their script on stdin later, from the current folder; ``crontab`` installs
the table on stdin, whose jobs run from the home folder. A script in a file (``at -f FILE``,
``crontab FILE``) cannot be known: it counts as the outside place ``(at -f FILE)``. Any job
scheduled (and ``crontab -e``) is also ``protected``: it runs later, outside these asks. A tmux
configuration file (``tmux -f FILE``, ``source-file FILE``) is read, as a script file
(``_shell_sources``), and its commands analyzed as those on the command line.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from ._arity import always_prefix
from ._shell_commands import STDIN_SCRIPT
from ._shell_paths import State
from ._shell_specs import Wrapper
from ._shell_words import Parsed, Word, option_value, parse_options
from ._shell_wrappers import Wrappers, _chdir  # pyright: ignore[reportPrivateUsage]


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


TMUX_PANE = "(tmux pane)"
SCREEN_WINDOW = "(screen window)"
_TMUX_GLOBAL = frozenset({"-L", "-S", "-f", "-T", "-c"})
#: tmux command: (what it does, its options with values, the option naming its folder).
_TMUX: dict[str, tuple[str, frozenset[str], str]] = {
    "new-session": ("session", _set("-c -e -F -f -n -s -t -x -y"), "-c"),
    "new-window": ("pane", _set("-c -e -F -n -t"), "-c"),
    "split-window": ("pane", _set("-c -e -l -t -F -p"), "-c"),
    "respawn-pane": ("pane", _set("-c -e -t"), "-c"),
    "respawn-window": ("pane", _set("-c -e -t"), "-c"),
    "display-popup": ("pane", _set("-b -c -d -e -h -s -S -t -T -w -x -y"), "-d"),
    "run-shell": ("shell", _set("-c -d -t"), "-c"),
    "pipe-pane": ("shell", frozenset({"-t"}), ""),
    "if-shell": ("if", frozenset({"-t"}), ""),
    "send-keys": ("keys", _set("-c -N -t"), ""),
    "bind-key": ("bind", _set("-N -T"), ""),
    "set-hook": ("hook", frozenset({"-t"}), ""),
    "confirm-before": ("hook", _set("-p -c -t"), ""),
    "source-file": ("source", frozenset({"-t"}), ""),
    "set-option": ("option", frozenset({"-t"}), ""),
}
_TMUX_ALIASES = {
    "new": "new-session",
    "neww": "new-window",
    "splitw": "split-window",
    "respawnp": "respawn-pane",
    "respawnw": "respawn-window",
    "popup": "display-popup",
    "run": "run-shell",
    "pipep": "pipe-pane",
    "if": "if-shell",
    "send": "send-keys",
    "bind": "bind-key",
    "confirm": "confirm-before",
    "source": "source-file",
    "set": "set-option",
}
#: tmux options whose value is a command: a script, or the shell (``default-shell``).
_TMUX_COMMAND_OPTIONS = frozenset({"default-command", "lock-command", "copy-command", "default-shell"})
_NEWLINE_KEYS = frozenset({"Enter", "KPEnter", "C-m", "C-M", "C-j", "C-J", "^M", "^J"})
_KEY = re.compile(
    r"(?:[CMS]-)*(?:Enter|Escape|Tab|BTab|Space|BSpace|Up|Down|Left|Right|Home|End|IC|DC|NPage|PPage"
    r"|PageUp|PageDown|PgUp|PgDn|F\d\d?|KP\w+)|(?:[CMS]-)+.|\^."
)
SCREEN = Wrapper(_set("-c -e -h -p -S -s -T -t"), frozenset({"-c"}))
_SCREEN_ATTACHING = _set("-r -R -x -d -D -Q -ls -list -wipe")  # with no -m: no command


class Sessions(Wrappers):
    """``tmux``, ``screen``, ``at``, ``batch`` and ``crontab``, on the analysis of wrappers."""

    def _session(self, name: str, words: list[Word], state: State, stdin: str | None) -> int | None:
        args = words[1:]
        values = [w.value for w in args]
        if name == "tmux":
            return self._tmux(words, state)
        if name == "screen":
            return self._screen(words, state)
        parsed = parse_options(values, frozenset({"-q", "-f", "-t", "-u", "-s", "-n"}))
        job = " ".join(w.raw for w in words) + ("" if stdin is None else f" <<< {shlex.quote(stdin)}")
        if parsed.flags & {"-l", "-r", "-d", "-c", "-e", "-V", "-i"}:  # list, remove, edit: no job
            if name == "crontab" and "-e" in parsed.flags:  # ... but what the editor writes is one
                self.protect(job)
            return always_prefix([w.value for w in words])
        self.protect(job)  # a job that runs later, outside this command's time and asks
        files = [option_value(args, i, a) for o, i, a in parsed.values if o == "-f"]
        if name == "crontab":
            files = [args[i] for i in parsed.operands if values[i] != "-"][:1]
        for file in files:  # a script in a file cannot be known
            self.path(file, state)
            self._outside(f"({name} {'-f ' if name != 'crontab' else ''}{file.raw})")
        if files:
            return None
        if stdin is None:
            self._outside(STDIN_SCRIPT)
        elif name == "crontab":  # jobs run from the home folder
            home = Path(os.path.expanduser("~")).resolve()
            self._string(Word(STDIN_SCRIPT, _crontab_script(stdin)), State(home, str(home)))
        else:  # at keeps the folder and environment
            self._string(Word(STDIN_SCRIPT, stdin), state.fork())
        return None

    def _tmux(self, words: list[Word], state: State) -> int | None:
        """``tmux [-L SOCKET] [-f FILE] [-c SCRIPT] COMMAND ... [; COMMAND ...]``."""
        args = words[1:]
        parsed = parse_options([w.value for w in args], _TMUX_GLOBAL, leading_options=True)
        ran = False
        for option, index, attached in parsed.values:
            value = option_value(args, index, attached)
            if option == "-f":
                ran = self._tmux_file(value, state) or ran
            elif option == "-c":
                ran = self._string(value, state.fork()) or True
        command: list[Word] = []
        for item in [args[i] for i in parsed.operands] + [Word(";", ";")]:
            text = item.value or ""
            if text.endswith(";") and not text.endswith("\\;"):  # ends a tmux command
                if text != ";":
                    command.append(Word(item.raw[:-1], text[:-1]))
                ran = self._tmux_command(command, state) or ran
                command = []
            else:
                command.append(item)
        return None if ran else always_prefix([w.value for w in words])

    def _tmux_command(self, words: list[Word], state: State) -> bool:
        """One tmux command; True when it runs something."""
        if not words or words[0].value is None:
            return False
        name = _TMUX_ALIASES.get(words[0].value, words[0].value)
        name = next((n for n in _TMUX if n == name or (len(name) > 2 and n.startswith(name))), name)
        if name not in _TMUX:
            return False
        kind, takes, chdir = _TMUX[name]
        args = words[1:]
        parsed = parse_options([w.value for w in args], takes, leading_options=True)
        inner = state.fork() if kind == "session" else _elsewhere(state, TMUX_PANE)
        for option, index, attached in parsed.values:
            if option == chdir:
                value = option_value(args, index, attached)
                self.path(value, state)
                inner = _chdir(value, state)
        operands = [args[i] for i in parsed.operands]
        if kind in ("session", "pane") and len(operands) > 1:
            self.command(operands, inner)
        elif kind in ("session", "pane", "shell") and operands:
            if "-C" in parsed.flags:  # run-shell -C: a tmux command
                return self._tmux_string(operands[0], state)
            self._string(operands[0], inner)
        elif kind == "if" and operands:
            if "-F" not in parsed.flags:
                self._string(operands[0], inner)
            for other in operands[1:]:
                self._tmux_string(other, state)
        elif kind == "keys":
            self._keys(args, parsed, inner)
        elif kind == "bind" and len(operands) > 1:
            self._tmux_command(operands[1:], state)
        elif kind == "hook" and operands:
            self._tmux_string(operands[-1], state)
        elif kind == "source":
            return any([self._tmux_file(operand, state) for operand in operands])
        elif kind == "option" and len(operands) > 1 and operands[0].value in _TMUX_COMMAND_OPTIONS:
            if operands[0].value == "default-shell":
                self.command(operands[1:2], inner)
            else:
                self._string(operands[1], inner)
        else:
            return kind == "keys"
        return True

    def _tmux_file(self, file: Word, state: State) -> bool:
        """A tmux configuration file (``-f FILE``, ``source-file FILE``), read as a script file
        (``Commands.source``): its commands, one a line (``\\`` continues it, ``;`` separates
        them), analyzed as those on the command line; a line with a ``{}`` block, a ``%if`` or
        quoting that does not split is unknown. True when it may run something."""
        self.path(file, state)
        text = self.source("tmux", file, state)
        if text is None:
            return True
        ran = False
        for number, line in enumerate(text.replace("\\\n", " ").splitlines(), 1):
            try:
                words = shlex.split(line, comments=True)
            except ValueError:
                words = None
            if words is None or line.lstrip().startswith("%") or "{" in words or "}" in words:
                self._outside(f"({file.raw}:{number}: {line.strip()})")
                ran = True
                continue
            command: list[Word] = []
            for item in [*words, ";"]:
                if item == ";":
                    ran = self._tmux_command(command, state) or ran
                    command = []
                else:
                    known = None if "$" in item else item  # tmux expands $VAR
                    command.append(Word(item, known, tilde=item.startswith("~")))
        return ran

    def _tmux_string(self, text: Word, state: State) -> bool:
        """A tmux command given as one string (``set-hook NAME 'run-shell CMD'``)."""
        try:
            words = shlex.split(text.value or "", comments=False) if text.value is not None else None
        except ValueError:
            words = None
        if words is None:
            self._string(Word(text.raw, None), state)
            return True
        return self._tmux_command([Word(w, w) for w in words], state)

    def _keys(self, args: list[Word], parsed: Parsed, state: State) -> None:
        """``send-keys KEY...``: key names (``Enter``, ``C-m``: a new line) and text typed, read as
        a script; ``-l`` types them all as text; with ``-H`` or ``-X`` they are unknown."""
        keys = [args[i] for i in parsed.operands]
        raw = " ".join(w.raw for w in keys)
        if parsed.flags & {"-H", "-X"} or any(w.value is None for w in keys):
            self._string(Word(raw, None), state)
            return
        text = "".join(
            w.value or ""
            if "-l" in parsed.flags or not _KEY.fullmatch(w.value or "")
            else "\n"
            if w.value in _NEWLINE_KEYS
            else " "
            if w.value == "Space"
            else ""
            for w in keys
        )
        self._string(Word(raw, text), state)

    def _screen(self, words: list[Word], state: State) -> int | None:
        """``screen [OPTIONS] CMD`` runs CMD here; ``screen -X stuff TEXT`` types into a window,
        ``screen -X screen CMD`` or ``-X exec CMD`` runs CMD there."""
        args = words[1:]
        values = [w.value for w in args]
        parsed = parse_options(values, SCREEN.values, leading_options=True)
        operands = [args[i] for i in parsed.operands]
        if "-X" in parsed.flags:
            there = _elsewhere(state, SCREEN_WINDOW)
            for option, index, attached in parsed.values:
                if option == "-c":
                    self.path(option_value(args, index, attached), state)
            action = operands[0].value if operands else None
            if action == "stuff" and len(operands) > 1:
                text = operands[1].value
                typed = None if text is None else re.sub(r"\\n|\\r|\^M|\^J|\\015|\\012", "\n", text)
                self._string(Word(operands[1].raw, typed), there)
            elif action in ("screen", "exec") and len(operands) > 1:
                self.command(operands[1:], there)
            return None if action in ("stuff", "screen", "exec") else always_prefix([w.value for w in words])
        if "-m" not in parsed.flags and (set(values) | parsed.flags) & _SCREEN_ATTACHING:
            return always_prefix([w.value for w in words])
        return self._wrapper("screen", words, state, None, False, spec=SCREEN)


def _elsewhere(state: State, place: str) -> State:
    """A state whose folder is only known as ``place`` (``(tmux pane)``)."""
    inner = state.fork()
    inner.cwd, inner.pwd = place, None
    return inner


def _crontab_script(table: str) -> str:
    """The jobs of a crontab as a script: its ``NAME=VALUE`` lines as assignments, and the command
    of each job (after five time fields, or ``@reboot`` and the like) up to its first ``%``."""
    lines: list[str] = []
    for line in map(str.strip, table.splitlines()):
        assignment = re.fullmatch(r"([A-Za-z_]\w*)\s*=\s*(.*)", line)
        if not line or line.startswith("#"):
            continue
        if assignment:
            value = assignment[2].strip("'\"")
            lines.append(f"{assignment[1]}={shlex.quote(value)}")
            continue
        fields = line.split(None, 1 if line.startswith("@") else 5)
        command = fields[-1] if len(fields) == (2 if line.startswith("@") else 6) else ""
        lines.append(re.split(r"(?<!\\)%", command)[0].replace("\\%", "%"))
    return "\n".join(lines)
