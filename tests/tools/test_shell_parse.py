"""The bash analysis reads the text as bash's lexer does before the grammar sees it: line
continuations joined (not in single quotes, ``$'...'``, comments or quoted heredocs), escaped
blanks kept in their word; substitutions in words the grammar leaves as text are analyzed; and a
command the grammar cannot parse can only be approved exactly.

Rows as in ``test_shell.TABLE``; real bash says what the text means.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tools import Reply, Rule
from tools._shell import analyze
from tools._shell_parse import joined

from .bash_helpers import _call, _harness
from .test_shell import Row, check_row, make_tree

CONTINUATIONS: list[Row] = [
    # a backslash-newline inside a word is no word break: the word is asked as bash reads it
    ("r\\\nm -rf build", [], [("rm -rf build", "rm *")]),
    ("tr\\\nap 'rm -rf x' EXIT", [], [("trap 'rm -rf x' EXIT", "trap *"), ("rm -rf x", "rm *")]),
    ("cat .\\\n./x", ["{up}/*"], [("cat ../x", "cat *")]),
    ("cat \\\n../x \\\n  src", ["{up}/*"], [("cat ../x src", "cat *")]),
    ('echo "a\\\nb" $(r\\\nm x)', [], [("rm x", "rm *"), ("echo ab $(rm x)", "echo *")]),
    # kept where bash keeps it: single quotes, $'...', comments, quoted heredocs
    ("echo 'a\\\nb'", [], [("echo 'a\\\nb'", "echo *")]),
    ("echo a # b \\\nrm -rf x", [], [("echo a", "echo *"), ("rm -rf x", "rm *")]),
    ("cat <<'EOF' > f\nr\\\nm x\nEOF", [], [("cat", "cat *")]),
    # ...but a shell reading a script removes them there too
    ("bash <<'EOF'\nr\\\nm x\nEOF", [], [("bash", "="), ("rm x", "rm *")]),
    ("bash <<EOF\nr\\\nm x\nEOF", [], [("bash", "="), ("rm x", "rm *")]),
    # an escaped blank is part of its word, not a break: `\ #x` starts no comment
    ("echo \\ #x; rm -rf y", [], [("echo ' #x'", "echo *"), ("rm -rf y", "rm *")]),
    ("echo x \\\r\nrm -rf y", [], [("echo x '\r'", "echo *"), ("rm -rf y", "rm *")]),
    ("echo a\\\tb", [], [("echo 'a\tb'", "echo *")]),
]


#: tree-sitter-bash reads a pipeline of three commands and, on the lines after it, a command with
#: a heredoc as one pipeline whose last command takes the next lines' words: asked as bash runs them.
MERGED_LINES: list[Row] = [
    (
        "ls | sort | cat\nrm -rf build <<EOF\nx\nEOF",
        [],
        [("ls", "ls *"), ("sort", "sort *"), ("cat", "cat *"), ("rm -rf build", "rm *")],
    ),
    (
        "ls | sort | cat # c\nrm -rf build <<EOF\nx\nEOF",
        [],
        [("ls", "ls *"), ("sort", "sort *"), ("cat", "cat *"), ("rm -rf build", "rm *")],
    ),
    (
        "ls | sort | cat\ntouch a\nrm b <<EOF > f\n$(date)\nEOF",
        [],
        [
            ("ls", "ls *"),
            ("sort", "sort *"),
            ("cat", "cat *"),
            ("touch a", "touch *"),
            ("date", "date *"),
            ("rm b", "rm *"),
        ],
    ),
]


#: Words after a heredoc's start are the command's: a rule denying ``git push --force*`` applies.
HEREDOC_WORDS: list[Row] = [
    ("git push <<EOF --force\nEOF", [], [("git push --force", "git push *")]),
    ("cat <<EOF > out $(date)\nx\nEOF", ["$(date)"], [("date", "date *"), ("cat $(date)", "cat *")]),
]

#: Shapes tree-sitter-bash gives, without an error, to text it reads otherwise than bash: the
#: commands in them hidden, or named by a keyword. Asked exactly, behind "(unparsed)".
MISREAD = [
    "find . | grep x | sort | uniq 2>&1\ntouch made && echo ok",  # touch read as a redirection's
    "cat <<X|bash\necho $HOME\nX\ntouch made\n",  # the delimiter read as X|bash
    "cat <<EOF\n$\nEOF\ntouch made\n",  # a body line "$": what follows read as the body
    "cat <<EOF |\nEOF\ntouch$(echo) made\n",
    "cat <<EOF\n`touch made`\nEOF\n",  # backticks in a heredoc run, left as text by the grammar
    "echo `date``touch made`",  # two substitutions read as one command, date``touch
    "ls | tee >out $(touch made)",
    "ls | X=1 >out touch made",
    "ls && cat >out made",
    "ls | cat <<EOF -n\ntouch made\nEOF",  # a heredoc of a pipeline, with words after it
    "! for i in a; do touch made; done",  # commands named do, then, }
    "time { touch made; }",
    "time if true; then touch made; fi",
    "echo $'\\\\'; touch made # '",  # $'\\' read as running on to the next '
    'echo "`\\`touch made\\``"',  # backticks in backticks, read as text
    "bash <<< 'touch made '\\x",  # a here-string glued to the word after it, read as two words
    'touch``"" made',  # empty backticks in a word, read as text
    "sh <<EOF\n\\`x\\`\ntouch made\nEOF",  # a body line starting with \ read as sh's words
]

#: Words as bash reads them (a rule for ``c1 *`` or against ``rm -f*`` sees what runs).
WORDS: list[Row] = [
    (
        'eval "true\nrm -f x"',
        [],
        [("eval 'true\nrm -f x'", "eval *"), ("true", "true *"), ("rm -f x", "rm *")],
    ),
    ('r$"m" -f x', [], [("rm -f x", "rm *")]),  # $"m" is "m": the $ is no text
    ("rm {,-f} x", [], [("rm {,-f} x", "rm *"), ("rm -f x", "rm *")]),  # bash drops an empty word
]


#: Substitutions in words the grammar leaves as text (``${x#WORD}``, backticks in ``${x:-WORD}``)
#: run all the same.
LEFT_AS_TEXT: list[Row] = [
    ("echo ${x#$(rm a)}", [], [("rm a", "rm *"), ("echo ${x#$(rm a)}", "echo *")]),
    ("echo ${x:-`rm b`}", [], [("rm b", "rm *"), ("echo ${x:-`rm b`}", "echo *")]),
    ('echo "${x%%*$(rm c)}"', [], [("rm c", "rm *"), ('echo "${x%%*$(rm c)}"', "echo *")]),
    ("echo ${x^`rm d`}", [], [("rm d", "rm *"), ("echo ${x^`rm d`}", "echo *")]),
    ("echo ${x,$(rm ../e)}", ["{up}/*"], [("rm ../e", "rm *"), ("echo ${x,$(rm ../e)}", "echo *")]),
    ("echo ${x##${y#`rm f`}}", [], [("rm f", "rm *"), ("echo ${x##${y#`rm f`}}", "echo *")]),
    ("echo ${x#$((n + 1))}", [], [("(evaluates n) ((n + 1))", "="), ("echo ${x#$((n + 1))}", "echo *")]),
    ("echo ${x#\\`rm g\\`}", [], [("echo ${x#\\`rm g\\`}", "echo *")]),  # escaped: no substitution
]


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    return make_tree(tmp_path, monkeypatch)


@pytest.mark.parametrize(
    ("command", "outside", "bash"), CONTINUATIONS, ids=[repr(row[0])[:40] for row in CONTINUATIONS]
)
def test_the_text_is_read_as_bash_lexes_it(
    tree: dict[str, Path], command: str, outside: list[str], bash: list[tuple[str, str]]
) -> None:
    check_row(tree, command, outside, bash)


@pytest.mark.parametrize(
    ("command", "outside", "bash"), MERGED_LINES, ids=[repr(row[0])[:40] for row in MERGED_LINES]
)
def test_a_newline_ends_a_command_the_grammar_runs_on(
    tree: dict[str, Path], command: str, outside: list[str], bash: list[tuple[str, str]]
) -> None:
    check_row(tree, command, outside, bash)


async def test_an_approved_prefix_does_not_approve_the_next_line(tmp_path: Path) -> None:
    h = _harness(tmp_path, [Rule("bash", "cat *", "allow"), Rule("bash", "ls *", "allow")])
    (h.root / "keep").write_text("x")
    h.human.replies = [Reply("reject")]
    outcome = await _call(h, "ls | cat | cat\nrm keep <<EOF\nx\nEOF")
    assert outcome.error is not None and "rejected bash" in outcome.error
    assert (h.root / "keep").exists()
    [ask] = h.human.asked
    assert "rm keep" in ask.patterns


@pytest.mark.parametrize(
    ("command", "outside", "bash"), HEREDOC_WORDS, ids=[repr(row[0])[:40] for row in HEREDOC_WORDS]
)
def test_a_heredoc_s_words_are_the_command_s(
    tree: dict[str, Path], command: str, outside: list[str], bash: list[tuple[str, str]]
) -> None:
    check_row(tree, command, outside, bash)


@pytest.mark.parametrize(("command", "outside", "bash"), WORDS, ids=[repr(row[0])[:40] for row in WORDS])
def test_words_are_read_as_bash_reads_them(
    tree: dict[str, Path], command: str, outside: list[str], bash: list[tuple[str, str]]
) -> None:
    check_row(tree, command, outside, bash)


@pytest.mark.parametrize("command", MISREAD, ids=[repr(c)[:40] for c in MISREAD])
def test_what_the_grammar_misreads_is_asked_exactly(tmp_path: Path, command: str) -> None:
    root = tmp_path.resolve()
    commands = analyze(command, root, root).commands
    assert (f"(unparsed) {command.strip()}", f"(unparsed) {command.strip()}") in commands


@pytest.mark.parametrize("command", MISREAD, ids=[repr(c)[:40] for c in MISREAD])
async def test_an_approved_prefix_does_not_approve_what_the_grammar_misreads(
    tmp_path: Path, command: str
) -> None:
    allowed = ["find *", "grep *", "sort *", "uniq *", "echo *", "cat *", "ls *", "tee *", "time *", "true *"]
    h = _harness(
        tmp_path, [*(Rule("bash", p, "allow") for p in allowed), Rule("external_directory", "*", "allow")]
    )
    h.human.replies = [Reply("reject")]
    outcome = await _call(h, command)
    assert outcome.error is not None and "rejected bash" in outcome.error
    assert not (h.root / "made").exists()


@pytest.mark.parametrize(
    ("command", "outside", "bash"), LEFT_AS_TEXT, ids=[row[0][:40] for row in LEFT_AS_TEXT]
)
def test_substitutions_left_as_text_are_analyzed(
    tree: dict[str, Path], command: str, outside: list[str], bash: list[tuple[str, str]]
) -> None:
    check_row(tree, command, outside, bash)


@pytest.mark.parametrize(
    "command",
    [
        "echo ${x#$(touch made)}",
        "echo ${x:-`touch made`}",
        "x='a[$(touch made)]'; echo $((x))",  # arithmetic evaluates the value of x
        "let 'a[$(touch made)]'",
    ],
)
async def test_an_approved_prefix_does_not_approve_what_its_words_run(tmp_path: Path, command: str) -> None:
    rules = [Rule("bash", "echo *", "allow"), Rule("bash", "let *", "allow")]
    h = _harness(tmp_path, [*rules, Rule("external_directory", "*", "allow")])
    h.human.replies = [Reply("reject")]
    outcome = await _call(h, command)
    assert outcome.error is not None and "rejected bash" in outcome.error
    assert not (h.root / "made").exists()


@pytest.mark.parametrize(
    "script",
    [
        "echo a\\\nb 'c\\\nd' \"e\\\nf\" $'g\\\nh'",
        "echo a # b \\\necho c",
        "echo a\\\n#b c",
        "echo $\\\n'a\\tb'",
        "cat <<EOF\nx\\\nEOF\nEOF\necho 'y\\\nz'",
        "cat <<'EOF'\nx\\\nEOF\necho 'y\\\nz'",
        "cat <\\\n<'EOF'\na\\\nb\nEOF\necho c\\\nd",
        "echo \\ #x; echo y",
        "echo a\\ \\\nb\\\tc",
        "echo `echo a\\\nb` $(echo 'c\\\nd')",
        "x=1; echo ${x\\\n}",
        "echo \\\\\necho b",
        "echo $\\ x \\$\\ y",  # $' ' would be ANSI-C quoting
        "echo \\\r'a\\\nb'",
        "echo a | cat | cat # c\necho b <<EOF\nx\nEOF",
        "echo a | cat | cat\ncat <<EOF\n$(echo y)\nEOF",
    ],
)
def test_joined_text_runs_as_the_original_does(script: str) -> None:
    def run(text: str) -> str:
        return subprocess.run(
            ["bash", "-c", text], capture_output=True, text=True, timeout=10, check=False
        ).stdout

    assert run(joined(script)) == run(script)


def test_a_continuation_cannot_hide_a_protected_path(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    assert list(analyze("echo x > .gi\\\nt/config", root, root).protected) == [".git/config"]


@pytest.mark.parametrize(
    "command",
    ["ls <<EOF; touch made\nEOF", "ls ${x//'/'/}; touch made"],
)
def test_what_the_grammar_cannot_parse_is_asked_exactly_behind_a_label(tmp_path: Path, command: str) -> None:
    root = tmp_path.resolve()
    commands = analyze(command, root, root).commands
    assert (f"(unparsed) {command}", f"(unparsed) {command}") in commands


async def test_an_approved_prefix_does_not_approve_what_the_grammar_cannot_parse(tmp_path: Path) -> None:
    h = _harness(tmp_path, [Rule("bash", "ls *", "allow"), Rule("external_directory", "*", "allow")])
    h.human.replies = [Reply("reject")]
    outcome = await _call(h, "ls <<EOF; touch made\nEOF")
    assert outcome.error is not None and "rejected bash" in outcome.error
    assert not (h.root / "made").exists()
    [ask] = h.human.asked
    assert "(unparsed) ls <<EOF; touch made\nEOF" in ask.patterns
