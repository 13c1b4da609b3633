"""The bash analysis reads the script files programs run, and sqlite3's SQL, on real files.

Each row of ``SCRIPTS`` is the files written in the workspace first (relative to it; bytes that
are not UTF-8 as surrogate escapes), the command, the ``external_directory`` patterns it must
raise and its ``bash`` (pattern, always) pairs. ``{up}`` is the workspace's parent, ``{sha}`` the
first 16 hex digits of the SHA-256 of the row's first file, ``=`` as the always pattern "the
pattern itself" (exact approval only).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tools import Reply
from tools._shell import analyze
from tools._shell_sources import MAX_BYTES, stale
from tools.permission import PermissionRequest

from .conftest import make_harness

Row = tuple[dict[str, str], str, list[str], list[tuple[str, str]]]

SCRIPTS: list[Row] = [
    # what the script in the file runs is asked for as if it were given inline
    (
        {"s.sed": "s/a/b/\n1e rm ../x\n"},
        "sed -f s.sed f",
        ["{up}/*"],
        [("sed -f s.sed f", "sed *"), ("rm ../x", "rm *")],
    ),
    ({"s.sed": "w ../out\n"}, "sed --file=s.sed f", ["{up}/*"], [("sed --file=s.sed f", "sed *")]),
    (
        {"s.sed": "k\n"},
        "sed -f s.sed f",
        ["(s.sed: not followed, sha256 {sha})"],
        [("sed -f s.sed f", "sed *")],
    ),
    (
        {"p.awk": 'BEGIN { system("rm ../x") }\n@include "lib.awk"\n', "lib.awk": '{ print > "../y" }\n'},
        "awk -f p.awk f",
        ["{up}/*"],
        [("awk -f p.awk f", "awk *"), ("rm ../x", "rm *")],
    ),
    ({}, "gawk -i inplace '{ print }' f", [], [("gawk -i inplace '{ print }' f", "gawk *")]),  # a library
    (
        {"s.vim": '" a comment\nset nu\n!rm ../x\ncall system("y")\n'},
        "vim -S s.vim f",
        ["{up}/*", '(s.vim:4: call system("y"))'],
        [("vim -S s.vim f", "vim *"), ("rm ../x", "rm *")],
    ),
    ({"NONE": "!rm x\n"}, "vim -u NONE f", [], [("vim -u NONE f", "vim *")]),
    (
        {"x.lua": "os.execute('rm x')\n"},
        "nvim -S x.lua",
        ["(x.lua: Lua code, not read)"],
        [("nvim -S x.lua", "nvim *")],
    ),
    (
        {"a.vim": "so b.vim\n", "b.vim": "source a.vim\n"},
        "vim -S a.vim f",
        ["(a.vim: sourced within itself, not read again)"],
        [("vim -S a.vim f", "vim *")],
    ),
    (
        {"i.sql": "create table t(a);\n.shell rm ../x\nselect 1;\n"},
        "sqlite3 -init i.sql db",
        ["{up}/*"],
        [("sqlite3 -init i.sql db", "sqlite3 *"), ("rm ../x", "rm *")],
    ),
    (
        {"r.sql": "select\n  \"writefile\"/**/('a', 'b');\n"},
        "sqlite3 db '.read r.sql'",
        ["(r.sql:1: select\n  \"writefile\"/**/('a', 'b');)"],
        [("sqlite3 db '.read r.sql'", "sqlite3 *")],
    ),
    (  # in a trigger's body a line starting with . is SQL to sqlite3: read as both
        {"t.sql": "create trigger g after insert on t begin select 1;\n.shell rm ../x\nend;\n"},
        "sqlite3 -init t.sql db",
        ["{up}/*"],
        [("sqlite3 -init t.sql db", "sqlite3 *"), ("rm ../x", "rm *")],
    ),
    (
        {
            "c.gdb": "break main\nrun\nshell rm ../x\npython import os\nsource more.gdb\n",
            "more.gdb": "# c\n!touch y\n",
        },
        "gdb -x c.gdb ./a.out",
        ["{up}/*", "(c.gdb:4: python import os)"],
        [
            ("gdb -x c.gdb ./a.out", "="),
            ("rm ../x", "rm *"),
            ("touch y", "touch *"),
            ("./a.out", "./a.out *"),
        ],
    ),
    (
        {"x.py": "import os\n"},
        "gdb -x x.py ./a.out",
        ["(x.py: Python code, not read)"],
        [("gdb -x x.py ./a.out", "="), ("./a.out", "./a.out *")],
    ),
    (
        {"c.lldb": "platform shell rm ../x\nscript print(1)\n"},
        "lldb -s c.lldb ./a.out",
        ["{up}/*", "(c.lldb:2: script print(1))"],
        [("lldb -s c.lldb ./a.out", "="), ("rm ../x", "rm *"), ("./a.out", "./a.out *")],
    ),
    # the .gdbinit of the folder gdb starts in counts as run (its safe-path is the user's to set)
    (
        {".gdbinit": "shell rm ../x\n"},
        "gdb ./a.out",
        ["{up}/*"],
        [("gdb ./a.out", "gdb ./a.out *"), ("rm ../x", "rm *"), ("./a.out", "./a.out *")],
    ),
    (
        {".gdbinit": "shell rm ../x\n"},
        "gdb -nx ./a.out",
        [],
        [("gdb -nx ./a.out", "gdb -nx ./a.out *"), ("./a.out", "./a.out *")],
    ),
    (
        {"sub/.gdbinit": "shell rm ../../x\n"},
        "gdb -cd sub -batch",
        ["{up}/*"],
        [("gdb -cd sub -batch", "gdb *"), ("rm ../../x", "rm *")],
    ),
    # a file not read is unknown, named by why
    (
        {"../x.sed": "p\n"},
        "sed -f ../x.sed f",
        ["{up}/*", "(../x.sed: outside the workspace, not read)"],
        [("sed -f ../x.sed f", "sed *")],
    ),
    ({}, "sed -f none.sed f", ["(none.sed: not found, not read)"], [("sed -f none.sed f", "sed *")]),
    (
        {"big.sed": "p\n" * (MAX_BYTES // 2 + 1)},
        "sed -f big.sed f",
        ["(big.sed: larger than 256 KiB, not read)"],
        [("sed -f big.sed f", "sed *")],
    ),
    (
        {"l1.sed": "e ls \udcff\n"},
        "sed -f l1.sed f",
        ["(l1.sed: not UTF-8, not read)"],
        [("sed -f l1.sed f", "sed *")],
    ),
    ({}, 'sed -f "$S" f', ['"$S"'], [('sed -f "$S" f', "sed *")]),
    ({}, "sed -f - f", ["(-: read from stdin, not read)"], [("sed -f - f", "sed *")]),
    (
        {},
        "awk -f /dev/stdin f",
        ["(/dev/stdin: read from stdin, not read)"],
        [("awk -f /dev/stdin f", "awk *")],
    ),
    (  # the .gdbinit of another machine is not looked for: the place is asked for
        {".gdbinit": "shell rm x\n"},
        "ssh host gdb -batch ./a.out",
        ["(ssh host)"],
        [
            ("ssh host gdb -batch ./a.out", "="),
            ("gdb -batch ./a.out", "gdb -batch ./a.out *"),
            ("./a.out", "./a.out *"),
        ],
    ),
    (
        {"s.sed": "p\n"},
        "ssh host sed -f s.sed f",
        ["(ssh host)", "(s.sed: on another machine, not read)"],
        [("ssh host sed -f s.sed f", "="), ("sed -f s.sed f", "sed *")],
    ),
    # a file the command itself names may be changed by it before it is read
    (
        {"s.sed": "p\n"},
        "echo 'e rm x' > s.sed; sed -f s.sed f",
        ["(s.sed: also named by the command, which may change it first)"],
        [("echo 'e rm x'", "echo *"), ("sed -f s.sed f", "sed *")],
    ),
    (
        {},
        "echo 'shell rm x' > .gdbinit && gdb ./a.out",
        ["(.gdbinit: also named by the command, which may change it first)"],
        [("echo 'shell rm x'", "echo *"), ("gdb ./a.out", "gdb ./a.out *"), ("./a.out", "./a.out *")],
    ),
    # a tmux configuration file: its commands as if given on the command line
    (
        {"t.conf": "# c\nset -g mouse on\nbind r run-shell 'rm ../x' ; set -g status on\n"},
        "tmux -f t.conf new -d",
        ["(tmux pane)/../x"],
        [("tmux -f t.conf new -d", "="), ("rm ../x", "rm *")],
    ),
    (
        {"t.conf": "bind x { run-shell id }\n"},
        "tmux source-file t.conf",
        ["(t.conf:1: bind x { run-shell id })"],
        [("tmux source-file t.conf", "=")],
    ),
    # the psql and mysql clients run shell commands from their own commands, and from files of them
    ({}, "psql -c '\\! rm ../x'", ["{up}/*"], [("psql -c '\\! rm ../x'", "psql *"), ("rm ../x", "rm *")]),
    ({}, "psql -c '\\o |rm ../x'", ["{up}/*"], [("psql -c '\\o |rm ../x'", "psql *"), ("rm ../x", "rm *")]),
    ({}, "psql -c '\\echo `id`'", ["'\\echo `id`'"], [("psql -c '\\echo `id`'", "psql *")]),
    (
        {},
        "psql -c \"copy t from program 'id'\"",
        ["\"copy t from program 'id'\""],
        [("psql -c 'copy t from program '\"'\"'id'\"'\"''", "psql *")],
    ),
    ({}, "psql -d db -c '\\dt'", [], [("psql -d db -c '\\dt'", "psql *")]),
    (
        {"q.psql": "select 1;\n\\i q2.psql\n", "q2.psql": "\\! rm ../x\n"},
        "psql -f q.psql",
        ["{up}/*"],
        [("psql -f q.psql", "psql *"), ("rm ../x", "rm *")],
    ),
    (
        {},
        "mysql -e 'select 1; \\! rm ../x'",
        ["{up}/*"],
        [("mysql -e 'select 1; \\! rm ../x'", "mysql *"), ("rm ../x", "rm *")],
    ),
    (
        {},
        "mysql --pager='rm ../x' db",
        ["{up}/*"],
        [("mysql '--pager=rm ../x' db", "mysql *"), ("rm ../x", "rm *")],
    ),
    (
        {"s.mysql": "system rm ../x\n"},
        "mysql db <<'EOF'\nsource s.mysql\nEOF",
        ["{up}/*"],
        [("mysql db", "mysql *"), ("rm ../x", "rm *")],
    ),
    (
        {},
        "mysql -e \"select load_file('/x')\"",
        ["\"select load_file('/x')\""],
        [("mysql -e 'select load_file('\"'\"'/x'\"'\"')'", "mysql *")],
    ),
]

#: sqlite3's SQL is tokenized: a risky function is found however it is quoted or commented, and
#: its name as data or as a column is not a call.
SQL: list[tuple[str, list[str]]] = [
    ("sqlite3 db \"select \\\"writefile\\\"('a','b')\"", ["\"select \\\"writefile\\\"('a','b')\""]),
    ("sqlite3 db 'select [readfile]/**/(1)'", ["'select [readfile]/**/(1)'"]),
    ("sqlite3 db 'select * from lsdir(1)'", ["'select * from lsdir(1)'"]),
    ("sqlite3 db 'ATTACH \"x.db\" AS x'", ["'ATTACH \"x.db\" AS x'"]),
    ('sqlite3 db "select \'open"', ['"select \'open"']),
    ("sqlite3 db '.parameter set @x \"writefile(1,2)\"'", ["'.parameter set @x \"writefile(1,2)\"'"]),
    ("sqlite3 db '.cd ..'", ["'.cd ..'"]),
    ("sqlite3 db 'select edit from t'", []),
    ("sqlite3 db \"insert into t values ('attach')\"", []),
    ("sqlite3 db '.parameter set @x 2'", []),
]


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode(errors="surrogateescape"))


def _asks(root: Path, command: str) -> tuple[list[str], list[tuple[str, str]]]:
    result = analyze(command, root, root)
    return [p.replace(str(root.parent), "{up}") for p in result.outside], list(dict.fromkeys(result.commands))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    return (tmp_path / "ws").resolve()


@pytest.mark.parametrize(("files", "command", "outside", "asked"), SCRIPTS, ids=[r[1][:40] for r in SCRIPTS])
def test_script_files(
    root: Path, files: dict[str, str], command: str, outside: list[str], asked: list[tuple[str, str]]
) -> None:
    _write(root, files)
    first = next(iter(files.values()), "").encode(errors="surrogateescape")
    sha = hashlib.sha256(first).hexdigest()[:16]
    want = [o.replace("{sha}", sha) for o in outside]
    assert _asks(root, command) == (want, [(p, p if a == "=" else a) for p, a in asked])


@pytest.mark.parametrize(("command", "outside"), SQL, ids=[r[0][:40] for r in SQL])
def test_sqlite_sql_is_tokenized(root: Path, command: str, outside: list[str]) -> None:
    found, bash = _asks(root, command)
    assert found == outside and bash[0][1] == "sqlite3 *"


def test_the_files_read_are_kept_with_their_digest_and_a_change_is_seen(root: Path) -> None:
    _write(root, {"s.sed": "p\n"})
    result = analyze("sed -f s.sed f && gdb ./a.out", root, root)
    script, init = str(root / "s.sed"), str(root / ".gdbinit")
    assert result.sources == {script: hashlib.sha256(b"p\n").hexdigest(), init: None}
    assert stale(result.sources) == []
    _write(root, {".gdbinit": "shell rm x\n"})  # a .gdbinit that appears counts as a change
    (root / "s.sed").write_text("1e rm x\n")
    assert stale(result.sources) == [script, init]


def test_a_file_not_read_is_not_hashed_or_kept(root: Path) -> None:
    # a large file is unknown whatever it holds: it is neither hashed nor checked again
    _write(root, {"big.sed": "p\n" * MAX_BYTES, "l1.sed": "\udcff\n"})
    result = analyze("sed -f big.sed -f l1.sed -f none.sed f", root, root)
    assert result.sources == {} and len(result.outside) == 3


async def test_the_tool_does_not_run_a_command_whose_script_changed_while_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real sed, a scripted human who approves while the script is swapped for one that runs a
    command: nothing runs, and the error says to call again."""
    root = tmp_path / "ws"
    root.mkdir()
    h = make_harness(root, tmp_path / "data")
    _write(root, {"s.sed": "s/a/b/\n", "f": "a\n"})
    answer = h.human.permission

    async def swapped(request: PermissionRequest) -> Reply:
        (root / "s.sed").write_text("1e touch ran\n")
        return await answer(request)

    monkeypatch.setattr(h.human, "permission", swapped)
    h.human.replies = [Reply("once")]
    outcome = await h.call("bash", {"command": "sed -f s.sed f", "description": "edit f"})
    assert outcome.error is not None and "s.sed changed after the command was checked" in outcome.error
    assert not (root / "ran").exists() and (root / "f").read_text() == "a\n"
    h.human.replies = [Reply("once"), Reply("once")]  # called again: the new script is asked for
    await h.ok("bash", {"command": "sed -f s.sed f", "description": "edit f"})
    assert [r.patterns for r in h.human.asked[1:]] == [["sed -f s.sed f", "touch ran"]]
    assert (root / "ran").exists()
