"""The matcher cascade: which matcher places ``oldString``, what it replaces, and what it refuses."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tools._match import Content, MatchError, find


@dataclass(frozen=True)
class Case:
    name: str
    file: str
    old: str
    new: str
    matcher: str | None  # None: refused
    result: str = ""  # the file afterwards (when matched)
    error: str = ""  # part of the error (when refused)
    replace_all: bool = False


PY = "def f(x):\n    if x:\n        return 1\n    return 2\n\n\ndef g():\n    pass\n"
NESTED = "class A:\n    def f(self, x):\n        if x:\n            return 1\n        return 2\n"
HUNDRED = "".join(f"    value_{i} = compute({i})\n" for i in range(100))
BIG = (
    "class Big:\n    def run(self):\n"
    + "".join(f"        step_{i}()\n" for i in range(100))
    + "        done()\n"
)

CASES = [
    Case("exact", PY, "return 1", "return 10", "exact", PY.replace("return 1", "return 10")),
    Case(
        "trimmed lines (indentation lost, trailing spaces)",
        PY,
        "if x:  \nreturn 1",
        "if x:\n    return 100",
        "line-trimmed",
        PY.replace("    if x:\n        return 1", "    if x:\n        return 100"),
    ),
    Case(
        "indentation shifted as a block: re-indented to the file",
        PY,
        "if x:\n    return 1\nreturn 2",
        "if x:\n    return 3\nreturn 4",
        "indentation-flexible",
        PY.replace("    if x:\n        return 1\n    return 2", "    if x:\n        return 3\n    return 4"),
    ),
    Case(
        "spaces in oldString, tabs in the file",
        "def f():\n\tif a:\n\t\tgo()\n",
        "    if a:\n        go()",
        "    if a:\n        go()\n        again()",
        "indentation-flexible",
        "def f():\n\tif a:\n\t\tgo()\n\t\tagain()\n",
    ),
    Case(
        # It moved all of newString by the first line's offset: "    if x:\n    return 10".
        "oldString and newString both flattened: each line keeps its own depth",
        PY,
        "if x:\nreturn 1",
        "if x:\nreturn 10",
        "line-trimmed",
        PY.replace("        return 1", "        return 10"),
    ),
    Case(
        "flattened Python nesting, three depths",
        NESTED,
        "def f(self, x):\nif x:\nreturn 1\nreturn 2",
        "def f(self, x):\nif x:\nreturn 3\nreturn 4",
        "line-trimmed",
        NESTED.replace("return 1", "return 3").replace("return 2", "return 4"),
    ),
    Case(
        "a deeper new block under a flattened line: nested under the line above it",
        PY,
        "if x:\nreturn 1\nreturn 2",
        "if x:\n    for y in x:\n        print(y)\n    return 1\nreturn 2",
        "line-trimmed",
        PY.replace("        return 1\n", "        for y in x:\n            print(y)\n        return 1\n"),
    ),
    Case(
        "a flattened line rewritten as a deeper block: the block goes where the line was",
        PY,
        "if x:\nreturn 1\nreturn 2",
        "if x:\nfor y in x:\n    print(y)\nreturn 2",
        "line-trimmed",
        PY.replace("        return 1\n", "        for y in x:\n            print(y)\n"),
    ),
    Case(
        "a line added between two lines of one depth",
        "if a:\n    x = 1\n    y = 2\n",
        "if a:\nx = 1\ny = 2",
        "if a:\nx = 1\nz = 3\ny = 2",
        "line-trimmed",
        "if a:\n    x = 1\n    z = 3\n    y = 2\n",
    ),
    Case(
        "tabs in the file, oldString and newString flattened",
        "def f():\n\tif a:\n\t\tgo()\n\treturn 0\n",
        "if a:\ngo()\nreturn 0",
        "if a:\ngo()\nreturn 1",
        "line-trimmed",
        "def f():\n\tif a:\n\t\tgo()\n\treturn 1\n",
    ),
    Case(
        "tabs in the file, oldString flattened, newString nested with spaces",
        "def f():\n\tif a:\n\t\tgo()\n\treturn 0\n",
        "if a:\ngo()",
        "if a:\n    go()\n    if b:\n        stop()",
        "line-trimmed",
        "def f():\n\tif a:\n\t\tgo()\n\t\tif b:\n\t\t\tstop()\n\treturn 0\n",
    ),
    Case(
        # Inside the if (8 spaces) or after it (4): oldString's flat lines sit at both.
        "a flattened line added between two depths is refused",
        PY,
        "if x:\nreturn 1\nreturn 2",
        "if x:\nreturn 1\nlog()\nreturn 2",
        None,
        error="oldString matched lines 2-4 (line-trimmed), but its lines are not indented like the "
        "file's (not even shifted as a block), so the file's indentation for newString's line "
        "'log()' cannot be told; nothing was changed. Copy the lines with their indentation from "
        "read's output",
    ),
    Case(
        "a flattened block opener added among lines of two depths is refused",
        PY,
        "if x:\nreturn 1\nreturn 2",
        "if x:\nfor y in x:\n    print(y)\nreturn 1\nreturn 2",
        None,
        error="newString's line 'for y in x:' cannot be told",
    ),
    Case(
        "inner whitespace differs",
        "total = a  +  b\nprint(total)\n",
        "total = a + b",
        "total = a - b",
        "whitespace-normalized",
        "total = a - b\nprint(total)\n",
    ),
    Case(
        "escaped once too often",
        'print("hi")\nx = 1\n',
        'print(\\"hi\\")\\nx = 1',
        'print(\\"bye\\")\\nx = 2',
        "escape-normalized",
        'print("bye")\nx = 2\n',
    ),
    Case(
        "blank lines around oldString",
        "a = 1\nb = 2\nc = 3\n",
        "\n\nb = 2\n\n",
        "b = 20",
        "trimmed-boundary",
        "a = 1\nb = 20\nc = 3\n",
    ),
    Case(
        # Only the block's text went: an empty line with its indentation was left in its place.
        "a block deleted through blank-line trimming takes its lines with it",
        "class A:\n    x = 1\n\n    def f(self):\n        return 1\n\n    y = 2\n",
        "\n\n    def f(self):\n        return 1\n\n\n",
        "",
        "trimmed-boundary",
        "class A:\n    x = 1\n\n\n    y = 2\n",
    ),
    Case(
        "a deleted last line takes the line break before it",
        "a = 1\nb = 2",
        "\nb = 2\n",
        "",
        "trimmed-boundary",
        "a = 1",
    ),
    Case(
        # The blank line after it went too: the whole-line widening looked past the match's own break.
        "a fuzzy deletion of lines with their break keeps the blank line after them",
        "import os  \n\ndef main():\n    pass\n",
        "import os\n",
        "",
        "indentation-flexible",
        "\ndef main():\n    pass\n",
    ),
    Case(
        "an escaped deletion of a line with its break keeps the blank line after it",
        "x = 1\nfoo()\n\nbar()\n",
        "foo()\\n",
        "",
        "escape-normalized",
        "x = 1\n\nbar()\n",
    ),
    Case(
        "a fuzzy deletion of part of a line keeps the rest of it",
        'msg = "hi " + name  # greet\n',
        '\\"hi \\" + ',
        "",
        "escape-normalized",
        "msg = name  # greet\n",
    ),
    Case(
        # It took "return x" out of the longer line, leaving "        return x + 1\n  # why".
        "blank-line-trimmed text is never part of a longer line",
        "def f(x):\n    return x  # why\n",
        "    return x\n",
        "    return x + 1\n",
        None,
        error="oldString was not found in the file. The closest text",
    ),
    Case(
        # It put newString, indentation and blank lines included, after the file's own tabs.
        "blank lines around oldString, newString re-indented to the file's tabs",
        "class A:\n\tdef f(self):\n\t\treturn 1\n\n\nx = 1\n",
        "\n\n    return 1\n\n",
        "\n\n    if self:\n        return 2\n    return 1\n\n",
        "trimmed-boundary",
        "class A:\n\tdef f(self):\n\t\tif self:\n\t\t\treturn 2\n\t\treturn 1\n\n\nx = 1\n",
    ),
    Case(
        "anchored block, one middle line edited since",
        "def build(cfg):\n    load(cfg)\n    check(cfg)\n    save(cfg)\n    return cfg\n",
        "def build(cfg):\n    load(cfg)\n    verify(cfg)\n    save(cfg)\n    return cfg",
        "def build(cfg):\n    return cfg",
        "context-aware",
        "def build(cfg):\n    return cfg\n",
    ),
    Case(
        "anchored block, middle reworded and one line longer",
        "def run(job):\n    job.prepare(fast=True)\n    job.execute()\n    job.cleanup()\n    log('done')\n"
        "    return job.result\n",
        "def run(job):\n    job.prepare(fast=True)\n    job.execute()\n    job.clean_up()\n"
        "    return job.result",
        "def run(job):\n    return job.execute()",
        "block-anchored",
        "def run(job):\n    return job.execute()\n",
    ),
    Case(
        "ambiguous exact match",
        "x = 1\ny = 2\nx = 1\n",
        "x = 1",
        "x = 3",
        None,
        error="oldString matches 2 places, starting at lines 1, 3",
    ),
    Case(
        "ambiguous trimmed match",
        "if a:\n    go()\nif b:\n  go()\n",
        "go() ",
        "stop()",
        None,
        error="matches 2 places (matching indentation-flexible), starting at lines 2, 4",
    ),
    Case(
        "replaceAll changes every occurrence",
        "x = 1\ny = 2\nx = 1\n",
        "x = 1",
        "x = 3",
        "exact",
        "x = 3\ny = 2\nx = 3\n",
        replace_all=True,
    ),
    Case(
        "replaceAll through a fuzzy matcher",
        "if a:\n    go()\nif b:\n  go()\n",
        "go() ",
        "stop()",
        "indentation-flexible",
        "if a:\n    stop()\nif b:\n  stop()\n",
        replace_all=True,
    ),
    Case(
        "regex metacharacters are plain text",
        "pattern = r'^a.*(b|c)+$'\nother = 1\n",
        "r'^a.*(b|c)+$'",
        "r'[x]?'",
        "exact",
        "pattern = r'[x]?'\nother = 1\n",
    ),
    Case(
        "a 100-line block with shifted indentation",
        "def f():\n" + HUNDRED + "    return 0\n",
        HUNDRED.replace("    value_", "value_") + "return 0",
        "return 1",
        "indentation-flexible",
        "def f():\n    return 1\n",
    ),
    Case(
        "disproportionate span refused",
        BIG,
        "def run(self):\n    step_0()\n    step_1()\n    step_2()\n    step_3()\n    done()",
        "def run(self):\n    pass",
        None,
        error="refusing a match that much larger than oldString",
    ),
    Case(
        "weak anchors refused: the middle is something else",
        "def handler(event):\n    parse(event)\n    store(event)\n    notify(event)\n    return None\n",
        "def handler(event):\n    validate(payload)\n    enqueue(payload)\n    metrics.bump()\n"
        "    return None",
        "def handler(event):\n    return None",
        None,
        error="oldString was not found in the file. The closest text",
    ),
    Case(
        "punctuation is no anchor",
        "{\n    alpha: 1,\n    beta: 2,\n}\n",
        "{\n    gamma: 3,\n    delta: 4,\n}",
        "{}",
        None,
        error="oldString was not found",
    ),
]


def check(case: Case) -> None:
    """``case`` through ``find``: refused with its error, or matched by its matcher into its result."""
    content = Content(case.file)
    if case.matcher is None:
        with pytest.raises(MatchError) as refused:
            find(content, case.old, case.new, case.replace_all)
        assert case.error in str(refused.value)
        return
    found = find(content, case.old, case.new, case.replace_all)
    assert found.matcher == case.matcher
    text = case.file
    for rep in sorted(found.replacements, key=lambda r: r.start, reverse=True):
        text = text[: rep.start] + rep.text + text[rep.end :]
    assert text == case.result


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_cascade(case: Case) -> None:
    check(case)


def test_an_anchored_block_is_not_cut_at_an_early_last_line() -> None:
    # A handler with an early "return response" equal to its last line: block-anchored took the
    # shortest block that passed (16 of 20 lines) and left the handler's last 4 lines behind.
    lines = [
        "def handler(request):",
        *(f"    step_{i}(request, value={i})" for i in range(14)),
        "    return response",
        *(f"    late_{i}(request)" for i in range(3)),
        "    return response",
    ]
    text = "\n".join([*lines, "", "other()"]) + "\n"
    old = "\n".join([lines[0], *(line.replace("request", "req") for line in lines[1:-1]), lines[-1]])
    found = find(Content(text), old, "def handler(request):\n    return None")
    assert found.matcher == "block-anchored"
    [rep] = found.replacements
    after = text[: rep.start] + rep.text + text[rep.end :]
    assert after == "def handler(request):\n    return None\n\nother()\n"


def test_overlapping_places_are_ambiguous() -> None:
    with pytest.raises(MatchError, match="matches 2 places"):
        find(Content("aaa\n"), "aa", "b")
    with pytest.raises(MatchError, match="matches 2 places"):
        find(Content("x\nx\nx\n"), "x\nx", "y")
    assert find(Content("aaaa"), "aa", "b", replace_all=True).lines == [1, 1]


def test_not_found_shows_the_closest_region_with_line_numbers() -> None:
    file = "".join(f"line {i}\n" for i in range(1, 40)) + "def compute(a, b):\n    return a * b\n"
    with pytest.raises(MatchError) as error:
        find(Content(file), "def compute(a, c):\n    return a ** c", "x")
    message = str(error.value)
    assert "at lines 40-41:" in message
    assert "    40\tdef compute(a, b):\n    41\t    return a * b" in message


texts = st.text(alphabet="ab \n\t{}()x=", max_size=120)


@settings(max_examples=300, deadline=None)
@given(prefix=texts, needle=st.text(alphabet="abcxyz \n(){}", min_size=1, max_size=30), suffix=texts)
def test_exact_unique_substring_replaces_exactly_it(prefix: str, needle: str, suffix: str) -> None:
    file = prefix + needle + suffix
    if sum(file.startswith(needle, i) for i in range(len(file))) != 1:  # overlapping ones count
        return
    found = find(Content(file), needle, "<NEW>")
    assert found.matcher == "exact"
    [rep] = found.replacements
    assert file[: rep.start] + rep.text + file[rep.end :] == prefix + "<NEW>" + suffix
