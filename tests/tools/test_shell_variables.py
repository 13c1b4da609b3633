"""The bash analysis of variables that change what runs: assignments, loops, ``read``, ``printf -v``,
arithmetic, ``${NAME:=VALUE}``; and braces, tildes, logical ``cd``, ``find`` and ``xargs`` options.

Rows as in ``test_shell.TABLE``: a command, the ``external_directory`` patterns it must raise and
its ``bash`` (pattern, always) pairs, on the tree of ``test_shell.make_tree``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tools._shell import permission_requests

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
    (
        'read "$v"',  # v='a[$(cmd)]' runs cmd: the name's subscript is evaluated
        [],
        [('read "$v"', "read *"), ('(sets ?) read "$v"', "="), ('(evaluates v) "$v"', "=")],
    ),
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
    ("{cat,../x}", ["{up}/*"], [("{cat,../x}", "="), ("(unparsed) {cat,../x}", "="), ("cat ../x", "cat *")]),
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


#: Arithmetic, ``${!x}`` and ``${x@P}`` evaluate a variable's value, which may run code
#: (``x='a[$(cmd)]'; echo $((x))``): a variable not known to hold a number is asked behind
#: ``(evaluates NAME)``.
EVALUATED: list[Row] = [
    ("echo $((n + 1))", [], [("(evaluates n) $((n + 1))", "="), ("echo $((n + 1))", "echo *")]),
    ("(( x ))", [], [("(evaluates x) (( x ))", "=")]),
    ("x=$1; (( x > 2 ))", [], [("(evaluates x) (( x > 2 ))", "=")]),
    ("f() { (( $1 > 2 )); }", [], [("(evaluates 1) (( $1 > 2 ))", "=")]),
    ("(( i++ ))", [], [("(evaluates i) (( i++ ))", "=")]),
    (
        "echo $(( $(wc -l < f) + 1 ))",
        [],
        [
            ("(evaluates $(wc -l < f)) $(( $(wc -l < f) + 1 ))", "="),
            ("wc -l", "wc *"),
            ("echo $(( $(wc -l < f) + 1 ))", "echo *"),
        ],
    ),
    ("[[ $x -eq 1 ]]", [], [("(evaluates x) $x", "=")]),
    ("[[ 2 -gt y ]]", [], [("(evaluates y) y", "=")]),
    ("[ $x -eq 1 ]", [], [("[ $x -eq 1 ]", "=")]),  # test reads a number: no evaluation
    ("echo ${!ref}", [], [("(evaluates ref) ${!ref}", "="), ("echo ${!ref}", "echo *")]),
    ("echo ${p@P}", [], [("(evaluates p) ${p@P}", "="), ("echo ${p@P}", "echo *")]),
    ("echo ${!pre*} ${!a[@]}", [], [("echo ${!pre*} ${!a[@]}", "echo *")]),
    # literal arithmetic given as words is parsed: its subscripts run
    (
        "let 'a[$(rm x)]'",
        [],
        [("let 'a[$(rm x)]'", "let *"), ("rm x", "rm *"), ("(evaluates a $(rm x)) a[$(rm x)]", "=")],
    ),
    ("[[ 'a[$(rm x)]' -eq 1 ]]", [], [("rm x", "rm *"), ("(evaluates a $(rm x)) a[$(rm x)]", "=")]),
    # numbers: set by arithmetic or to a literal number, or always one
    ("n=3; for ((i = 0; i < n; i++)); do echo $((i * 2)); done", [], [("echo $((i * 2))", "echo *")]),
    ('let i=0 "j = i + 1"; echo $((j))', [], [("let i=0 'j = i + 1'", "let *"), ("echo $((j))", "echo *")]),
    ("echo $((RANDOM % 6)) $(( ${#a} + 1 ))", [], [("echo $((RANDOM % 6)) $(( ${#a} + 1 ))", "echo *")]),
    ("a=x; a+=1; echo $((a))", [], [("(evaluates a) $((a))", "="), ("echo $((a))", "echo *")]),
    (
        "n=3; read n; echo $((n))",
        [],
        [("read n", "read *"), ("(evaluates n) $((n))", "="), ("echo $((n))", "echo *")],
    ),
    # an indexed array's subscript, a substring's offset and length, a value assigned to an
    # integer variable: evaluated as arithmetic too
    ("echo ${a[i]}", [], [("(evaluates i) ${a[i]}", "="), ("echo ${a[i]}", "echo *")]),
    ('echo "${a[$i]}"', [], [("(evaluates i) ${a[$i]}", "="), ('echo "${a[$i]}"', "echo *")]),
    ("echo ${a[i+1]:2}", [], [("(evaluates i) ${a[i+1]:2}", "="), ("echo ${a[i+1]:2}", "echo *")]),
    ("echo ${x:n:2}", [], [("(evaluates n) ${x:n:2}", "="), ("echo ${x:n:2}", "echo *")]),
    ("echo ${x:1:n}", [], [("(evaluates n) ${x:1:n}", "="), ("echo ${x:1:n}", "echo *")]),
    ("x=${a[i]:=3}", [], [("(evaluates i) ${a[i]:=3}", "=")]),
    ("a[i]=1", [], [("(evaluates i) a[i]=1", "=")]),
    ("a=([$i]=1 [j]=2 x [0]=3)", [], [("(evaluates i j) a=([$i]=1 [j]=2 x [0]=3)", "=")]),
    ("declare a[$i]=1", [], [("(evaluates i) a[$i]", "=")]),
    ("declare -i v; v=$y", [], [("(evaluates y) v=$y", "=")]),
    ("[[ -v a[i] ]]", [], [("(evaluates i) a[i]", "=")]),
    ('test -v "$x"', [], [('test -v "$x"', "test *"), ('(evaluates x) "$x"', "=")]),
    (
        'command test -v "$x"',
        [],
        [('command test -v "$x"', "command test *"), ('test -v "$x"', "test *"), ('(evaluates x) "$x"', "=")],
    ),
    ("[[ -v a[@] ]]; test -v 'a[*]'", [], [("test -v 'a[*]'", "test *")]),
    # a value the grammar reads as text: what its substitutions run is analyzed too
    (
        "echo ${a['$(rm x)']}",
        [],
        [("rm x", "rm *"), ("(evaluates $(rm x)) ${a['$(rm x)']}", "="), ("echo ${a['$(rm x)']}", "echo *")],
    ),
    (
        "a=(['$(rm x)']=1 [i]+=2)",
        [],
        [("rm x", "rm *"), ("(evaluates $(rm x) i) a=(['$(rm x)']=1 [i]+=2)", "=")],
    ),
    ("declare -i n='a[$(rm x)]'", [], [("rm x", "rm *"), ("(evaluates a $(rm x)) n='a[$(rm x)]'", "=")]),
    # the names builtins set or test
    (
        "printf -v 'a[$(rm x)]' y",
        [],
        [("printf -v 'a[$(rm x)]' y", "printf *"), ("rm x", "rm *"), ("(evaluates $(rm x)) a[$(rm x)]", "=")],
    ),
    (
        "read 'a[i]'; unset 'a[j]'",
        [],
        [("read 'a[i]'", "read *"), ("(evaluates i) a[i]", "="), ("(evaluates j) a[j]", "=")],
    ),
    # unquoted, the grammar splits the name from its subscript (a separate word, it is not one)
    ("unset a[j] b; unset c [k]", [], [("(evaluates j) a[j]", "=")]),
    ("unset a\"[i]\" b''[j]", [], [("(evaluates i) a[i]", "="), ("(evaluates j) b[j]", "=")]),
    ('typeset a"[i]"=1; declare b"[j]=1"', [], [("(evaluates i) a[i]", "="), ("(evaluates j) b[j]", "=")]),
    (
        "unset a[$(rm x)]",
        [],
        [
            ("rm x", "rm *"),
            ("(evaluates $(rm x)) a[$(rm x)]", "="),
            ("unset a[$(rm x)]", "="),
            ("(sets ?) unset a[$(rm x)]", "="),
        ],
    ),
    ('[ -v "a[$i]" ]', [], [('(evaluates i) "a[$i]"', "=")]),
    # in text the grammar leaves as a word: the operand of ${x#...}, a [[ =~ ]] regex (as bash
    # reads its quotes: nothing in single quotes is expanded)
    ("echo ${x#'${a[i]}'}", [], [("echo ${x#'${a[i]}'}", "echo *")]),
    (
        "echo ${x#${a[i]}} ${x/${y%${a[1]}}/z} ${x#\\${a[j]}}",
        [],
        [("(evaluates i) ${a[i]}", "="), ("echo ${x#${a[i]}} ${x/${y%${a[1]}}/z} ${x#\\${a[j]}}", "echo *")],
    ),
    (
        "echo ${x#${a[$(rm x)]}}",
        [],
        [("rm x", "rm *"), ("(evaluates $(rm x)) ${a[$(rm x)]}", "="), ("echo ${x#${a[$(rm x)]}}", "echo *")],
    ),
    ("local -ri v=y", [], [("(evaluates y) v=y", "=")]),
    (
        "declare -A m; unset m; echo ${m[$k]}",
        [],
        [("(evaluates k) ${m[$k]}", "="), ("echo ${m[$k]}", "echo *")],
    ),
    # not evaluated: all elements, literal numbers, a default, an associative array's keys
    (
        "echo ${a[@]} ${a[*]} ${a[0]} ${a[-1]} ${x:-n}",
        [],
        [("echo ${a[@]} ${a[*]} ${a[0]} ${a[-1]} ${x:-n}", "echo *")],
    ),
    ("declare -A m; echo ${m[$k]} ${m[k]}", [], [("echo ${m[$k]} ${m[k]}", "echo *")]),
    ("declare -A m=([$k]=1)", [], [("declare -A m=([$k]=1)", "=")]),
    ("declare -A m; [[ -v m[$k] && -v name ]]", [], [("declare -A m; [[ -v m[$k] && -v name ]]", "=")]),
    ("for ((i = 0; i < 3; i++)); do echo ${a[i]}; done", [], [("echo ${a[i]}", "echo *")]),
    ('for i in 1 {2..4} "${!a[@]}"; do echo ${a[i]}; done', [], [("echo ${a[i]}", "echo *")]),
    (
        "for i in 1 $x; do echo ${a[i]}; done",
        [],
        [("(evaluates i) ${a[i]}", "="), ("echo ${a[i]}", "echo *")],
    ),
    ("declare -i v; v=5", [], [("declare -i v; v=5", "=")]),
    ("declare -i n; read n", [], [("read n", "read *"), ("(evaluates n) read n", "=")]),
    ("declare -i n; unset n; read n", [], [("read n", "read *")]),
    # known numbers: a literal, arithmetic, a length, an integer variable, a loop that runs
    (
        "local i=0 j=$((k + 1)) n=${#a[@]}; declare -i c=0; c=c+1; echo ${a[i]} ${a[j]} ${a[n-1]} ${a[c]}",
        [],
        [("(evaluates k) $((k + 1))", "="), ("echo ${a[i]} ${a[j]} ${a[n-1]} ${a[c]}", "echo *")],
    ),
    ("for i in 1 2; do :; done; echo ${b[i]}", [], [(":", ": *"), ("echo ${b[i]}", "echo *")]),
    (
        'read i; for i in "${!a[@]}"; do :; done; echo ${b[i]}',  # no index: i keeps what was read
        [],
        [("read i", "read *"), (":", ": *"), ("(evaluates i) ${b[i]}", "="), ("echo ${b[i]}", "echo *")],
    ),
]


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    return make_tree(tmp_path, monkeypatch)


@pytest.mark.parametrize(("command", "outside", "bash"), VARIABLES, ids=[row[0][:40] for row in VARIABLES])
def test_table(tree: dict[str, Path], command: str, outside: list[str], bash: list[tuple[str, str]]) -> None:
    check_row(tree, command, outside, bash)


@pytest.mark.parametrize(
    "name",
    [
        "GIT_COMMON_DIR",  # its hooks and configuration
        "RIPGREP_CONFIG_PATH",  # rg --pre CMD
        "GIT_ALLOW_PROTOCOL",  # ext::CMD
        "TAR_OPTIONS",  # --to-command=CMD
        "RSYNC_RSH",
        "LESS",
        "LESSKEYIN",
        "MANOPT",
        "VIMINIT",
        "PSQLRC",
        "MAKEFLAGS",
        "MAKEFILES",
        "CC",
        "GOFLAGS",  # -toolexec=CMD
        "PERLLIB",
        "PYTHONUSERBASE",  # .pth files run at startup
        "KUBECONFIG",  # exec credential plugins
        "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER",
        "BASH_LOADABLES_PATH",
    ],
)
def test_variables_making_programs_run_others_or_read_their_configuration_are_asked_exactly(
    tree: dict[str, Path], name: str
) -> None:
    check_row(tree, f"{name}=x rg -n y", [], [("rg -n y", "rg *"), (f"{name}=x rg -n y", "=")])


@pytest.mark.parametrize(("command", "outside", "bash"), EVALUATED, ids=[row[0][:40] for row in EVALUATED])
def test_evaluated_values(
    tree: dict[str, Path], command: str, outside: list[str], bash: list[tuple[str, str]]
) -> None:
    check_row(tree, command, outside, bash)


@pytest.mark.parametrize(
    "script",
    [
        "echo ${a[v]}",
        'echo "${a[$v]}"',
        "x=hello; echo ${x:v}",
        "x=hello; echo ${x:1:v}",
        "a[v]=1",
        "a=([$v]=1)",
        "declare a[$v]=1",
        "[[ -v $v ]]",
        'test -v "$v"',
        "declare -i n; n=$v",
        "f() { local -i n=v; }; f",
        'declare -i n; printf -v n %s "$v"',
        "a=(1 2); unset a[v]",
        'a=(1 2); unset a"[v]"',
        'typeset a"[v]"=1',
        'declare a"[v]=1"',
        "x=1; echo ${x#${a[v]}}",
        "x=1; [[ $x =~ ${a[v]} ]]",
        'x=1; echo "${x%%${a[v]}}"',
        "x=1; [[ x =~ '${'${a[v]} ]]",
        'x=1; echo ${x#"}"${a[v]}}',
    ],
)
def test_bash_runs_a_command_hidden_in_an_evaluated_value(tmp_path: Path, script: str) -> None:
    # Why each is asked behind (evaluates NAME): with v='x[$(cmd)]' (read from a file, the
    # environment), bash runs cmd although nothing in the script shows a substitution.
    ran = tmp_path / "ran"
    env = {**os.environ, "v": f"x[$(touch {ran})]"}
    subprocess.run(["bash", "-c", script], env=env, capture_output=True, timeout=10, check=False)
    assert ran.exists()
    requests = permission_requests(script, tmp_path, tmp_path)
    assert any(p.startswith("(evaluates ") for r in requests for p in r.patterns)
