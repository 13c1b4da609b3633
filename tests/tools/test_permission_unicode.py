"""Permission rules meet file names in either Unicode form: a rule typed as ``café/*`` (NFC)
applies to a folder macOS named ``cafe`` + U+0301 (NFD), and the other way round, while the tools
still show and open each file by its name on disk. Real files, the real tools, a scripted human."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from tools import Rule
from tools.permission import wildcard_match

from .conftest import Harness, make_harness

pytestmark = pytest.mark.timeout(30)

NFC = unicodedata.normalize("NFC", "café")
NFD = unicodedata.normalize("NFD", "café")
#: (how the folder is named on disk, how the rule names it)
FORMS = [pytest.param(NFD, NFC, id="disk-nfd-rule-nfc"), pytest.param(NFC, NFD, id="disk-nfc-rule-nfd")]


def test_the_two_forms_differ() -> None:
    assert NFC != NFD and len(NFD) == len(NFC) + 1


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        (f"{NFD}/secret.txt", f"{NFC}/*"),
        (f"{NFC}/secret.txt", f"{NFD}/*"),
        (f"{NFD}/secret.txt", f"{NFC}/secret.txt"),  # no wildcard: compared as text
        (f"{NFD}/secret.txt", "caf?/*"),  # ? is one character as the user sees it
        (f"{NFD}/s*.txt", f"{NFC}/s\\*.txt"),
    ],
)
def test_wildcard_match_compares_the_composed_forms(text: str, pattern: str) -> None:
    assert wildcard_match(text, pattern)


def _workspace(tmp_path: Path, disk: str, rules: list[Rule]) -> tuple[Harness, str]:
    """A workspace with ``DISK/secret.txt`` (named in the form ``disk``) and ``notes.txt``, both
    holding ``TOKEN``; returns the harness and the secret file's name as it is on disk."""
    root = tmp_path / "ws"
    (root / disk).mkdir(parents=True)
    (root / disk / "secret.txt").write_text("TOKEN=hunter2\n")
    (root / "notes.txt").write_text("TOKEN=none\n")
    assert [p.name for p in root.iterdir() if p.is_dir()] == [disk]  # the file system kept the form
    return make_harness(root, tmp_path / "data", rules), f"{disk}/secret.txt"


@pytest.mark.parametrize(("disk", "rule"), FORMS)
async def test_a_read_deny_applies_whatever_the_form(tmp_path: Path, disk: str, rule: str) -> None:
    h, secret = _workspace(tmp_path, disk, [Rule("read", f"{rule}/*", "deny")])
    outcome = await h.call("read", {"filePath": secret})
    assert outcome.error is not None and outcome.error.startswith(f"Permission denied: read {secret}")
    assert "hunter2" not in outcome.error and not h.human.asked


@pytest.mark.parametrize(("disk", "rule"), FORMS)
async def test_an_edit_deny_applies_whatever_the_form(tmp_path: Path, disk: str, rule: str) -> None:
    rules = [Rule("edit", "*", "allow"), Rule("edit", f"{rule}/*", "deny")]
    h, secret = _workspace(tmp_path, disk, rules)
    await h.ok("read", {"filePath": secret})
    edit = await h.call("edit", {"filePath": secret, "oldString": "hunter2", "newString": "pwned"})
    assert edit.error is not None and edit.error.startswith(f"Permission denied: edit {secret}")
    write = await h.call("write", {"filePath": f"{disk}/new.txt", "content": "x\n"})
    assert write.error is not None and write.error.startswith(f"Permission denied: edit {disk}/new.txt")
    assert (h.root / secret).read_text() == "TOKEN=hunter2\n" and not (h.root / disk / "new.txt").exists()
    await h.ok("write", {"filePath": "new.txt", "content": "x\n"})  # edits elsewhere are allowed


@pytest.mark.parametrize(("disk", "rule"), FORMS)
async def test_searches_skip_a_denied_file_whatever_the_form(tmp_path: Path, disk: str, rule: str) -> None:
    h, _ = _workspace(tmp_path, disk, [Rule("read", f"{rule}/*", "deny")])
    found = await h.ok("grep", {"pattern": "TOKEN"})
    assert found.result is not None and "hunter2" not in found.result.output
    assert "notes.txt:\n  line 1: TOKEN=none" in found.result.output
    assert "(1 file with matches was skipped: read rules deny it.)" in found.result.output
    listed = await h.ok("glob", {"pattern": "**/*.txt"})
    assert listed.result is not None
    assert listed.result.output == "notes.txt\n\n(1 matching file was skipped: read rules deny it.)"
    assert not h.human.asked


async def test_a_file_not_denied_is_shown_and_opened_by_its_name_on_disk(tmp_path: Path) -> None:
    h, _ = _workspace(tmp_path, NFD, [Rule("read", f"{NFC}/other*", "deny")])
    listed = await h.ok("glob", {"pattern": "**/secret.txt"})
    assert listed.result is not None and listed.result.output == f"{NFD}/secret.txt"
    read = await h.ok("read", {"filePath": listed.result.output})
    assert read.result is not None and "TOKEN=hunter2" in read.result.output
