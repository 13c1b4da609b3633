"""The bash analysis: command text -> the exact permission requests, on a real tree with symlinks.

Each row of ``TABLE`` is a command, the ``external_directory`` patterns it must raise, and its
``bash`` (pattern, always) pairs. ``{out}`` is a folder outside the workspace, ``{up}`` the
workspace's parent, ``{home}`` the home folder; ``link_out`` points at ``{out}``, ``link_in`` at
``src`` inside, ``link_deep`` at ``src/deep``. ``=`` as the always pattern means "the pattern
itself" (exact approval only). This table has the basics (paths, nesting, heredocs); the themed
tables in the same form, checked by ``check_row``, are in ``test_shell_wrappers.py``,
``test_shell_variables.py``, ``test_shell_runners.py`` and ``test_shell_remote.py``.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from tools._arity import always_prefix
from tools._shell import analyze, permission_requests
from tools._shell_paths import MAX_LINKS, MAX_MATCHES, UNCHECKED
from tools._shell_words import MAX_WORDS, braces, parse_options
from tools.permission import literal

Row = tuple[str, list[str], list[tuple[str, str]]]

TABLE: list[Row] = [
    # harmless: no outside access
    ("ls -la", [], [("ls -la", "ls *")]),
    ("echo /etc/passwd", [], [("echo /etc/passwd", "echo *")]),
    ("git status", [], [("git status", "git status *")]),
    ("git log --oneline -n 5", [], [("git log --oneline -n 5", "git log *")]),
    ("git --no-pager log", [], [("git --no-pager log", "=")]),
    ("git diff HEAD~1 -- src/", [], [("git diff HEAD~1 -- src/", "git diff *")]),
    (
        'git commit -m "fix: /etc/hosts parsing"',
        [],
        [("git commit -m 'fix: /etc/hosts parsing'", "git commit *")],
    ),
    ("npm test", [], [("npm test", "npm test *")]),
    ("FOO=1 npm test", [], [("npm test", "npm test *")]),
    ("npm run dev -- --port 3000", [], [("npm run dev -- --port 3000", "npm run dev *")]),
    ("docker compose up -d", [], [("docker compose up -d", "docker compose up *")]),
    (
        "kubectl rollout restart deployment/web",
        [],
        [("kubectl rollout restart deployment/web", "kubectl rollout restart *")],
    ),
    ("git checkout -b feature", [], [("git checkout -b feature", "git checkout *")]),
    ("python -m pytest -q tests", [], [("python -m pytest -q tests", "python -m pytest *")]),
    ("cat README.md > /dev/null 2>&1", [], [("cat README.md", "cat *")]),
    ("echo done >&2", [], [("echo done", "echo *")]),
    ("grep -rn TODO src | head -20", [], [("grep -rn TODO src", "grep *"), ("head -20", "head *")]),
    (
        "mkdir -p build && cd build && cmake ..",
        [],
        [("mkdir -p build", "mkdir *"), ("cd build", "cd *"), ("cmake ..", "cmake *")],
    ),
    ("cd src && ls ..", [], [("cd src", "cd *"), ("ls ..", "ls *")]),
    ("cat link_in/app.py", [], [("cat link_in/app.py", "cat *")]),
    ("rm -rf node_modules dist", [], [("rm -rf node_modules dist", "rm *")]),
    ("find . -name '*.pyc' -delete", [], [("find . -name '*.pyc' -delete", "find *")]),
    ('printf "%s\\n" "$HOME"', [], [("printf '%s\\n' \"$HOME\"", "printf *")]),
    (
        "curl -s https://example.com | jq .name",
        [],
        [("curl -s https://example.com", "curl *"), ("jq .name", "jq *")],
    ),
    ("sort data.txt | uniq -c > counts.txt", [], [("sort data.txt", "sort *"), ("uniq -c", "uniq *")]),
    ("cat {data}/tool-output/saved.txt", [], [("cat {data}/tool-output/saved.txt", "cat *")]),
    ("ls *.py src/*.ts", [], [("ls *.py src/*.ts", "ls *")]),
    (
        "touch file{1..3}.txt",
        [],
        [("touch file{1..3}.txt", "touch *"), ("touch file1.txt file2.txt file3.txt", "touch *")],
    ),
    ("chmod 755 run.sh", [], [("chmod 755 run.sh", "chmod *")]),
    ("rsync -av src/ user@host:/backup/", [], [("rsync -av src/ user@host:/backup/", "rsync *")]),
    ("rm -- -rf", [], [("rm -- -rf", "rm *")]),
    ("command -v git", [], [("command -v git", "command *")]),
    ("true", [], [("true", "true *")]),
    # quoting and escapes are normalised, so a deny of `rm *` cannot be dodged
    ("\"rm\" -rf 'build'", [], [("rm -rf build", "rm *")]),
    ("r\\m -rf build", [], [("rm -rf build", "rm *")]),
    # outside the workspace: absolute, .., ~, symlinks, redirections
    ("cat /etc/hosts", ["/etc/*"], [("cat /etc/hosts", "cat *")]),
    ("cat > {out}/new.txt", ["{out}/*"], [("cat", "cat *")]),
    ("echo x >> ../notes.txt", ["{up}/*"], [("echo x", "echo *")]),
    ("make 2> {out}/err.log", ["{out}/*"], [("make", "make *")]),
    ("make &> {out}/build.log", ["{out}/*"], [("make", "make *")]),
    ("echo hi | tee {out}/log", ["{out}/*"], [("echo hi", "echo *"), ("tee {out}/log", "tee *")]),
    ("exec > {out}/log", ["{out}/*"], [("exec", "exec *")]),
    ("rm -rf ~/x", ["{home}/*"], [("rm -rf ~/x", "rm *")]),
    ("ls ~", ["{home}/*"], [("ls ~", "ls *")]),
    ("git log > ~/log.txt", ["{home}/*"], [("git log", "git log *")]),
    ("cd", ["{home}/*"], [("cd", "cd *")]),
    ("cat link_out/secret.txt", ["{out}/*"], [("cat link_out/secret.txt", "cat *")]),
    ("rm $'../x\\0y'", ["{up}/*"], [("rm ../x", "rm *")]),  # bash ends $'...' at a NUL
    ("link_out/tool --x", ["{out}/*"], [("link_out/tool --x", "link_out/tool *")]),  # runs from there
    ("./link_in/tool", [], [("./link_in/tool", "./link_in/tool *")]),
    # a glob matching a symlink (link_out, link_in) leads where it points
    ("cat */secret.txt", ["{out}/*"], [("cat */secret.txt", "cat *")]),
    ("chmod -R 700 */", ["{out}/*"], [("chmod -R 700 */", "chmod *")]),
    ("ls link_[io]*", ["{out}/*"], [("ls link_[io]*", "ls *")]),
    ("ls link_i*", [], [("ls link_i*", "ls *")]),
    ("shopt -s globstar; cat **", ["{out}/*"], [("shopt -s globstar", "shopt *"), ("cat **", "cat *")]),
    ("cp src/a.py ../backup/", ["{up}/*"], [("cp src/a.py ../backup/", "cp *")]),
    ("ls ../*", ["{up}/*"], [("ls ../*", "ls *")]),
    ("cat -- ../x", ["{up}/*"], [("cat -- ../x", "cat *")]),
    ("cd .. && rm -rf other", ["{up}/*"], [("cd ..", "cd *"), ("rm -rf other", "rm *")]),
    ("cd {out} && rm a.txt", ["{out}/*"], [("cd {out}", "cd *"), ("rm a.txt", "rm *")]),
    ("(cd {out}; rm -rf build); rm -rf build", ["{out}/*"], [("cd {out}", "cd *"), ("rm -rf build", "rm *")]),
    ("tar czf {out}/a.tgz src", ["{out}/*"], [("tar czf {out}/a.tgz src", "tar *")]),
    ("tar -xzf archive.tgz -C ../x", ["{up}/*"], [("tar -xzf archive.tgz -C ../x", "tar *")]),
    ("dd if=/dev/zero of={out}/disk bs=1M", ["{out}/*"], [("dd if=/dev/zero of={out}/disk bs=1M", "dd *")]),
    ("sed -i 's/a/b/' ../other.txt", ["{up}/*"], [("sed -i s/a/b/ ../other.txt", "sed *")]),
    ("chmod 755 ../script.sh", ["{up}/*"], [("chmod 755 ../script.sh", "chmod *")]),
    ("ln -s /etc/passwd link", ["/etc/*"], [("ln -s /etc/passwd link", "ln *")]),
    ("scp {out}/f host:", ["{out}/*"], [("scp {out}/f host:", "scp *")]),
    (
        "curl -o {out}/page.html https://x.test",
        ["{out}/*"],
        [("curl -o {out}/page.html https://x.test", "curl *")],
    ),
    (
        "python3 {out}/script.py --fast",
        ["{out}/*"],
        [("python3 {out}/script.py --fast", "python3 {out}/script.py *")],
    ),
    ("source ../env.sh", ["{up}/*"], [("source ../env.sh", "source *")]),
    ("git -C {out} status", ["{out}/*"], [("git -C {out} status", "=")]),
    ("stat /", ["/*"], [("stat /", "stat *")]),
    # unknowable values count as outside, named by their text
    ("rm -rf $HOME/x", ["$HOME/x"], [("rm -rf $HOME/x", "rm *")]),
    ("cd $DIR && rm -rf build", ["$DIR", "$DIR/build"], [("cd $DIR", "cd *"), ("rm -rf build", "rm *")]),
    ('for f in *.txt; do mv "$f" "$f.bak"; done', ['"$f"', '"$f.bak"'], [('mv "$f" "$f.bak"', "mv *")]),
    ("ls {src,../x}", ["{up}/*"], [("ls {src,../x}", "ls *"), ("ls src ../x", "ls *")]),
    ("cat $(ls)", ["$(ls)"], [("ls", "ls *"), ("cat $(ls)", "cat *")]),
    # nesting: substitutions, subshells, conditionals, loops, functions, process substitution
    ("echo $(cat ../secret)", ["{up}/*"], [("cat ../secret", "cat *"), ("echo $(cat ../secret)", "echo *")]),
    ("echo `rm -rf ../x`", ["{up}/*"], [("rm -rf ../x", "rm *"), ("echo `rm -rf ../x`", "echo *")]),
    (
        "diff <(cat {out}/a) b.txt",
        ["{out}/*"],
        [("cat {out}/a", "cat *"), ("diff <(cat {out}/a) b.txt", "diff *")],
    ),
    (
        "if [ -f x ]; then rm x; else touch {out}/y; fi",
        ["{out}/*"],
        [("rm x", "rm *"), ("touch {out}/y", "touch *")],
    ),
    (
        "while read l; do echo $l; done < {out}/list",
        ["{out}/*"],
        [("read l", "read *"), ("echo $l", "echo *")],
    ),
    ("f() { rm -rf {out}; }; f", ["{out}/*"], [("rm -rf {out}", "rm *"), ("f", "f *")]),
    ("case $x in a) rm ../a;; esac", ["{up}/*"], [("rm ../a", "rm *")]),
    ("x=$(cat {out}/v) && echo $x", ["{out}/*"], [("cat {out}/v", "cat *"), ("echo $x", "echo *")]),
    # heredocs and here-strings
    ("cat <<EOF > {out}/cfg\nkey=$(whoami)\nEOF", ["{out}/*"], [("whoami", "whoami *"), ("cat", "cat *")]),
    ("cat <<'EOF'\n$(rm -rf /)\nEOF", [], [("cat", "cat *")]),
    ('grep x <<< "$(cat {out}/f)"', ["{out}/*"], [("cat {out}/f", "cat *"), ("grep x", "grep *")]),
    # a script the grammar cannot parse is asked as a whole (a deny of it applies), exactly behind
    # a label no prefix rule matches (`echo *` does not approve it), and what was found too
    ("echo (", [], [("echo (", "="), ("(unparsed) echo (", "="), ("echo", "echo *")]),
]


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    return make_tree(tmp_path, monkeypatch)


def make_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """The workspace and the folders around it that the tables name (the module docstring)."""
    base = tmp_path.resolve()
    root, out, home, data = base / "ws", base / "outside", base / "home", base / "data"
    for folder in (root / "src" / "deep", out, home, data / "tool-output"):
        folder.mkdir(parents=True)
    (root / "link_out").symlink_to(out)
    (root / "link_in").symlink_to(root / "src")
    (root / "link_deep").symlink_to(root / "src" / "deep")
    monkeypatch.setenv("HOME", str(home))
    return {"root": root, "out": out, "up": base, "home": home, "data": data}


def _fill(text: str, tree: dict[str, Path]) -> str:
    for key in ("out", "up", "home", "data"):
        text = text.replace("{" + key + "}", str(tree[key]))
    return text


@pytest.mark.parametrize(("command", "outside", "bash"), TABLE, ids=[row[0][:40] for row in TABLE])
def test_table(tree: dict[str, Path], command: str, outside: list[str], bash: list[tuple[str, str]]) -> None:
    check_row(tree, command, outside, bash)


def check_row(tree: dict[str, Path], command: str, outside: list[str], bash: list[tuple[str, str]]) -> None:
    """A row of a table: the requests ``command`` raises are exactly ``outside`` and ``bash``."""
    root = tree["root"]
    requests = permission_requests(_fill(command, tree), root, root, [tree["data"] / "tool-output"])
    expected_bash = [(_fill(p, tree), _fill(literal(p) if a == "=" else a, tree)) for p, a in bash]
    # ``protected`` asks (jobs for later, git's own files) are test_shell_protected.py's
    got = [(r.permission, r.patterns, r.always) for r in requests if r.permission != "protected"]
    outside = [_fill(o, tree) for o in outside]
    want = [("external_directory", outside, [_outside_always(o) for o in outside])] if outside else []
    want.append(("bash", _unique([p for p, _ in expected_bash]), _unique([a for _, a in expected_bash])))
    assert got == want


def _outside_always(pattern: str) -> str:
    """The "always" pattern of an outside pattern in a table: a folder (``/dir/*``) is approved as
    that folder, the text of a value only known at run time (``$HOME/*``) as that text only."""
    if pattern.startswith("/") and pattern.endswith("/*"):
        return f"{literal(pattern[:-2])}/*"
    return literal(pattern)


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def test_a_glob_matching_too_many_paths_is_asked_as_reaching_anywhere(tree: dict[str, Path]) -> None:
    folder = tree["root"] / "many"
    folder.mkdir()
    for index in range(MAX_MATCHES + 1):
        (folder / f"f{index}").touch()
    asked = f"{UNCHECKED} many/f*"
    requests = permission_requests("rm many/f*", tree["root"], tree["root"])
    assert [(r.permission, r.patterns, r.always) for r in requests] == [
        ("external_directory", [asked], [literal(asked)]),
        ("bash", ["rm many/f*"], ["rm *"]),
        ("protected", [asked], [literal(asked)]),
    ]
    (folder / "f0").unlink()  # as many as are checked
    assert [r.permission for r in permission_requests("rm many/f*", tree["root"], tree["root"])] == ["bash"]


@pytest.mark.parametrize(
    ("link", "command"),
    [
        ("_up", "cat [A-z]up/x"),  # [A-z] holds _, which [a-z] (the pattern in lower case) does not
        ("[ab]up", 'cat "["ab]up/x'),  # a quoted [ is no bracket
        ("up", "cat [[:alpha:]]p/x"),
        ("up", "cd u* && cat x"),  # cd stayed where the glob starts
    ],
)
def test_a_glob_reaches_outside_as_bash_matches_it(tree: dict[str, Path], link: str, command: str) -> None:
    (tree["root"] / link).symlink_to(tree["out"])
    requests = permission_requests(command, tree["root"], tree["root"])
    assert requests[0].patterns == [f"{tree['out']}/*"], command


def test_the_globs_of_one_command_share_what_they_may_look_at(tree: dict[str, Path]) -> None:
    # 100 globs over a 10,000-file folder took 14 s: each was bounded, the command was not
    folder = tree["root"] / "many"
    folder.mkdir()
    for index in range(MAX_MATCHES // 2 + 500):
        (folder / f"f{index}").touch()
    once = permission_requests("rm many/f*", tree["root"], tree["root"])
    assert [r.permission for r in once] == ["bash"]
    requests = permission_requests("rm many/f* many/f* many/f* many/f*", tree["root"], tree["root"])
    assert requests[0].patterns == [f"{UNCHECKED} many/f*"]


def test_cd_to_a_glob_goes_where_bash_goes(tree: dict[str, Path]) -> None:
    (tree["root"] / "scripts").mkdir()
    (tree["root"] / "scripts.md").touch()
    # two matches: bash's cd fails and the shell stays (it went into scripts/, where link_out is not)
    requests = permission_requests("cd sc* ; cat link_out/x", tree["root"], tree["root"])
    assert requests[0].patterns == [f"{tree['out']}/*"]
    # one match: there (src/deep is in the workspace)
    requests = permission_requests("cd s*c && cat deep/x", tree["root"], tree["root"])
    assert [r.permission for r in requests] == ["bash"]
    # a bracket expression bash may read otherwise (quoted): where it goes is unknown
    requests = permission_requests("cd [s]rc && cat deep/x", tree["root"], tree["root"])
    assert requests[0].patterns == ["[s]rc/deep/x"]


def test_symlinks_past_those_resolved_are_asked_as_reaching_anywhere(tree: dict[str, Path]) -> None:
    # 2,000 links to their own folder made loops/*/* 4 million paths, each resolved (minutes)
    loops = tree["root"] / "loops"
    loops.mkdir()
    for index in range(MAX_LINKS + 1):
        (loops / f"l{index}").symlink_to(".")
    requests = permission_requests("ls loops/*/*", tree["root"], tree["root"])
    assert requests[0].patterns == [f"{UNCHECKED} loops/*/*"]


def test_working_directory_outside_the_workspace_is_outside(tree: dict[str, Path]) -> None:
    requests = permission_requests("ls", tree["out"], tree["root"])
    assert [(r.permission, r.patterns) for r in requests] == [
        ("external_directory", [f"{tree['out']}/*"]),
        ("bash", ["ls"]),
    ]


def test_cdpath_from_the_environment_makes_cd_to_a_name_unknown(
    tree: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CDPATH", str(tree["out"]))
    requests = permission_requests("cd src && rm x", tree["root"], tree["root"])
    assert requests[0].patterns == ["$CDPATH/src", "$CDPATH/src/x"]
    assert [r.permission for r in permission_requests("cd ./src", tree["root"], tree["root"])] == ["bash"]


def test_relative_paths_follow_the_working_directory(tree: dict[str, Path]) -> None:
    requests = permission_requests("cat ../ws/src/a.py", tree["root"] / "src", tree["root"])
    assert [r.permission for r in requests] == ["bash"]  # ../ws/src from src is back inside
    requests = permission_requests("cat ../../x", tree["root"] / "src", tree["root"])
    assert requests[0].patterns == [f"{tree['up']}/*"]


def test_nesting_too_deep_is_treated_as_unknowable(tree: dict[str, Path]) -> None:
    command = "echo hi"
    for _ in range(12):
        command = f"eval {_quote(command)}"
    requests = permission_requests(command, tree["root"], tree["root"])
    assert requests[0].permission == "external_directory"
    assert requests[-1].always[-1] == requests[-1].patterns[-1]  # exact approval only


@pytest.mark.parametrize("depth", [12, 800])
def test_expansions_nested_too_deep_are_asked_exactly(tmp_path: Path, depth: int) -> None:
    # Each expansion found in text the grammar left as a word is parsed again: deeper than a
    # nested script may go, the command is asked exactly (and 800 levels end no RecursionError).
    command = "echo " + "${x#" * depth + "${a[i]}" + "}" * depth
    patterns = [p for r in permission_requests(command, tmp_path, tmp_path) for p in r.patterns]
    assert any(p.startswith("(nested too deep) ${x#") for p in patterns)


def test_substitutions_nested_too_deep_leave_the_commands_beside_them_analyzed(tmp_path: Path) -> None:
    # 400 levels ended in a RecursionError (the call failed as a fault); cutting the whole walk
    # there would have lost the hook written and the folder removed beside them.
    deep = "echo " + "$(echo " * 400 + "x" + ")" * 400
    command = f"{deep}; echo x > .git/hooks/pre-commit; rm -rf ~/x"
    asked = {r.permission: r.patterns for r in permission_requests(command, tmp_path, tmp_path)}
    assert "rm -rf ~/x" in asked["bash"] and f"{Path.home()}/*" in asked["external_directory"]
    assert ".git/hooks/pre-commit" in asked["protected"]
    for kind in ("bash", "protected"):  # what is too deep may change anything
        assert any(p.startswith("(nested too deep) ") and "$(echo $(echo" in p for p in asked[kind])


def test_an_ansi_c_string_is_decoded_as_bash_decodes_it(tmp_path: Path) -> None:
    # $'\x' (no hex digits) raised a UnicodeDecodeError: the call failed as a fault in lspilot.
    # Bash keeps it as written, a file named \x.
    [outside, run] = permission_requests("rm $'\\x' /tmp/y", tmp_path, tmp_path)
    assert (outside.permission, outside.patterns) == ("external_directory", ["/tmp/*"])
    assert run.patterns == ["rm '\\x' /tmp/y"]
    # Python's unicode_escape read \N{...} (bash keeps it) and did not know \e, \cA or \?
    for body, value in [
        ("\\N{DIGIT ONE}", "\\N{DIGIT ONE}"),
        ("\\e", "\x1b"),
        ("\\cA", "\x01"),
        ("-\\?", "-?"),
        ("\\c?", "\x7f"),
        ("\\c\\\\x", "\x1cx"),  # \c takes \\ whole: a hidden "/" was read as "\\x2f"
    ]:
        shown = subprocess.run(
            ["bash", "-c", f"printf %s $'{body}'"], capture_output=True, text=True, check=True
        )
        assert shown.stdout == value
        assert analyze(f"c1 $'{body}'", tmp_path, tmp_path).commands[0][0] == f"c1 {shlex.quote(value)}"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


@pytest.mark.parametrize(
    ("words", "count"),
    [
        (["git", "checkout", "main"], 2),
        (["npm", "run", "dev", "--port", "1"], 3),
        (["docker", "compose", "up", "-d"], 3),
        (["kubectl", "rollout", "restart", "x"], 3),
        (["uv", "run", "python", "-m", "pytest"], 5),
        (["unknown-tool", "a", "b"], 1),
        (["git", "--version"], None),
        (["git", None], None),
        ([None, "x"], None),
        (["git"], 1),
    ],
)
def test_arity(words: list[str | None], count: int | None) -> None:
    assert always_prefix(words) == count


def test_options_are_read_like_getopt() -> None:
    parsed = parse_options(
        ["-xzfarchive.tgz", "-C", "out", "--file=b", "--", "-rf", "x"], frozenset({"-f", "-C", "--file"})
    )
    assert parsed.values == [("-f", 0, "archive.tgz"), ("-C", 2, None), ("--file", 3, "b")]
    assert parsed.operands == [5, 6]
    assert {"-x", "-z", "-f", "-C", "--file"} <= parsed.flags


@pytest.mark.parametrize(
    "text",
    [
        "{.,.}./x",
        ".{.,}/x",
        "a{b,c}d{e,f}",
        "{{a,b},c}",
        "{a}{b,c}",
        "{x,{a,b}c",
        "{a,b}{",
        "x{,}y",
        "{1..3}{a,b}",
        "{5..1..2}",
        "{01..3}",
        "{a..e..2}",
        "{A..E}",
        "{...0}",
        "{a..1}",
        "}{",
    ],
)
def test_brace_expansion_matches_bash(text: str) -> None:
    bash = subprocess.run(
        ["bash", "-c", f"printf '%s\\n' {text}"], check=True, capture_output=True, text=True, timeout=10
    )
    assert braces(text) == bash.stdout.splitlines()


def test_brace_expansion_gives_up_beyond_the_limit() -> None:
    assert braces("{1..64}") is not None and len(braces("{1..64}") or []) == MAX_WORDS
    assert braces("{1..65}") is None and braces("{a,b}{1..40}") is None


def test_optional_option_values_are_only_attached() -> None:
    optional = frozenset({"-i", "-l", "--replace", "--eof"})
    parsed = parse_options(["-l2", "--replace=X", "--eof", "-i", "rm", "{}"], frozenset(), True, optional)
    assert parsed.values == [("-l", 0, "2"), ("--replace", 1, "X")] and parsed.operands == [4, 5]


def test_options_of_several_letters_after_one_dash_and_of_several_words() -> None:
    takes = frozenset({"-ex", "-e", "-L", "-TT"})
    parsed = parse_options(
        ["-ex", "run", "-TT", "x", "-ex=bt", "-L", "n", "1,2", "prog"], takes, spans={"-L": 2}
    )
    assert parsed.values == [("-ex", 1, None), ("-TT", 3, None), ("-ex", 4, "bt"), ("-L", 6, None)]
    assert parsed.operands == [8]
    assert parse_options(["-nx", "prog"], frozenset({"-x"}), long_only=True).operands == [1]
