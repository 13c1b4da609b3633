"""FileText: edits in ``\\n`` body offsets land in the raw text without touching other line endings."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tools._match import Replacement
from tools._text import FileText, as_lines, decode

lines = st.lists(
    st.tuples(st.text(alphabet="ab ", max_size=4), st.sampled_from(["\n", "\r\n", "\r", ""])), max_size=8
)
raw_texts = st.tuples(st.sampled_from(["", "\ufeff"]), lines.map(lambda ls: "".join(a + b for a, b in ls)))


@settings(max_examples=400, deadline=None)
@given(raw=raw_texts, data=st.data(), new=st.text(alphabet="xy\n\r", max_size=10))
def test_replacement_changes_only_its_span(raw: tuple[str, str], data: st.DataObject, new: str) -> None:
    text = FileText(raw[0] + raw[1])
    body = text.body
    start = data.draw(st.integers(0, len(body)))
    end = data.draw(st.integers(start, len(body)))
    before = text.raw
    text.replace([Replacement(start, end, body[start:end])])  # the same text back changes no byte
    assert text.raw == before
    text.replace([Replacement(start, end, new)])
    # a lone \r in new ends a line of its own, also before the file's \n (x\r + \n is no \r\n)
    assert as_lines(text.raw.removeprefix(text.bom)) == body[:start] + as_lines(new) + body[end:]
    assert text.raw.startswith(raw[0])


def test_decode_round_trips_every_encoding_it_picks() -> None:
    # the last three start with a BOM their bytes do not fit (read as Latin-1; they raised
    # UnicodeDecodeError, which failed read and every edit tool)
    for data in (
        b"\xef\xbb\xbfa\r\n",
        b"\xff\xfea\x00\n\x00",
        "é\n".encode("latin-1"),
        "é\n".encode(),
        b"\xef\xbb\xbfcaf\xe9\n",
        b"\xff\xfea\x00b\x00c",
        b"\xff\xfea\x00\x00\xd8",
    ):
        text, encoding = decode(data)
        assert text.encode(encoding) == data
