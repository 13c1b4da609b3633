"""Web pages as the model reads them: HTML to markdown (markdownify) or to plain text (a small
extractor on the stdlib's parser), scripts, styles and embeds dropped. Used by ``webfetch``."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

from markdownify import ATX, MarkdownConverter

#: Elements whose content is never part of the readable page.
DROPPED = {"script", "style", "noscript", "iframe", "object", "template", "svg", "canvas"}


def _drop(self: MarkdownConverter, el: Any, text: str, parent_tags: set[str]) -> str:
    del self, el, text, parent_tags
    return ""


class _Markdown(MarkdownConverter):
    convert_noscript = convert_iframe = convert_object = convert_embed = _drop
    convert_template = convert_svg = convert_canvas = _drop


def html_to_markdown(html: str) -> str:
    """Readable markdown: ATX headings, links kept, scripts, styles and embeds dropped. A page
    nested deeper than markdownify's recursion goes (~400 ``<div>``, or ~500 unclosed ``<p>``,
    ``<li>`` or ``<td>`` of an old page) is plain text instead, saying so."""
    try:
        markdown = _Markdown(heading_style=ATX, bullets="-", escape_underscores=False).convert(html)
    except RecursionError:
        note = "(The page nests too deeply to be made markdown; here it is as plain text.)"
        return f"{note}\n\n{html_to_text(html)}"
    return re.sub(r"\n{3,}", "\n\n", markdown).strip()


class _TextExtractor(HTMLParser):
    #: Blocks separated by a blank line, and blocks that only start a new line.
    PARAGRAPHS = {
        *("address", "article", "aside", "blockquote", "dl", "figure", "footer", "form", "h1", "h2"),
        *("h3", "h4", "h5", "h6", "header", "hr", "main", "nav", "ol", "p", "pre", "section", "table"),
        *("title", "ul"),
    }
    LINES = {"br", "dd", "div", "dt", "figcaption", "li", "tr"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping: list[str] = []
        self.pre = 0
        self.newlines = 0  # how many newlines the text ends with

    def _break(self, lines: int) -> None:
        if self.parts and self.newlines < lines:
            self.parts.append("\n" * (lines - self.newlines))
            self.newlines = lines

    def _block(self, tag: str) -> None:
        if tag in self.PARAGRAPHS:
            self._break(2)
        elif tag in self.LINES:
            self._break(1)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.skipping or tag in DROPPED:
            if tag in DROPPED:
                self.skipping.append(tag)
            return
        self._block(tag)
        if tag == "pre":
            self.pre += 1
        elif tag in ("td", "th") and self.parts and not self.newlines:
            self.parts.append(" | ")

    def handle_endtag(self, tag: str) -> None:
        if self.skipping:
            if tag == self.skipping[-1]:
                self.skipping.pop()
            return
        self._block(tag)
        if tag == "pre":
            self.pre = max(0, self.pre - 1)

    def handle_data(self, data: str) -> None:
        if self.skipping:
            return
        if not self.pre:
            data = re.sub(r"\s+", " ", data)
            if self.newlines or not self.parts:
                data = data.lstrip()
        if data:
            self.parts.append(data)
            self.newlines = len(data) - len(data.rstrip("\n"))


def html_to_text(html: str) -> str:
    """Plain text: no tags, no scripts or styles, one line per block, runs of blank lines collapsed."""
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    lines = [line.rstrip() for line in "".join(parser.parts).split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
