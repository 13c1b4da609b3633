"""git's own ways to run programs and touch folders, read for ``_shell_commands.Commands``.

git runs what its configuration names: ``git -c core.pager=CMD log``, ``-c alias.x='!CMD'``,
``-c core.sshCommand=CMD``, ``--config-env=KEY=VAR`` and the same keys written by ``git config KEY
VALUE`` (for later commands) or ``git clone -c``. The value of a key that runs something
(``CONFIG``) is analyzed as a script, one that names git arguments (a non-``!`` alias) as ``git
VALUE``; one that makes what runs unknowable (``core.hooksPath``, ``include.path``,
``protocol.ext.allow``) counts as an unknown outside value. Such a key written for later (``git
config``, ``git clone -c``), ``git config --edit`` and ``git init/clone --template DIR`` (whose
hooks are copied) are ``protected`` (``_protected.py``). Some subcommands take a script
(``rebase --exec CMD``, ``clone --upload-pack CMD``, ``submodule foreach CMD``,
``filter-branch --tree-filter CMD``, ``grep -O CMD``). ``git clone URL DIR``, ``git init DIR``
and ``git worktree add DIR`` name folders, the files of ``--output=F`` (``WRITES``), ``commit -F
F`` (``READS``), ``git diff A B``, ``git apply``/``git am`` (``PATCHES``) and ``git bundle`` are
files, all checked from the folder ``-C`` names.
"""

from __future__ import annotations

import fnmatch
import re
from typing import TYPE_CHECKING, Literal

from ._shell_paths import State, resolve
from ._shell_words import Word, option_value, parse_options

if TYPE_CHECKING:
    from ._shell_commands import Commands


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


Kind = Literal["script", "git", "unknown", "path"]
#: Configuration keys (lower case; ``*`` a subsection) by what their value is.
CONFIG: dict[Kind, str] = {
    "script": "core.pager pager.* core.editor sequence.editor core.sshcommand core.askpass core.gitproxy "
    "core.fsmonitor core.alternaterefscommand diff.external diff.*.command diff.*.textconv "
    "merge.*.driver filter.*.clean filter.*.smudge filter.*.process gpg.program gpg.*.program "
    "gpg.ssh.defaultkeycommand credential.helper credential.*.helper interactive.difffilter "
    "sendemail.sendmailcmd sendemail.tocmd sendemail.cccmd sendemail.smtpserver difftool.*.cmd "
    "difftool.*.path mergetool.*.cmd mergetool.*.path man.*.cmd man.*.path browser.*.cmd "
    "browser.*.path web.browser trailer.*.command trailer.*.cmd imap.tunnel remote.*.uploadpack "
    "remote.*.receivepack uploadpack.packobjectshook submodule.*.update guitool.*.cmd",
    "git": "alias.*",
    "unknown": "core.hookspath include.path includeif.*.path protocol.allow protocol.*.allow "
    "init.templatedir remote.*.vcs core.attributesfile",
    "path": "core.worktree",
}
_KEYS = {kind: re.compile("|".join(map(fnmatch.translate, keys.split()))) for kind, keys in CONFIG.items()}
_NOT_A_COMMAND = _set("true false yes no on off 1 0 checkout rebase merge none")
_GLOBAL = _set("-c --config-env --namespace --exec-path -C --git-dir --work-tree --list-cmds")
#: Subcommands' options whose value is a script; ``submodule foreach`` joins its words into one.
RUNS: dict[str, frozenset[str]] = {
    "rebase": _set("-x --exec"),
    "clone": _set("-u --upload-pack"),
    **dict.fromkeys(_set("fetch pull ls-remote"), _set("--upload-pack")),
    "archive": _set("--exec"),
    **dict.fromkeys(_set("push send-pack"), _set("--receive-pack --exec")),
    "difftool": _set("-x --extcmd"),
    "filter-branch": _set(
        "--env-filter --tree-filter --index-filter --parent-filter --msg-filter --commit-filter "
        "--tag-name-filter"
    ),
}
_OPTIONAL = _set("-O --open-files-in-pager")  # git grep -O[PAGER]
#: Subcommands' options whose value is a file they write (``git diff --output=F``, ``git
#: format-patch -o DIR``): checked as written, ``protected`` too, though git only reads the others.
WRITES: dict[str, frozenset[str]] = {
    **dict.fromkeys(
        _set("diff log show whatchanged diff-tree diff-index diff-files range-diff"), _set("--output")
    ),
    "format-patch": _set("-o --output-directory --output"),
    "archive": _set("-o --output"),
}
#: ...or read (``git commit -F FILE``). ``git diff``'s operands are paths too: given two, one
#: outside the repository, it compares those files (as with ``--no-index``).
READS: dict[str, frozenset[str]] = {
    **dict.fromkeys(_set("commit tag merge notes"), _set("-F --file")),
    "blame": _set("--contents"),
}
#: Subcommands whose operands are the patches or mailboxes they read, with their options that
#: take a value (``--directory=DIR``, where the files are written, checked as written). ``git
#: apply --unsafe-paths`` writes the files its patch names wherever they are: asked as ``(patch
#: paths)`` outside. ``git bundle create FILE`` writes FILE, its other commands read it.
PATCHES: dict[str, frozenset[str]] = {
    "apply": _set("-p -C --directory --exclude --include --whitespace --build-fake-ancestor"),
    "am": _set(
        "-p -C --directory --exclude --include --whitespace --patch-format --resolvemsg --empty --quoted-cr"
    ),
}
_PATCH_WRITES = _set("--directory --build-fake-ancestor")
#: Subcommands whose operands (other than URLs) are folders it creates or reads.
FOLDERS = frozenset({"clone", "init", "worktree add"})
_CONFIG_VALUES = _set("-f --file --blob --type --default --comment --value -t")
#: ``git init`` and ``git clone`` options with a value, ``--template DIR`` among them.
_TEMPLATE = _set(
    "--template -c --config -o --origin -b --branch -u --upload-pack --reference --depth -j --jobs "
    "--separate-git-dir --object-format --filter --shallow-since --shallow-exclude --initial-branch"
)


