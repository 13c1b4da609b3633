"""The lsp tool and the read rules: files read denies are refused, their results left out and
counted, and hovers on names defined there withheld (against basedpyright on the Python fixture)."""

from __future__ import annotations

from tests.conftest import position
from tests.tools.conftest import MakeHarness
from tests.tools.test_lsp_tool import at, error, lsp
from tools import Rule


async def test_files_the_read_rules_deny_are_not_shown(lsp_harness: MakeHarness) -> None:
    # The lsp tool only asked "lsp": a file read denies showed its outline, and its lines came
    # with references, symbols and call sites.
    h = lsp_harness("py_project")
    h.env.permissions.rules.append(Rule("read", "pkg/calc.py", "deny"))
    denied = await error(h, operation="documentSymbol", filePath="pkg/calc.py")
    assert denied.startswith("Permission denied: read pkg/calc.py")
    text, meta = await lsp(h, operation="findReferences", filePath="app.py", symbol="total_area")
    assert "pkg/calc.py" not in text and "def total_area" not in text
    assert text.startswith("2 references to total_area at app.py:1:32 in 1 file:")
    assert text.endswith("\n\n(2 results in files the read rules deny were left out.)")
    assert meta["skipped"] == 2 and {loc["path"] for loc in meta["locations"]} == {"app.py"}
    text, _ = await lsp(h, operation="workspaceSymbol", query="total")
    assert "total_area" not in text and "total_volume (function) pkg/geometry.py:35:5" in text
    text, _ = await lsp(h, operation="outgoingCalls", filePath="app.py", symbol="main")
    assert "pkg/calc.py" not in text and "3 callees in 2 files:" in text
    # Declared in the denied file: not "no function or method" there, and the line is not described.
    text, meta = await lsp(h, operation="incomingCalls", filePath="app.py", symbol="total_area")
    assert "The function or method at total_area at app.py:1:32 is in a file the read rules deny" in text
    assert "Line 1 of app.py" not in text and meta["skipped"] == 1
    missing = await error(h, operation="incomingCalls", symbol="total_area")
    assert "that may be shown" in missing and "read rules deny" in missing
    text, meta = await lsp(h, operation="diagnostics")
    assert meta["checked"] == 5 and meta["skipped"] == 1  # the note said "1 result ... left out"
    assert text.endswith("\n\n(1 file the read rules deny was not checked.)")


async def test_hover_on_a_name_defined_in_a_denied_file_is_withheld(lsp_harness: MakeHarness) -> None:
    # Hovering total_area in app.py showed the server's text from pkg/calc.py, which read denies:
    # its signature (and its docstring, or a constant's value, had it one).
    h = lsp_harness("py_project")
    root = h.root
    h.env.permissions.rules.append(Rule("read", "pkg/calc.py", "deny"))
    calc = root / "pkg/calc.py"
    docstring = '    """Secret sauce."""\n    return sum('
    calc.write_text(calc.read_text().replace("    return sum(", docstring, 1))
    text, meta = await lsp(h, operation="hover", filePath="app.py", symbol="total_area")
    assert "Secret sauce" not in text and "def total_area" not in text and "shapes:" not in text
    assert text.splitlines()[1] == (
        f"No hover shown for total_area at {at(root, 'app.py', 'total_area')}: it is defined in a file "
        "the read rules deny, and the lsp tool shows no more than read would (the server's text would "
        "show its signature and docs from there)."
    )
    assert meta["withheld"] and meta["count"] == 0
    # The module itself (its docstring would show) at a position, and a name used in a call.
    module = position(root / "app.py", "calc")
    text, _ = await lsp(
        h, operation="hover", filePath="app.py", line=module.line + 1, character=module.character + 1
    )
    withheld = f"No hover shown for calc at {at(root, 'app.py', 'calc')}: it is defined in a file"
    assert text.startswith(withheld)
    call = position(root / "app.py", "total_area", nth=1)
    text, _ = await lsp(
        h, operation="hover", filePath="app.py", line=call.line + 1, character=call.character + 1
    )
    assert "def total_area" not in text and "read rules deny" in text
    # Names defined in files read allows are shown as before.
    text, meta = await lsp(h, operation="hover", filePath="app.py", symbol="Circle")
    assert "class Circle" in text and "withheld" not in meta
    text, _ = await lsp(h, operation="hover", filePath="app.py", symbol="main")
    assert "def main() -> None" in text


async def test_a_line_whose_first_name_is_defined_in_a_denied_file(lsp_harness: MakeHarness) -> None:
    # With only a line, a name the server answered for only in denied files was skipped as if
    # unknown, and its left-out result was counted under the next name's answer (len's here).
    h = lsp_harness("py_project")
    h.env.permissions.rules.append(Rule("read", "pkg/calc.py", "deny"))
    (h.root / "uses.py").write_text("from pkg.calc import total_area\n\ntotal_area([]) + len([])\n")
    text, meta = await lsp(h, operation="goToDefinition", filePath="uses.py", line=3)
    assert meta["target"]["name"] == "total_area" and meta["count"] == 0 and meta["skipped"] == 1
    assert text.startswith("No definitions of total_area at uses.py:3:1.") and "Line 3" not in text


