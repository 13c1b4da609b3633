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
        # files read or written through options, or named in a file
        ("tree -o ../t src", ["{up}/*"], [("tree -o ../t src", "tree *")]),
        ("tree -L 2 ../x", ["{up}/*"], [("tree -L 2 ../x", "tree *")]),
        ("jq --rawfile v ../f -n '$v'", ["{up}/*"], [("jq --rawfile v ../f -n '$v'", "jq *")]),
        ("jq --slurpfile v ../f . a.json", ["{up}/*"], [("jq --slurpfile v ../f . a.json", "jq *")]),
        ("jq --arg ../x y .name a.json", [], [("jq --arg ../x y .name a.json", "jq *")]),
        ("jq .name ../a.json", ["{up}/*"], [("jq .name ../a.json", "jq *")]),
        ("jq -f ../prog.jq a.json", ["{up}/*"], [("jq -f ../prog.jq a.json", "jq *")]),
        ("date -f ../dates", ["{up}/*"], [("date -f ../dates", "date *")]),
        ("date -r ../f +%s", ["{up}/*"], [("date -r ../f +%s", "date *")]),
        ("date -d yesterday +%F", [], [("date -d yesterday +%F", "date *")]),
        (
            "wc -l --files0-from=../list",
            ["{up}/*", "(files named in ../list)"],
            [("wc -l --files0-from=../list", "wc *")],
        ),
        ("du -s --files0-from list", ["(files named in list)"], [("du -s --files0-from list", "du *")]),
        ("sort --files0-from=list", ["(files named in list)"], [("sort --files0-from=list", "sort *")]),
        ("find -files0-from l -name x", ["(files named in l)"], [("find -files0-from l -name x", "find *")]),
        ("git diff --no-index ../a b", ["{up}/*"], [("git diff --no-index ../a b", "git diff *")]),
        ("git diff ../a b", ["{up}/*"], [("git diff ../a b", "git diff *")]),
        ("git diff --output=../d HEAD", ["{up}/*"], [("git diff --output=../d HEAD", "git diff *")]),
        ("git log -p --output ../d", ["{up}/*"], [("git log -p --output ../d", "git log *")]),
        ("git format-patch -o ../p @", ["{up}/*"], [("git format-patch -o ../p @", "git format-patch *")]),
        ("git commit -F ../msg", ["{up}/*"], [("git commit -F ../msg", "git commit *")]),
        ("git apply -p1 ../fix.patch", ["{up}/*"], [("git apply -p1 ../fix.patch", "git apply *")]),
        (
            "git apply --directory=../w p.diff",
            ["{up}/*"],
            [("git apply --directory=../w p.diff", "git apply *")],
        ),
        (
            "git apply --unsafe-paths p.diff",
            ["(patch paths)"],
            [("git apply --unsafe-paths p.diff", "git apply *")],
        ),
        ("git am -3 ../series.mbox", ["{up}/*"], [("git am -3 ../series.mbox", "git am *")]),
        (
            "git bundle create ../b.bundle HEAD",
            ["{up}/*"],
            [("git bundle create ../b.bundle HEAD", "git bundle *")],
        ),
        ("git bundle verify ../b.bundle", ["{up}/*"], [("git bundle verify ../b.bundle", "git bundle *")]),
        ("git apply --check p.diff", [], [("git apply --check p.diff", "git apply *")]),
        ("git -C src diff --output=../d", [], [("git -C src diff --output=../d",) * 2]),
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
        ("awk 'BEGIN { ARGV[1] = \"../in\"; ARGC = 2 } { print }'", ["{up}/*"]),  # reads ../in
        ("awk 'BEGIN { ARGV[ARGC++] = ENVIRON[\"F\"] } 1' f", ["(awk ARGV)"]),
        ("awk 'BEGIN { split(\"../a ../b\", ARGV) } 1'", ["(awk ARGV)"]),
        ("awk '{ sub(/a/, \"../\", ARGV[1]) } 1' f", ["(awk ARGV)"]),
        ('awk \'{ print ARGV[1]; n = ARGV[0] == "awk"; printf("%s", ARGV[1]) }\' f', []),
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
