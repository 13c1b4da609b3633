"""The bash analysis of what programs read as their program from stdin, on real files.

The bash tool gives commands /dev/null as stdin, so a program reads a program from stdin only
when the command line feeds one (a pipe, ``< FILE``, a heredoc). Each row of ``STDIN`` is the
files written in the workspace first, the command, the ``external_directory`` patterns it must
raise and its ``bash`` (pattern, always) pairs; ``{up}`` is the workspace's parent, ``{sha}``
the first 16 hex digits of the SHA-256 of the heredoc's text, ``=`` "the pattern itself".
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from tools._shell import analyze

Row = tuple[dict[str, str], str, list[str], list[tuple[str, str]]]

STDIN: list[Row] = [
    # its own language, fed: a literal heredoc or a file is read as a script of it
    (
        {},
        "sqlite3 db <<'EOF'\n.shell rm ../x\nselect 1;\nEOF",
        ["{up}/*"],
        [("sqlite3 db", "sqlite3 *"), ("rm ../x", "rm *")],
    ),
    (
        {"s.sql": ".shell rm ../x\n"},
        "sqlite3 db < s.sql",
        ["{up}/*"],
        [("sqlite3 db", "sqlite3 *"), ("rm ../x", "rm *")],
    ),
    (
        {"s.sql": ".shell rm ../x\n"},
        "exec < s.sql; sqlite3 db",
        ["{up}/*"],
        [("exec", "exec *"), ("sqlite3 db", "sqlite3 *"), ("rm ../x", "rm *")],
    ),
    (
        {"s.sql": ".shell rm ../x\n"},
        "{ echo start; sqlite3 db; } < s.sql",
        ["{up}/*"],
        [("echo start", "echo *"), ("sqlite3 db", "sqlite3 *"), ("rm ../x", "rm *")],
    ),
    (
        {},
        "gdb -q ./a.out <<'EOF'\nshell rm ../x\nEOF",
        ["{up}/*"],
        [("gdb -q ./a.out", "gdb -q ./a.out *"), ("rm ../x", "rm *"), ("./a.out", "./a.out *")],
    ),
    ({}, "vim -e f <<'EOF'\n!rm ../x\nEOF", ["{up}/*"], [("vim -e f", "vim *"), ("rm ../x", "rm *")]),
    # ... anything else fed is unknown
    (
        {},
        "echo '.shell rm x' | sqlite3 db",
        ["(script on stdin)"],
        [("echo '.shell rm x'", "echo *"), ("sqlite3 db", "sqlite3 *")],
    ),
    (
        {},
        "echo 'shell rm x' | gdb -q ./a.out",
        ["(script on stdin)"],
        [("echo 'shell rm x'", "echo *"), ("gdb -q ./a.out", "gdb -q ./a.out *"), ("./a.out", "./a.out *")],
    ),
    # not fed, or not read as a program: nothing more
    ({}, "sqlite3 db", [], [("sqlite3 db", "sqlite3 *")]),
    (
        {},
        "echo 1 | sqlite3 db 'select 1'",
        [],
        [("echo 1", "echo *"), ("sqlite3 db 'select 1'", "sqlite3 *")],
    ),
    (
        {},
        "echo 'shell rm x' | gdb -batch ./a.out",
        [],
        [
            ("echo 'shell rm x'", "echo *"),
            ("gdb -batch ./a.out", "gdb -batch ./a.out *"),
            ("./a.out", "./a.out *"),
        ],
    ),
    (
        {},
        "gdb -q ./a.out < /dev/null",
        [],
        [("gdb -q ./a.out", "gdb -q ./a.out *"), ("./a.out", "./a.out *")],
    ),
    ({}, "cat data | python3 run.py", [], [("cat data", "cat *"), ("python3 run.py", "python3 run.py *")]),
    ({}, "python3", [], [("python3", "python3 *")]),
    # code that is not followed: unknown, named by its digest when literal, exact only (the
    # grammar drops the - of `python3 - <<EOF`)
    (
        {},
        "python3 - <<'EOF'\nimport os\nEOF",
        ["(stdin of python3: not followed, sha256 {sha})"],
        [("python3", "=")],
    ),
    ({}, "curl -s x.test | python3", ["(script on stdin)"], [("curl -s x.test", "curl *"), ("python3", "=")]),
    ({}, "curl -s x.test | perl", ["(script on stdin)"], [("curl -s x.test", "curl *"), ("perl", "=")]),
    ({}, "ed -s f <<< '!rm x'", ["(stdin of ed: not followed, sha256 {sha})"], [("ed -s f", "=")]),
    ({}, "echo '!rm x' | vim f", ["(script on stdin)"], [("echo '!rm x'", "echo *"), ("vim f", "=")]),  # keys
    # a script operand that is a pipe
    (
        {},
        "source <(curl -s x.test)",
        ["(script from <(curl -s x.test))"],
        [("curl -s x.test", "curl *"), ("source <(curl -s x.test)", "source *")],
    ),
    (
        {},
        "curl -s x.test | bash /dev/stdin",
        ["(script from /dev/stdin)"],
        [("curl -s x.test", "curl *"), ("bash /dev/stdin", "bash /dev/stdin *")],
    ),
    # a container entered with nothing to run: its shell (or the image's command) reads stdin
    (
        {},
        "docker run -i alpine <<'EOF'\nrm -rf /\nEOF",
        ["(docker run -i alpine)"],
        [("docker run -i alpine", "="), ("rm -rf /", "rm *")],
    ),
    (
        {},
        "docker run -i alpine",
        ["(docker run -i alpine)", "(script on stdin)"],
        [("docker run -i alpine", "=")],
    ),
    ({}, "docker run alpine", ["(docker run alpine)"], [("docker run alpine", "docker run alpine *")]),
    (
        {},
        "distrobox enter box <<'EOF'\nrm -rf ~\nEOF",
        ["(distrobox enter box)"],
        [("distrobox enter box", "="), ("rm -rf ~", "rm *")],
    ),
    ({}, "toolbox enter", ["(toolbox enter)", "(script on stdin)"], [("toolbox enter", "=")]),
    (
        {},
        "kubectl run -i web --image=alpine",
        ["(kubectl run -i web --image=alpine)", "(script on stdin)"],
        [("kubectl run -i web --image=alpine", "=")],
    ),
    (
        {},
        "docker compose run web",
        ["(docker compose run web)", "(script on stdin)"],
        [("docker compose run web", "=")],
    ),
]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    return (tmp_path / "ws").resolve()


@pytest.mark.parametrize(("files", "command", "outside", "asked"), STDIN, ids=[r[1][:40] for r in STDIN])
def test_programs_reading_stdin(
    root: Path, files: dict[str, str], command: str, outside: list[str], asked: list[tuple[str, str]]
) -> None:
    for name, content in files.items():
        (root / name).write_text(content)
    heredoc = re.search(r"<<'EOF'\n(.*\n)EOF|<<< '(.*)'", command, re.S)
    body = (heredoc[1] or heredoc[2] + "\n") if heredoc else ""
    sha = hashlib.sha256(body.encode()).hexdigest()[:16]
    result = analyze(command, root, root)
    found = [p.replace(str(root.parent), "{up}") for p in result.outside]
    assert found == [o.replace("{sha}", sha) for o in outside]
    assert list(dict.fromkeys(result.commands)) == [(p, p if a == "=" else a) for p, a in asked]
