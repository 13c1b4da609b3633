"""The bash analysis of what programs' own languages (sed, awk, vim, sqlite3, socat) and file
options (tar, ncat) run or name, and of code given to an interpreter. Analysis only: nothing
here is run."""

from __future__ import annotations

from pathlib import Path

import pytest

from .bash_helpers import _asks


@pytest.mark.parametrize(
    ("command", "outside", "asked"),
    [
        (
            "ncat --lua-exec x.lua host 80",
            ["(ncat --lua-exec x.lua)"],
            [("ncat --lua-exec x.lua host 80", "ncat *")],
        ),
        ("tar -xf a.tar --checkpoint-action=dot", [], [("tar -xf a.tar --checkpoint-action=dot", "tar *")]),
        ('tar -I "$Z" -xf a.tar', ['"$Z"'], [('tar -I "$Z" -xf a.tar', "tar *")]),
        ("tar xfC a.tar ../dir", ["{up}/*"], [("tar xfC a.tar ../dir", "tar *")]),
    ],
)
def test_what_file_commands_run_or_name(
    tmp_path: Path, command: str, outside: list[str], asked: list[tuple[str, str]]
) -> None:
    assert _asks(tmp_path, command) == (outside, asked)


@pytest.mark.parametrize(
    ("command", "outside"),
    [
        # what their own languages run but is not followed is unknown; the files they write or
        # read are checked; what only edits, prints or moves is harmless
        ("sed 's/a/rm x/e' f", ["'s/a/rm x/e'"]),
        ("sed 'e' f", ["'e'"]),
        ("sed 'w ../out' f", ["{up}/*"]),
        ("sed -e 's/a/b/w ../out' f", ["{up}/*"]),
        ("sed '1r ../in' f", ["{up}/*"]),
        ("sed --sandbox 'e rm ../x' f", []),
        ("sed -i 's/foo/bar/g; /^#/d' f", []),
        ("sed ':a;N;$!ba;s/\\n/ /g' f", []),
        ("sed -E 's|/usr|/opt|g' f", []),
        ("awk '{ print > \"../x\" }' f", ["{up}/*"]),
        ('awk \'{ printf("%s", $1) >> "../x" }\' f', ["{up}/*"]),
        ("awk 'BEGIN { while ((getline l < \"../in\") > 0) print l }'", ["{up}/*"]),
        ("awk '{ print > $2 }' f", ["(awk >)"]),
        ("awk '{ system(\"rm \" $1) }' f", ["(awk system())"]),
        ("awk '{ c = \"rm \" $1; c | getline }' f", ["(awk | getline)"]),
        ("gawk -l ext 'BEGIN {}'", ["(awk -l ext)"]),
        ("gawk '@load \"ext\"; BEGIN {}'", ["(awk @load)"]),
        ("awk '/foo|bar/ { if ($1 > 3) print $2 / 2 }' f", []),
        ("vim --cmd 'call system(\"x\")' f", ["'call system(\"x\")'"]),
        ("vim -c '!rm %' f", ["'!rm %'"]),
        ("vim -c 'w ../x' f", ["{up}/*"]),
        ("vim -s keys f", ["(vim -s keys)"]),
        ("vim -c 'set nu' -c '%s/a/b/g' -c wq +42 f", []),
        ("sqlite3 db '.output ../out.txt' 'select 1'", ["{up}/*"]),
        ("sqlite3 db '.load ./x'", ["'.load ./x'"]),
        ("sqlite3 db \"select load_extension('x')\"", ["\"select load_extension('x')\""]),
        ("sqlite3 -safe db '.shell rm ../x'", []),
        ("sqlite3 db .tables 'select 1'", []),
        ("socat - 'SYSTEM:echo a,b; rm -rf /'", ["'SYSTEM:echo a,b; rm -rf /'"]),
        ("socat - EXEC:'ls',path=/opt", ["EXEC:'ls',path=/opt"]),
        ("socat - OPEN:../x,creat", ["{up}/*"]),
        ("socat - ../x", ["{up}/*"]),
        ("socat TCP:host:80 -", []),
    ],
)
def test_what_programs_own_languages_run_or_name(tmp_path: Path, command: str, outside: list[str]) -> None:
    found, bash = _asks(tmp_path, command)
    assert found == outside
    # the program is asked by its prefix: what it runs is asked apart
    assert bash[0][1] == command.split(maxsplit=1)[0] + " *"


@pytest.mark.parametrize(
    "command", ["python -c 'import os'", "perl -e 'print 1'", "node -e 'x()'", "ruby -e 'x'", "python3 -c x"]
)
def test_code_given_to_an_interpreter_is_approved_exactly(tmp_path: Path, command: str) -> None:
    # its code is not analyzed: asked by the interpreter's name, and only ever exactly
    _, bash = _asks(tmp_path, command)
    assert len(bash) == 1 and bash[0][0] == bash[0][1]
