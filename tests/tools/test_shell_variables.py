"""The bash analysis of variables that change what runs: assignments, loops, ``read``, ``printf -v``,
arithmetic, ``${NAME:=VALUE}``; and braces, tildes, logical ``cd``, ``find`` and ``xargs`` options.

Rows as in ``test_shell.TABLE``: a command, the ``external_directory`` patterns it must raise and
its ``bash`` (pattern, always) pairs, on the tree of ``test_shell.make_tree``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .test_shell import Row, check_row, make_tree

VARIABLES: list[Row] = [
    # assignments that change which program runs allow exact approval only; the command's own
    # rules still apply to it
    ("LD_PRELOAD=/x.so git log", [], [("git log", "git log *"), ("LD_PRELOAD=/x.so git log", "=")]),
    ("PATH=$PATH rm -rf x", [], [("rm -rf x", "rm *"), ("PATH=$PATH rm -rf x", "=")]),
    (
        "export PATH={out}:$PATH; git status",
        [],
        [
            ("export PATH={out}:$PATH", "="),
            ("(sets PATH) export PATH={out}:$PATH", "="),
            ("git status", "git status *"),
        ],
    ),
    ("PATH=/tmp/bin:$PATH", [], [("PATH=/tmp/bin:$PATH", "=")]),
    ("A=1", [], [("A=1", "=")]),
    # variables set other than by `NAME=VALUE` count the same: loops, read, printf -v, mapfile,
    # namerefs, arithmetic, ${NAME:=VALUE}, unset (a command that sets one is asked behind
    # "(sets NAME)", so that "read *" does not approve it); HOME, PWD and CDPATH set so are unknown
    ("for PATH in {out}; do ls; done", [], [("for PATH in {out}", "="), ("ls", "ls *")]),
    ("select PATH in a; do ls; done", [], [("select PATH in a", "="), ("ls", "ls *")]),
    ("for d in /etc; do cat $d/passwd; done", ["$d/passwd"], [("cat $d/passwd", "cat *")]),
    (
        "read -r PATH <<< {out}; ls",
        [],
        [("read -r PATH", "read *"), ("(sets PATH) read -r PATH", "="), ("ls", "ls *")],
    ),
    ("read -ra GIT_DIR < f", [], [("read -ra GIT_DIR", "read *"), ("(sets GIT_DIR) read -ra GIT_DIR", "=")]),
    ("read -r line < f; echo $line", [], [("read -r line", "read *"), ("echo $line", "echo *")]),
    (
        "printf -v PATH %s {out}; ls",
        [],
        [
            ("printf -v PATH %s {out}", "printf *"),
            ("(sets PATH) printf -v PATH %s {out}", "="),
            ("ls", "ls *"),
        ],
    ),
    ("mapfile -t PATH < f", [], [("mapfile -t PATH", "mapfile *"), ("(sets PATH) mapfile -t PATH", "=")]),
    (
        "readarray -n 1 LD_PRELOAD < f",
        [],
        [("readarray -n 1 LD_PRELOAD", "readarray *"), ("(sets LD_PRELOAD) readarray -n 1 LD_PRELOAD", "=")],
    ),
    ("getopts a: PATH", [], [("getopts a: PATH", "getopts *"), ("(sets PATH) getopts a: PATH", "=")]),
    ('read "$v"', [], [('read "$v"', "read *"), ('(sets ?) read "$v"', "=")]),
    (
        "let i=1 PATH=2; ls",
        [],
        [("let i=1 PATH=2", "let *"), ("(sets PATH) let i=1 PATH=2", "="), ("ls", "ls *")],
    ),
    ("(( PATH = 1 )); ls", [], [("PATH = 1", "="), ("ls", "ls *")]),
    ("echo $(( x = PATH = 1 ))", [], [("x = PATH = 1", "="), ("echo $(( x = PATH = 1 ))", "echo *")]),
    ("unset PATH; ls", [], [("unset PATH", "="), ("(sets PATH) unset PATH", "="), ("ls", "ls *")]),
    (
        "declare -n p=PATH; p={out}; ls",
        [],
        [("declare -n p=PATH", "="), ("(sets PATH) declare -n p=PATH", "="), ("ls", "ls *")],
    ),
    (
        "f() { local -n r=$1; r=x; }; f PATH",
        [],
        [("local -n r=$1", "="), ("(sets ?) local -n r=$1", "="), ("f PATH", "f *")],
    ),
    (
        "command export PATH={out}",
        [],
        [
            ("command export PATH={out}", "="),
            ("export PATH={out}", "export *"),
            ("(sets PATH) export PATH={out}", "="),
        ],
    ),
    (
        "builtin read PATH",
        [],
        [("builtin read PATH", "="), ("read PATH", "read *"), ("(sets PATH) read PATH", "=")],
    ),
    ("export X=$(pwd) Y; unset Z", [], [("pwd", "pwd *")]),
    ("for HOME in {out}; do cat ~/x; done", ["~/x"], [("for HOME in {out}", "="), ("cat ~/x", "cat *")]),
    ("HOME={out}; cd; rm x", ["~", "~/x"], [("HOME={out}", "="), ("cd", "cd *"), ("rm x", "rm *")]),
    ("PWD={out}; cat ~+/x", ["~+/x"], [("cat ~+/x", "cat *")]),
    ("PWD=/; cd src; cat ~+/x", ["~+/x"], [("cd src", "cd *"), ("cat ~+/x", "cat *")]),  # cd may fail
    (
        "read CDPATH <<< /; cd etc && rm passwd",
        ["$CDPATH/etc", "$CDPATH/etc/passwd"],
        [
            ("read CDPATH", "read *"),
            ("(sets CDPATH) read CDPATH", "="),
            ("cd etc", "cd *"),
            ("rm passwd", "rm *"),
        ],
    ),
    (
        ": ${CDPATH:=/}; cd etc",
        ["$CDPATH/etc"],
        [("${CDPATH:=/}", "="), (": ${CDPATH:=/}", ": *"), ("cd etc", "cd *")],
    ),
    ("CDPATH=/; cd ./src; cd ../src", [], [("CDPATH=/", "="), ("cd ./src", "cd *"), ("cd ../src", "cd *")]),
    (
        "f() { read CDPATH; }; f; cd etc",
        ["$CDPATH/etc"],
        [("read CDPATH", "read *"), ("(sets CDPATH) read CDPATH", "="), ("f", "f *"), ("cd etc", "cd *")],
    ),
    (
        "(read CDPATH); cd src",  # a subshell's variables end with it
        [],
        [("read CDPATH", "read *"), ("(sets CDPATH) read CDPATH", "="), ("cd src", "cd *")],
    ),
    # braces are expanded as bash does; tildes bash reads (~+ is $PWD, ~- $OLDPWD, of=~/x)
    ("cat {.,.}./secret", ["{up}/*"], [("cat {.,.}./secret", "cat *"), ("cat ../secret ../secret", "cat *")]),
    ("cat .{.,}/x", ["{up}/*"], [("cat .{.,}/x", "cat *"), ("cat ../x ./x", "cat *")]),
    ("{cat,../x}", ["{up}/*"], [("{cat,../x}", "="), ("cat ../x", "cat *")]),
    ("cat 'a'{.,.}./x", ["'a'{.,.}./x"], [("cat 'a'{.,.}./x", "cat *")]),  # quoting mixed in: unknown
    ("touch f{1..99}", ["f{1..99}"], [("touch f{1..99}", "touch *")]),  # too many words: unknown
    ("cat .?/secret", [".?/secret"], [("cat .?/secret", "cat *")]),  # older bash: .? matches ..
    ("cat ~+/../secret", ["{up}/*"], [("cat ~+/../secret", "cat *")]),
    ("cat ~-/secret", ["~-/secret"], [("cat ~-/secret", "cat *")]),
    ("cat ~1/secret", ["~1/secret"], [("cat ~1/secret", "cat *")]),
    ("dd if=/dev/zero of=~/disk", ["{home}/*"], [("dd if=/dev/zero of=~/disk", "dd *")]),
    # cd is logical: link_deep/../.. is the workspace's parent, not src/deep/../..
    ("cd link_deep/../.. && rm x", ["{up}/*"], [("cd link_deep/../..", "cd *"), ("rm x", "rm *")]),
    ("cd link_deep/.. && rm ../x", ["{up}/*"], [("cd link_deep/..", "cd *"), ("rm ../x", "rm *")]),
    # find's -H -L -P -D ARG -O<n> come before the start points
    ("find -P {out} -delete", ["{out}/*"], [("find -P {out} -delete", "find *")]),
    ("find -L -D tree -O3 {out} -name x", ["{out}/*"], [("find -L -D tree -O3 {out} -name x", "find *")]),
    # xargs -i -l -e --replace --eof --max-lines take a value only when attached
    (
        "echo a | xargs -i rm {}",
        ["(xargs input)"],
        [("echo a", "echo *"), ("xargs -i rm {}", "xargs -i rm *"), ("rm {}", "rm *")],
    ),
    ("xargs -l rm", ["(xargs input)"], [("xargs -l rm", "xargs -l rm *"), ("rm", "rm *")]),
    ("xargs --eof rm", ["(xargs input)"], [("xargs --eof rm", "xargs --eof rm *"), ("rm", "rm *")]),
]


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    return make_tree(tmp_path, monkeypatch)


@pytest.mark.parametrize(("command", "outside", "bash"), VARIABLES, ids=[row[0][:40] for row in VARIABLES])
def test_table(tree: dict[str, Path], command: str, outside: list[str], bash: list[tuple[str, str]]) -> None:
    check_row(tree, command, outside, bash)