def git(commands: Commands, args: list[Word], state: State) -> None:
    """What ``git ARGS`` runs besides itself, and the folders it names."""
    values = [w.value for w in args]
    parsed = parse_options(values, _GLOBAL, leading_options=True)
    inner = state.fork()
    for option, index, attached in parsed.values:
        value = option_value(args, index, attached)
        if option == "-c":
            setting(commands, value, state)
        elif option == "--config-env":  # KEY=VARIABLE: the value is the variable's
            setting(commands, value, state, variable=True)
        elif option == "-C":
            inner.cwd = resolve(value, inner) or value.raw
    if not parsed.operands:
        return
    first = parsed.operands[0]
    sub, rest = values[first] or "", args[first + 1 :]
    run = commands._string  # pyright: ignore[reportPrivateUsage]
    if sub == "submodule" and rest and rest[0].value == "foreach":  # foreach [--recursive] CMD...
        words = [w for w in rest[1:] if w.value not in ("--recursive", "-q", "--quiet")]
        text = None if None in [w.value for w in words] else " ".join(w.value or "" for w in words)
        run(Word(" ".join(w.raw for w in words), text), inner.fork())
    elif sub in RUNS or sub == "grep":
        takes = RUNS.get(sub, frozenset()) | (_set("-c --config") if sub == "clone" else frozenset())
        sub_parsed = parse_options(
            [w.value for w in rest], takes, optional=_OPTIONAL if sub == "grep" else frozenset()
        )
        for option, index, attached in sub_parsed.values:
            value = option_value(rest, index, attached)
            if option in ("-c", "--config"):  # written into the clone's configuration
                setting(commands, value, state, later=f"git clone {option} {value.raw}")
            else:
                run(value, inner.fork())
    elif sub == "config":  # git config [set] KEY VALUE: run by later commands
        sub_parsed = parse_options([w.value for w in rest], _CONFIG_VALUES)
        operands = [rest[i] for i in sub_parsed.operands]
        operands = operands[1:] if operands and operands[0].value == "set" else operands
        if sub_parsed.flags & {"-e", "--edit"} or (operands and operands[0].value == "edit"):
            commands.protect(" ".join(["git", *(w.raw for w in args[first:])]))  # any setting
        elif len(operands) > 1:
            key, value = operands[0], operands[1]
            text = None if key.value is None or value.value is None else f"{key.value}={value.value}"
            later = " ".join(["git", *(w.raw for w in args[first:])])
            setting(commands, Word(f"{key.raw}={value.raw}", text), state, later=later)
    if sub in WRITES or sub in READS or sub == "diff":
        writes = WRITES.get(sub, frozenset())
        sub_parsed = parse_options([w.value for w in rest], writes | READS.get(sub, frozenset()))
        for option, index, attached in sub_parsed.values:
            commands.path(option_value(rest, index, attached), inner, written=option in writes)
        for index in sub_parsed.operands if sub == "diff" else ():  # revisions resolve inside
            commands.path(rest[index], inner)
    if sub in PATCHES or sub == "bundle":
        _patches_and_bundles(commands, sub, rest, inner)
    if sub in ("init", "clone"):  # the hooks of a template folder are copied, to run later
        for option, index, attached in parse_options([w.value for w in rest], _TEMPLATE).values:
            if option == "--template":
                commands.protect(f"git {sub} --template {option_value(rest, index, attached).raw}")
    _folders(commands, values, args, parsed.operands, inner)


