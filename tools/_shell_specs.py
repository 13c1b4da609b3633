"""What the shell analysis knows about commands that run others, and about setting variables.

A ``Wrapper`` runs another command (``sudo``, ``env``, ``timeout``, ``xargs``, ...), a script
(``su -c CMD``, ``watch CMD``) or a shell (``su``, ``chroot DIR``): its options are skipped and
what it runs is analyzed as if run directly (``_shell_wrappers.py``). A ``Runner`` has
subcommands that do (``uv run``, ``docker exec``: ``_shell_runners.py``, ``_shell_remote.py``).
A ``Setter`` sets the variables it names (``read NAME``, ``printf -v NAME``, ``declare
NAME=VALUE``), like an assignment; ``hijacks`` tells the variables that change what runs. The
commands that name paths are in ``_shell_files.py``. Options are read by
``_shell_words.parse_options``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from ._shell_words import Word


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


@dataclass(frozen=True)
class Wrapper:
    #: Options followed by a value (``-u USER``); the value is not a path.
    values: frozenset[str] = frozenset()
    #: Options whose value is a path the wrapper itself reads or writes (``time -o FILE``).
    paths: frozenset[str] = frozenset()
    #: Operands before the wrapped command (``timeout DURATION``)...
    leading: int = 0
    #: ...which are paths it uses (``flock FILE``, ``chroot NEWROOT``).
    leading_paths: bool = False
    #: ``NAME=VALUE`` operands may precede the wrapped command (``env A=1 cmd``).
    assignments: bool = False
    #: Options whose value is optional and only attached (``xargs -i{}``, ``--replace=X``).
    optional: frozenset[str] = frozenset()
    #: Options whose value is the folder the command runs in (``env -C DIR``, ``sudo -D DIR``).
    chdir: frozenset[str] = frozenset()
    #: What follows: a command, the arguments of a shell (``su USER ARGS`` runs ``sh ARGS``),
    #: words joined into a script run with ``sh -c`` (``watch CMD``, ``parallel CMD ::: ARGS``), or
    #: scripts, one per word (``hyperfine CMD...``)...
    wrapped: Literal["command", "shell", "joined", "scripts"] = "command"
    #: ...but a command, with no leading operand, after one of these (``watch -x``, ``runuser -u``).
    direct: frozenset[str] = frozenset()
    #: Options whose value is a script run with ``sh -c`` (``su -c CMD``, ``flock FILE -c CMD``).
    code: frozenset[str] = frozenset()
    #: Options whose value is a script run after a program (``cargo watch -x test``: ``cargo test``).
    programs: Mapping[str, str] = field(default_factory=dict[str, str])
    #: Options whose value is the shell run instead of ``sh`` (``su -s SHELL``).
    shells: frozenset[str] = frozenset()
    #: With no command, a shell reading its script on stdin runs (``chroot DIR``, ``newgrp``)...
    shell: bool = False
    #: ...or does with one of these options (``sudo -s``).
    shell_options: frozenset[str] = frozenset()
    #: Its options may follow its operands (getopt permutes them: ``su USER -c CMD``).
    permute: bool = False
    #: Its options are read again after the leading operands (``ssh HOST -p 22 CMD``).
    again: bool = False
    #: What it runs starts after the first of these words, and nothing runs without one
    #: (``gdb --args CMD``, ``nix develop -c CMD``).
    until: frozenset[str] = frozenset()
    #: Options after which its words are joined into a script run with ``sh -c`` (``pnpm exec -c``).
    joining: frozenset[str] = frozenset()
    #: Options after which nothing runs (``ssh -N``).
    idle: frozenset[str] = frozenset()
    #: What it runs runs on the machine or in the container its leading operands name (``ssh
    #: HOST``, ``docker exec CONTAINER``): its paths are not ours, and that place counts as outside.
    elsewhere: bool = False
    #: Options whose value mounts a path of this machine (``docker run -v SRC:DST``, ``--mount``).
    mounts: frozenset[str] = frozenset()
    #: Options giving parameters replaced in the scripts it runs (``hyperfine -L NAME VALUES``:
    #: ``{NAME}`` in them; ``_shell_dialects.parameters``).
    parameters: frozenset[str] = frozenset()
    #: Options whose value spans several words (``hyperfine -P NAME MIN MAX``: 3).
    spans: Mapping[str, int] = field(default_factory=dict[str, int])
    #: Every option after one dash is a whole word, as getopt_long_only reads them (``gdb -nx``).
    long_only: bool = False
    #: Without one of ``until``, its first operand is a program it runs on its own (``gdb PROG
    #: [CORE]``: ``-ex run``, or ``run`` typed, runs it).
    program: bool = False
    #: Options whose value is ``NAME=VALUE`` in the command's environment (``watchexec -E``).
    environment: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Runner:
    #: Its subcommands that run a command, or hold more subcommands.
    commands: Mapping[str, Wrapper | Runner]
    #: Options before the subcommand that take a value...
    values: frozenset[str] = frozenset()
    #: ...a path it reads or writes...
    paths: frozenset[str] = frozenset()
    #: ...or the folder it runs in, and so does the command (``uv --directory DIR``).
    chdir: frozenset[str] = frozenset()
    #: A first word ``+NAME`` picks a toolchain and is skipped (``cargo +nightly watch``).
    toolchain: bool = False


_SU = _set("-g -G -w --group --supp-group --whitelist-environment")  # su, runuser
_SU_CODE = _set("-c --command --session-command")
_NAMESPACES = _set("-m -u -i -n -p -U -C -T --mount --uts --ipc --net --pid --user --cgroup --time")

#: bwrap's options binding this machine's paths: ``--bind SRC DEST`` (``--overlay RWSRC WORKDIR
#: DEST``): all words but the last (in the sandbox) are checked.
_BINDS = _set("--bind --bind-try --dev-bind --dev-bind-try --ro-bind --ro-bind-try --overlay --overlay-src")

WRAPPERS: dict[str, Wrapper] = {
    "sudo": Wrapper(
        _set("-u -g -C -h -p -r -t -U -T --user --group --close-from --host --prompt")
        | _set("--role --type --other-user --command-timeout"),
        _set("-R --chroot"),
        assignments=True,
        chdir=_set("-D --chdir"),
        shell_options=_set("-s -i --shell --login"),
    ),
    "doas": Wrapper(_set("-u"), _set("-C"), shell_options=_set("-s")),
    "pkexec": Wrapper(_set("--user")),
    "su": Wrapper(_SU, leading=1, wrapped="shell", code=_SU_CODE, shells=_set("-s --shell"), permute=True),
    "runuser": Wrapper(
        _SU | _set("-u --user"),
        leading=1,
        wrapped="shell",
        direct=_set("-u --user"),
        code=_SU_CODE,
        shells=_set("-s --shell"),
        permute=True,
    ),
    "sg": Wrapper(leading=1, wrapped="joined", code=_set("-c"), shell=True),  # sg GROUP [-c] CMD
    "newgrp": Wrapper(leading=1, shell=True),
    "env": Wrapper(_set("-u -S --unset --split-string"), assignments=True, chdir=_set("-C --chdir")),
    "nice": Wrapper(_set("-n --adjustment")),
    "nohup": Wrapper(),
    "timeout": Wrapper(_set("-s -k --signal --kill-after"), leading=1),
    "time": Wrapper(_set("-f --format"), _set("-o --output")),
    "command": Wrapper(),
    "builtin": Wrapper(),
    "exec": Wrapper(_set("-a")),
    "stdbuf": Wrapper(_set("-i -o -e --input --output --error")),
    "setsid": Wrapper(),
    "ionice": Wrapper(_set("-c -n -p -P -u --class --classdata --pid --pgid --uid")),
    "chrt": Wrapper(leading=1),
    "taskset": Wrapper(leading=1),
    "xargs": Wrapper(
        _set("-I -L -n -P -s -d -E --delimiter --max-args --max-procs --max-chars --process-slot-var"),
        _set("-a --arg-file"),
        optional=_set("-i -l -e --replace --max-lines --eof"),
    ),
    "busybox": Wrapper(),  # busybox APPLET ARGS
    "coproc": Wrapper(),  # coproc [NAME] COMMAND
    "watch": Wrapper(
        _set("-n -q --interval --equexit"),
        optional=_set("-d --differences"),
        wrapped="joined",
        direct=_set("-x --exec"),
    ),
    "flock": Wrapper(
        _set("-w -E --wait --timeout --conflict-exit-code"),
        leading=1,
        leading_paths=True,
        code=_set("-c --command"),
    ),
    "script": Wrapper(
        _set("-E -m -o --echo --logging-format --output-limit"),
        _set("-I -O -B -T -t --log-in --log-out --log-io --log-timing --timing"),
        leading=1,
        leading_paths=True,
        optional=_set("-t --timing"),
        wrapped="shell",
        code=_set("-c --command"),
        permute=True,
    ),
    "parallel": Wrapper(  # GNU parallel, with the options that take a value
        _set("-j -n -N -L -l -d -E -I -S -P -s -X -C -J --jobs --max-args --max-replace-args --delimiter")
        | _set("--colsep --sshlogin --timeout --retries --results --tmpdir --workdir --wd --env --halt")
        | _set(
            "--tag-string --tagstring --memfree --load --delay --block --recstart --recend --nice --header"
        )
        | _set("--termseq --sshdelay --tf --transferfile --return --bf --basefile --profile --limit --filter")
        | _set("--rpl --er --bnr --dnr --bner --extensionreplace --basenamereplace --dirnamereplace")
        | _set("--basenameextensionreplace --seqreplace --slotreplace"),
        _set("-a --arg-file --joblog --sshloginfile"),
        optional=_set("-i --replace"),
        wrapped="joined",
        direct=_set("-q --quote"),
    ),
    "chroot": Wrapper(_set("--userspec --groups"), leading=1, leading_paths=True, shell=True),
    "unshare": Wrapper(
        _set("-S -G --setuid --setgid --propagation --setgroups")
        | _set("--map-user --map-group --map-users --map-groups"),
        _set("-R --root"),
        optional=_NAMESPACES | _set("--mount-proc --kill-child"),
        chdir=_set("-w --wd"),
        shell=True,
    ),
    "nsenter": Wrapper(
        _set("-t -S -G --target --setuid --setgid"),
        _set("-r --root"),
        optional=_NAMESPACES | _set("-r -w --root --wd"),
        chdir=_set("-w --wd"),
        shell=True,
    ),
    "fakeroot": Wrapper(_set("-b --fd-base"), _set("-l -i -s --lib --faked"), shell=True),
    "setpriv": Wrapper(
        _set("--reuid --regid --ruid --euid --rgid --egid --groups --inh-caps --ambient-caps --bounding-set")
        | _set(
            "--securebits --pdeathsig --selinux-label --apparmor-profile --landlock-access --landlock-rule"
        ),
        _set("--seccomp-filter"),
    ),
    "systemd-run": Wrapper(
        _set("-u -p -E -H -M --unit --property --description --slice --setenv --uid --gid --nice --host")
        | _set("--machine --service-type --on-active --on-boot --on-calendar --timer-property"),
        chdir=_set("--working-directory"),
        shell_options=_set("-S --shell"),
    ),
    **dict.fromkeys(
        _set("valgrind unbuffer chronic nocache catchsegv dbus-run-session dbus-launch firejail"), Wrapper()
    ),
    "torsocks": Wrapper(_set("-u -p -a -P --user --pass --address --port")),
    "proxychains": Wrapper(paths=_set("-f")),
    "proxychains4": Wrapper(paths=_set("-f")),
    "faketime": Wrapper(_set("-p"), leading=1),  # faketime TIMESTAMP CMD
    "cpulimit": Wrapper(_set("-l -p -e -c -m --limit --pid --exe --cpu")),
    "numactl": Wrapper(_set("-i -N -m -C -p --interleave --cpunodebind --membind --physcpubind --preferred")),
    "xvfb-run": Wrapper(
        _set("-n -s -w -p --server-num --server-args --wait"), _set("-f -e --auth-file --error-file")
    ),
    "sshpass": Wrapper(_set("-p -d -P"), _set("-f")),
    "ssh-agent": Wrapper(_set("-a -E -t -P -O")),
    "bwrap": Wrapper(  # bwrap [OPTIONS] CMD: in a sandbox of binds of this machine's folders
        _set("--uid --gid --hostname --unsetenv --sync-fd --block-fd --userns-block-fd --info-fd")
        | _set("--json-status-fd --seccomp --add-seccomp-fd --userns --userns2 --pidns --exec-label")
        | _set("--file-label --argv0 --cap-add --cap-drop --perms --size --args --remount-ro --dir")
        | _set("--tmpfs --proc --dev --mqueue --tmp-overlay --ro-overlay --lock-file --setenv --symlink")
        | _set("--file --bind-data --ro-bind-data --chmod"),
        _BINDS,
        chdir=_set("--chdir"),
        spans={**dict.fromkeys(_BINDS - _set("--overlay-src"), 2), "--overlay": 3}
        | dict.fromkeys(_set("--setenv --symlink --file --bind-data --ro-bind-data --chmod"), 2),
        environment=_set("--setenv"),
    ),
}

#: GNU parallel's separators before its arguments (``:::``) or files of arguments (``::::``).
PARALLEL_SOURCES = _set("::: :::+ :::: ::::+")
#: GNU parallel's options that change its replacement strings: its template is then unknown.
PARALLEL_REPLACING = _set(
    "-I -i --replace --rpl --plus --er --bnr --dnr --bner --extensionreplace --basenamereplace "
    "--dirnamereplace --basenameextensionreplace --seqreplace --slotreplace"
)

#: Shells whose ``-c STRING``, or literal script on stdin (heredoc, herestring), is parsed.
SHELLS = _set("bash sh zsh dash ksh ash")

#: Assignments to these change which program runs, what it loads or which configuration it reads
#: (one naming programs to run: ``RIPGREP_CONFIG_PATH``, ``KUBECONFIG``): a command preceded by one
#: (or a script that exports one) can only be approved exactly, never by an "always" prefix.
HIJACK_VARIABLES = _set(
    "PATH LD_PRELOAD LD_LIBRARY_PATH LD_AUDIT DYLD_INSERT_LIBRARIES DYLD_LIBRARY_PATH "
    "DYLD_FRAMEWORK_PATH BASH_ENV ENV IFS PROMPT_COMMAND SHELLOPTS BASHOPTS PS4 CDPATH GLOBIGNORE "
    "PYTHONPATH PYTHONSTARTUP PYTHONHOME NODE_OPTIONS NODE_PATH PERL5OPT PERL5LIB RUBYOPT RUBYLIB "
    "GIT_SSH GIT_SSH_COMMAND GIT_EXEC_PATH GIT_EDITOR GIT_PAGER GIT_ASKPASS GIT_CONFIG_GLOBAL "
    "GIT_CONFIG_SYSTEM GIT_DIR GIT_WORK_TREE SSH_ASKPASS EDITOR VISUAL PAGER HOME "
    "GIT_CONFIG GIT_CONFIG_PARAMETERS GIT_CONFIG_COUNT GIT_EXTERNAL_DIFF GIT_PROXY_COMMAND "
    "GIT_TEMPLATE_DIR GIT_SEQUENCE_EDITOR GIT_SSH_VARIANT GIT_ALTERNATE_OBJECT_DIRECTORIES "
    "GIT_OBJECT_DIRECTORY GIT_INDEX_FILE SUDO_ASKPASS LESSOPEN LESSCLOSE MANPAGER "
    "BROWSER ZDOTDIR GCONV_PATH JAVA_TOOL_OPTIONS _JAVA_OPTIONS RUSTC_WRAPPER PERL5DB "
    "SHELL XDG_CONFIG_HOME BASH_CMDS BASH_ALIASES SUDO_EDITOR "
    "GIT_COMMON_DIR GIT_ALLOW_PROTOCOL RIPGREP_CONFIG_PATH TAR_OPTIONS RSYNC_RSH RSYNC_CONNECT_PROG "
    "LESS LESSKEY LESSKEYIN LESSKEY_SRC LESSEDIT MANOPT SYSTEMD_PAGER VIMINIT EXINIT PSQLRC PSQL_PAGER "
    "MAKEFLAGS MAKEFILES CC CXX GOFLAGS GOENV RUSTC RUSTDOC RUSTC_WORKSPACE_WRAPPER CARGO_HOME "
    "PERLLIB PYTHONUSERBASE PYTHONBREAKPOINT JDK_JAVA_OPTIONS MAVEN_OPTS GRADLE_OPTS CURL_HOME "
    "WGETRC KUBECONFIG DOCKER_CONFIG AWS_CONFIG_FILE XDG_CONFIG_DIRS BASH_LOADABLES_PATH"
)
#: ...and so do any starting with these (``GIT_CONFIG_KEY_0``, ``BASH_FUNC_ls%%``, ``LD_AUDIT``,
#: ``CARGO_TARGET_<TRIPLE>_RUNNER``).
HIJACK_PREFIXES = (
    "GIT_CONFIG_",
    "GIT_TRACE",
    "LD_",
    "DYLD_",
    "BASH_FUNC_",
    "NPM_CONFIG_",
    "npm_config_",
    "CARGO_BUILD_",
    "CARGO_TARGET_",
)


#: Variables that hold a number whatever is done: arithmetic reading them runs nothing.
NUMERIC_VARIABLES = _set("RANDOM SRANDOM SECONDS EPOCHSECONDS LINENO BASHPID PPID UID EUID")


def hijacks(name: str) -> bool:
    """Whether setting the variable ``name`` can change which program runs or what it loads."""
    return name in HIJACK_VARIABLES or name.startswith(HIJACK_PREFIXES)


Form = Literal["name", "declaration", "arithmetic"]
_NAME = r"([A-Za-z_][A-Za-z0-9_]*)(?:\[[^]]*\])?"  # NAME or NAME[SUBSCRIPT]
_FORMS: dict[Form, re.Pattern[str]] = {
    "name": re.compile(_NAME + r"$"),
    "declaration": re.compile(_NAME + r"(?:\+?=|$)"),
    "arithmetic": re.compile(r"(?<![\w$])" + _NAME + r"\s*(?:[-+*/%&^|]|<<|>>)?=(?!=)"),
}


def variables(text: str, form: Form) -> list[str] | None:
    """The variables ``text`` sets, written as a ``name`` (``read NAME``), a ``declaration``
    (``NAME=VALUE``, ``NAME``) or ``arithmetic`` (``x = y += 1``); None when it is no such text."""
    if form == "arithmetic":
        return [match[1] for match in _FORMS[form].finditer(text)]
    match = _FORMS[form].match(text)
    return [match[1]] if match else None


def names_in(word: Word, form: Form) -> list[str | None]:
    """The variables a setter's operand names (None: one only known at run time). Only the value of
    ``NAME=$X`` is unknown, not its name; an unknown arithmetic expression may set any."""
    if word.value is not None:
        return list(variables(word.value, form) or [])
    return list(variables(word.raw, form) or [None]) if form == "declaration" else [None]


def setting(names: list[str]) -> str:
    """The label before a command that sets variables changing what runs: ``(sets PATH)``. Rules
    for the command (``read *``) do not match the labelled pattern, which is approved exactly."""
    return f"(sets {' '.join(names)})" if names else ""


@dataclass(frozen=True)
class Setter:
    #: Options followed by a value that is not a variable's name (``read -p PROMPT``).
    values: frozenset[str] = frozenset()
    #: Options followed by the name of a variable it sets (``printf -v NAME``, ``read -a NAME``).
    names: frozenset[str] = frozenset()
    #: Which operands name the variables set: all, the first (``mapfile ARRAY``), the second
    #: (``getopts OPTSTRING NAME``), none.
    operands: Literal["all", "first", "second", "none"] = "all"
    #: How an operand names them.
    form: Form = "name"
    #: Options after which the operands are not variables it sets (``declare -f``, ``export -p``).
    skips: frozenset[str] = frozenset()
    #: Options after which an operand's value names a variable too (``declare -n REF=NAME``).
    namerefs: frozenset[str] = frozenset()
    #: Options whose value is code it runs with arguments of its own (``mapfile -C CALLBACK``: an
    #: index and a line read; ``compgen -C CMD``: the words to complete).
    code: frozenset[str] = frozenset()


_DECLARE = Setter(form="declaration", skips=_set("-f -F -p"), namerefs=_set("-n"))
_MAPFILE = Setter(_set("-d -n -O -s -u -c"), operands="first", code=_set("-C"))

#: Builtins that set the variables they name, as ``NAME=VALUE`` does (``export`` and the like are
#: also read from the grammar's declaration commands; ``for NAME``, ``(( NAME = 1 ))`` and
#: ``${NAME:=VALUE}`` from the tree).
SETTERS: dict[str, Setter] = {
    "read": Setter(_set("-d -i -n -N -p -t -u"), _set("-a")),
    "printf": Setter(names=_set("-v"), operands="none"),
    "mapfile": _MAPFILE,
    "readarray": _MAPFILE,
    "getopts": Setter(operands="second"),
    "compgen": Setter(_set("-o -A -G -W -F -X -P -S"), _set("-V"), "none", code=_set("-C")),  # -V: bash 5.3
    "wait": Setter(names=_set("-p"), operands="none"),
    "let": Setter(form="arithmetic"),
    "unset": Setter(skips=_set("-f")),
    **dict.fromkeys(_set("declare typeset local"), _DECLARE),
    **dict.fromkeys(_set("export readonly"), Setter(form="declaration", skips=_set("-f -p"))),
}
