"""What the shell analysis knows about commands that read or change the paths among their arguments.

A ``FileCommand`` names which of its options and operands are paths (``tar -f FILE``, ``grep
PATTERN FILE...``, ``dd of=FILE``), which of its options run a program (``rsync -e CMD``, ``tar -I
CMD``) or a script, and which program's own language it reads (``sed``, ``awk``, ``vim``).
``FILE_COMMANDS`` lists them by name; ``_shell_files.file_paths`` reads a command by its entry.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


Operands = Literal["all", "first", "keyed", "none"]


@dataclass(frozen=True)
class FileCommand:
    #: Options followed by a value that is not a path.
    values: frozenset[str] = frozenset()
    #: Options followed by a path.
    paths: frozenset[str] = frozenset()
    #: Which operands are paths: all, the first (an interpreter's script), ``key=PATH`` (dd), none.
    operands: Operands = "all"
    #: Leading operands that are not paths (``grep PATTERN``, ``chmod MODE``, ``sed SCRIPT``)...
    skip: int = 0
    #: ...unless one of these options supplied them (``grep -e PATTERN``, ``sed -e SCRIPT``).
    supplied_by: frozenset[str] = frozenset()
    #: Options after which no operand is a path (``python -c CODE``, ``node -e CODE``)...
    stops: frozenset[str] = frozenset()
    #: ...unless one of these made every operand a file to read or edit (``perl -pi -e CODE F``).
    inputs: frozenset[str] = frozenset()
    #: Options are only read before the first operand (``git -C DIR log``).
    leading_options: bool = False
    #: ``key=PATH`` operands that are paths, for ``operands="keyed"``.
    keys: frozenset[str] = field(default_factory=frozenset[str])
    #: Options whose value is a command line it runs (``rsync -e CMD``, ``scp -S PROGRAM``)...
    code: frozenset[str] = frozenset()
    #: ...or runs on the other machine (``rsync --rsync-path CMD``), or an ssh option (``scp -o``).
    remote_code: frozenset[str] = frozenset()
    ssh_options: frozenset[str] = frozenset()
    #: Options whose value is a script it runs here with ``sh -c``, after the text given
    #: (``tar --checkpoint-action=exec=CMD``: ``exec=``), or a program it runs (``rg --pre CMD``,
    #: read as a script: at least what it names runs); None: a file of code it runs, unknown
    #: (``ncat --lua-exec FILE``).
    scripts: Mapping[str, str | None] = field(default_factory=dict[str, str | None])
    #: The reader of its own language that can run commands or name files (``DIALECTS``: sed's
    #: ``e`` and ``w``, awk's ``system()``, vim's ``-c '!CMD'``, sqlite3's ``.shell``, socat's
    #: ``EXEC:``).
    dialect: str = ""
    #: Every option after one dash is a whole word (``sqlite3 -cmd CMD``).
    long_only: bool = False
    #: Options whose value spans several words, a path its last when among ``paths`` (``jq
    #: --rawfile NAME FILE``: 2).
    spans: Mapping[str, int] = field(default_factory=dict[str, int])
    #: Options whose value is a file naming the files it reads (``wc --files0-from=F``): those
    #: are only known when it runs.
    lists: frozenset[str] = frozenset()
    #: For a command that only reads the paths it names (``_protected.READERS``), the options
    #: whose value is a file it writes (``less -o LOG``) and the operand it writes (``xxd IN
    #: OUT``: 1, after ``skip``): these are checked as written (``protected``).
    writes: frozenset[str] = frozenset()
    output: int | None = None


_PLAIN = FileCommand()
_GREP = FileCommand(
    _set("-m -A -B -C -d -D --max-count --context --after-context --before-context --color --label")
    | _set("-g -t -T -j -M -E --glob --type --type-not --threads --max-columns --engine --sort"),
    _set("-f --file"),
    skip=1,
    supplied_by=_set("-e -f --regexp --file"),
)
_INTERPRETER = FileCommand(
    _set("-W -X -O --check-hash-based-pycs -r --require --import"),
    operands="first",
    stops=_set("-c -m -e -p -E --eval --print --command"),
)
#: perl and ruby: ``-n``/``-p`` read every operand as input, ``-i`` edits them in place.
_PERL = FileCommand(_set("-e -E -I"), operands="first", stops=_set("-e -E"), inputs=_set("-n -p -i"))
_RUBY = FileCommand(
    _set("-e -I -r -E -F --encoding"), _set("-C"), "first", stops=_set("-e"), inputs=_set("-n -p -i")
)
_OWNER = FileCommand(_set("--from"), _set("--reference"), skip=1, supplied_by=_set("--reference"))
_COPY = FileCommand(_set("-S --suffix -m --mode -o --owner -g --group"), _set("-t --target-directory"))

#: tar's options whose value it runs with ``sh -c``: a compressor, a command fed each file, a
#: script between volumes, the remote shell.
_TAR_SCRIPTS = _set(
    "-I --use-compress-program --to-command -F --info-script --new-volume-script --rsh-command"
)
#: netcat: ``-e PROGRAM`` runs it, ``-c CMD`` a script (traditional netcat; ncat: ``--exec``,
#: ``--sh-exec``, and ``--lua-exec FILE``, Lua code).
_NETCAT = FileCommand(
    _set("-g -G -i -p -q -s -w -I -M -m -O -P -T -V -X -x"),
    _set("-o"),
    "none",
    scripts=dict.fromkeys(_set("-e -c"), ""),
)
_NCAT = FileCommand(
    _set("-g -G -i -p -s -w -m -d --proxy --proxy-type --proxy-auth --proxy-dns --max-conns --delay")
    | _set("--idle-timeout --wait --source-port --source --allow --deny --ssl-ciphers --ssl-servername"),
    _set("-o -x --output --hex-dump --allowfile --denyfile --ssl-cert --ssl-key --ssl-trustfile"),
    "none",
    scripts=dict.fromkeys(_set("-e -c --exec --sh-exec"), "") | {"--lua-exec": None},
)

#: vim and nvim: ``-c CMD``, ``--cmd CMD`` and ``+CMD`` are Ex commands, ``-S FILE`` and ``-u FILE``
#: files of them (read by the dialect's reader, which checks their paths).
VIM = FileCommand(
    _set("-c --cmd -T -t -q -r -V --listen --servername --remote-send --remote-expr -l -S -u"),
    _set("-U -i -w -W -s --startuptime"),
    dialect="vim",
)
#: vim in Ex mode (``ex``, ``vim -e``, ``-es``): ``-s`` is silent mode there, not keys to type, so
#: ``vim -es -c '!CMD' FILE`` runs ``CMD`` on ``FILE``.
EX_MODE = FileCommand(VIM.values, VIM.paths - {"-s"}, dialect="vim")

FILE_COMMANDS: dict[str, FileCommand] = {
    **dict.fromkeys(
        _set(
            "rm rmdir mkdir touch cat tac unlink shred stat file ls ll nl od sudoedit "
            "hexdump strings readlink realpath md5sum sha1sum sha256sum sha512sum cksum tee "
            "diff cmp source . nano emacs code open xdg-open"
        ),
        _PLAIN,
    ),
    **dict.fromkeys(_set("less more"), FileCommand(writes=_set("-o -O --log-file --LOG-FILE"))),
    "wc": FileCommand(lists=_set("--files0-from")),
    "du": FileCommand(
        _set("-d -B -t --max-depth --block-size --threshold --exclude"), lists=_set("--files0-from")
    ),
    "xxd": FileCommand(_set("-c -g -l -o -s -n -cols -groupsize -len -name -offset -seek"), output=1),
    "tree": FileCommand(
        _set("-L -P -I -H -T --filelimit --timefmt --charset --sort"), _set("-o --gitfile --infofile")
    ),
    "jq": FileCommand(
        _set("--arg --argjson --indent -L --library-path"),
        _set("-f --from-file --rawfile --slurpfile"),
        skip=1,
        supplied_by=_set("-f --from-file"),
        spans=dict.fromkeys(_set("--arg --argjson --rawfile --slurpfile"), 2),
    ),
    "date": FileCommand(_set("-d --date -s --set --rfc-3339"), _set("-f --file -r --reference"), "none"),
    "head": FileCommand(_set("-n -c --lines --bytes")),
    "tail": FileCommand(_set("-n -c --lines --bytes -s --sleep-interval --pid")),
    "sort": FileCommand(
        _set("-k -t -S -T --key --field-separator --buffer-size"),
        _set("-o --output"),
        scripts={"--compress-program": ""},
        lists=_set("--files0-from"),
    ),
    "uniq": FileCommand(_set("-f -s -w")),
    "cut": FileCommand(_set("-b -c -d -f --bytes --characters --delimiter --fields")),
    "cp": _COPY,
    "mv": _COPY,
    "install": _COPY,
    "ln": _COPY,
    "rsync": FileCommand(
        _set("-e --rsh --exclude --include --filter --chmod --chown -f --rsync-path"),
        _set("--log-file"),
        code=_set("-e --rsh"),
        remote_code=_set("--rsync-path"),
    ),
    "scp": FileCommand(
        _set("-P -c -l -J -o -S -D"), _set("-i -F"), code=_set("-S -D"), ssh_options=_set("-o")
    ),
    "sftp": FileCommand(
        _set("-B -c -J -l -P -R -s -o -S -D"),
        _set("-i -F -b"),
        "none",
        code=_set("-S -D"),
        ssh_options=_set("-o"),
    ),
    "chmod": FileCommand(_set(""), _set("--reference"), skip=1, supplied_by=_set("--reference")),
    "chown": _OWNER,
    "chgrp": _OWNER,
    "truncate": FileCommand(_set("-s --size"), _set("-r --reference")),
    "dd": FileCommand(operands="keyed", keys=_set("if of")),
    "tar": FileCommand(
        _set("-b -H -K -N -V --format --exclude --transform --blocking-factor --owner --group")
        | _set("--checkpoint --rmt-command -L --tape-length"),
        _set("-f -C -T -X --file --directory --files-from --exclude-from -g --listed-incremental"),
        scripts=dict.fromkeys(_TAR_SCRIPTS, "") | {"--checkpoint-action": "exec="},
    ),
    "unzip": FileCommand(_set("-x -P"), _set("-d"), operands="first"),
    "zip": FileCommand(_set("-x -i -P -n -t -tt"), scripts=dict.fromkeys(_set("-TT --unzip-command"), "")),
    **dict.fromkeys(_set("nc netcat"), _NETCAT),
    "ncat": _NCAT,
    "gzip": _PLAIN,
    "gunzip": _PLAIN,
    "sed": FileCommand(
        _set("-l --line-length -e --expression -f --file"),
        skip=1,
        supplied_by=_set("-e -f --expression --file"),
        dialect="sed",
    ),
    **dict.fromkeys(
        _set("awk gawk mawk nawk"),
        FileCommand(
            _set("-F -v --assign --field-separator -e --source -l --load -f --file -i --include -E --exec"),
            skip=1,
            supplied_by=_set("-f --file -e --source -E --exec"),
            dialect="awk",
        ),
    ),
    **dict.fromkeys(_set("vim vi nvim view gvim vimdiff ex"), VIM),
    "sqlite3": FileCommand(
        _set("-cmd --cmd -separator --separator -newline --newline -nullvalue --nullvalue -vfs --vfs")
        | _set("-maxsize --maxsize -mmap --mmap -pagecache -lookaside -heap -escape --escape -init --init"),
        operands="first",
        dialect="sqlite",
        long_only=True,
    ),
    "psql": FileCommand(
        _set("-c --command -f --file -o --output -L --log-file -d -h -p -U -v --set -P --pset -F -R -T")
        | _set("--dbname --host --port --username --variable --field-separator --record-separator"),
        operands="none",
        dialect="psql",
    ),
    **dict.fromkeys(
        _set("mysql mariadb"),
        FileCommand(
            _set("-e --execute -D -h -P -u -S --socket --database --host --port --user --init-command")
            | _set("--pager --defaults-file --defaults-extra-file"),
            operands="none",
            dialect="mysql",
        ),
    ),
    "socat": FileCommand(_set("-b -t -T -lp -lh"), _set("-L -W -lf"), "none", dialect="socat"),
    "grep": _GREP,
    "egrep": _GREP,
    "fgrep": _GREP,
    "rg": FileCommand(  # rg --pre CMD runs CMD FILE for each file searched
        _GREP.values | _set("--pre-glob"),
        _GREP.paths,
        skip=1,
        supplied_by=_GREP.supplied_by,
        scripts={"--pre": ""},
    ),
    "find": FileCommand(),  # handled by the analysis itself (start points, -exec, -fprint)
    "git": FileCommand(
        _set("-c --namespace"), _set("-C --git-dir --work-tree --exec-path"), "none", leading_options=True
    ),
    "make": FileCommand(_set("-j -l -o -W --jobs"), _set("-C -f --directory --file --makefile"), "none"),
    "curl": FileCommand(
        _set("-d -H -X -u -A -e -m -w --data --header --request --user"),
        _set("-o -K -T -c -b --output --config --upload-file --cookie-jar --output-dir"),
        "none",
    ),
    "wget": FileCommand(
        _set("-U -t -T --user-agent --tries --timeout"),
        _set("-O -P -o -a --output-document --directory-prefix --output-file"),
        "none",
    ),
    **dict.fromkeys(_set("python python3 node bash sh zsh dash deno bun tsx ts-node"), _INTERPRETER),
    "perl": _PERL,
    "ruby": _RUBY,
}