def _patches_and_bundles(commands: Commands, sub: str, rest: list[Word], state: State) -> None:
    """``git apply`` and ``git am``: the patches they read, the folder they write in; ``git
    bundle``: its file."""
    if sub == "bundle":
        action = rest[0].value if rest else None
        if action in ("create", "verify", "list-heads", "unbundle"):
            for index in parse_options([w.value for w in rest[1:]], _set("--version")).operands[:1]:
                commands.path(rest[1 + index], state, written=action == "create")  # then revisions
        return
    sub_parsed = parse_options([w.value for w in rest], PATCHES[sub])
    for option, index, attached in sub_parsed.values:
        if option in _PATCH_WRITES:
            commands.path(option_value(rest, index, attached), state, written=True)
    if "--unsafe-paths" in sub_parsed.flags:
        commands.path(Word("(patch paths)", None), state, written=True)
    reads, commands.reads = commands.reads, True
    for index in sub_parsed.operands:
        commands.path(rest[index], state)
    commands.reads = reads


def setting(commands: Commands, item: Word, state: State, *, variable: bool = False, later: str = "") -> None:
    """``KEY=VALUE`` of git's configuration (with ``variable``, ``KEY=VARIABLE``): a value that
    runs something is analyzed (a script, or git's arguments), one that makes what runs unknown
    counts as an unknown outside value, and so does a key only known at run time. A setting
    written for later commands (``git config``, ``git clone -c``) of such a key is also
    ``protected``, asked as the command ``later`` that writes it."""
    run = commands._string  # pyright: ignore[reportPrivateUsage]
    if item.value is None:  # a key only known at run time may be any
        if later:
            commands.protect(later)
        run(Word(item.raw, None), state)
        return
    key, eq, value = item.value.partition("=")
    kind = next((kind for kind, keys in _KEYS.items() if keys.fullmatch(key.lower())), None)
    if kind is None or not eq or (value.lower() in _NOT_A_COMMAND and not variable):
        return
    if later:
        commands.protect(later)
    if variable or kind == "unknown":
        run(Word(item.raw, None), state)
    elif kind == "path":
        commands.path(Word(value, value), state)
    elif value.startswith("!"):  # alias.x='!CMD', credential.helper='!CMD': a shell runs it
        run(Word(value[1:], value[1:]), state.fork())
    elif kind == "git":
        run(Word(f"git {value}", f"git {value}"), state.fork())
    elif key.lower().startswith("credential.") and not value.startswith("/"):
        run(Word(f"git-credential-{value}", f"git-credential-{value}"), state.fork())
    else:
        run(Word(value, value), state.fork())


def _folders(
    commands: Commands, values: list[str | None], args: list[Word], operands: list[int], inner: State
) -> None:
    """``git clone URL DIR``, ``git init DIR``, ``git worktree add DIR``: the folders (and local
    repositories) are checked. Options are not told apart from their values here, which are then
    checked too (harmless: they resolve inside)."""
    words = [values[i] or "" for i in operands[:2]]
    skip = 1 if words and words[0] in FOLDERS else 2 if " ".join(words) in FOLDERS else 0
    if not skip:
        return
    for item in args[operands[skip - 1] + 1 :]:
        value = item.value
        if value is not None and value.startswith("file://"):
            commands.path(Word(value[7:], value[7:]), inner)
        elif value is None or not (value.startswith("-") or re.match(r"[\w.@-]+:", value)):
            commands.path(item, inner)  # not an option nor a remote URL