SECRETS = (
    '\n\nTOKEN: Final = "s3cr3t"\nPORT: Final = 4711\n\n\n'
    'class Base:\n    def run(self) -> None:\n        """Uses the hidden backdoor."""\n'
)
USES = """from pkg.calc import PORT, TOKEN, Base
from pkg.shapes import Shape

value = TOKEN
port = PORT
mine = "visible"


class Child(Base):
    def run(self) -> None:
        pass


class Mine(Shape):
    def area(self) -> float:
        \"\"\"The area_of this one,
        in square units.\"\"\"
        return 1.0
"""


async def test_a_hover_does_not_quote_values_and_docs_inferred_from_a_denied_file(
    lsp_harness: MakeHarness,
) -> None:
    # value = TOKEN showed `value: Literal['s3cr3t']`, TOKEN being a Final constant in a file
    # read denies, and an override without a docstring showed the denied base method's.
    h = lsp_harness("py_project")
    h.env.permissions.rules.append(Rule("read", "pkg/calc.py", "deny"))
    calc = h.root / "pkg/calc.py"
    calc.write_text("from typing import Final\n" + calc.read_text() + SECRETS)
    (h.root / "uses.py").write_text(USES)
    for name, line in (("value", 4), ("port", 5)):
        text, meta = await lsp(h, operation="hover", filePath="uses.py", symbol=name, line=line)
        assert f"(variable) {name}: Literal[…]" in text and meta["unquoted"]
        assert "s3cr3t" not in text and "4711" not in text and text.endswith("read rules deny some files.)")
    text, meta = await lsp(h, operation="hover", filePath="uses.py", symbol="Child.run")
    assert "backdoor" not in text and "def run(self: Self@Child) -> None" in text and meta["unquoted"]
    # What the file (or the one the name is defined in) says is shown.
    text, meta = await lsp(h, operation="hover", filePath="uses.py", symbol="mine", line=6)
    assert "(variable) mine: Literal['visible']" in text and "unquoted" not in meta
    text, meta = await lsp(h, operation="hover", filePath="uses.py", symbol="Mine.area")
    assert "area\\_of this one" in text and "in square units" in text and "unquoted" not in meta


VAULT = """from typing import Final, TypedDict

from pkg.shapes import Circle

API_KEY: Final = "s3cr3t"


class Vault(TypedDict):
    master_password: str


def open_vault(passphrase: str) -> Vault:
    return {"master_password": passphrase}


def ring() -> Circle:
    return Circle(1.0)
"""
OPENS = """from pkg.vault import API_KEY, open_vault, ring

v = open_vault("x")
key: int = API_KEY
open_vault()
v["nope"]
c = ring()
"""


async def test_types_and_messages_inferred_from_a_denied_file_are_not_quoted(
    lsp_harness: MakeHarness,
) -> None:
    # Hovering v showed `v: Vault`, the class a denied function returns; the diagnostics of the
    # file using it showed the denied constant's value ("Literal['s3cr3t']"), the parameter a
    # call missed ("passphrase") and the TypedDict's name.
    h = lsp_harness("py_project")
    h.env.permissions.rules.append(Rule("read", "pkg/vault.py", "deny"))
    (h.root / "pkg/vault.py").write_text(VAULT)
    (h.root / "uses.py").write_text(OPENS)
    text, meta = await lsp(h, operation="hover", filePath="uses.py", symbol="v", line=3)
    assert "(variable) v: …" in text and "Vault" not in text and meta["unquoted"]
    # A class the denied file names but a file read shows declares is named.
    text, meta = await lsp(h, operation="hover", filePath="uses.py", symbol="c", line=7)
    assert "(variable) c: Circle" in text and "unquoted" not in meta
    text, meta = await lsp(h, operation="diagnostics", filePath="uses.py")
    messages = [" ".join(d["message"].split()) for d in meta["diagnostics"]]
    assert messages == [
        'Type "Literal[…]" is not assignable to declared type "int" "Literal[…]" is not assignable to "int"',
        'Argument missing for parameter "…"',
        'Could not access item in TypedDict "nope" is not a defined key in "…"',
    ]
    assert "s3cr3t" not in text and "passphrase" not in text and "Vault" not in text
    assert text.endswith("were left out of the messages.)") and meta["unquoted"]
    # What the file itself writes (open_vault, "nope", int) is quoted as before, and nothing is
    # cut without a read rule that denies a file.
    h.env.permissions.rules.pop()
    text, meta = await lsp(h, operation="diagnostics", filePath="uses.py")
    assert "Literal['s3cr3t']" in text and '"passphrase"' in text and "unquoted" not in meta
    text, _ = await lsp(h, operation="hover", filePath="uses.py", symbol="v", line=3)
    assert "(variable) v: Vault" in text
