"""Text of HTML (BeautifulSoup) and Markdown (markdown-it-py) documents, markup stripped.

Both come out in the same light shape as the PDF pages' layout: paragraphs separated by a
blank line, headings as `# Heading`, list items as `- item`, table rows as `cell | cell`;
links keep their text (not their URL), images their alternative text. Scripts, styles and
other content that is not text are dropped. Both walks are iterative: depth is no hazard.
Size is: both run in the bounded child process of `isolated`, which counts elements first.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from typing import Any

from maestrale.libraries.ingest.refused import DocumentRefused

_SPACE = re.compile(r"\s+")
# Elements whose content is not text a reader sees.
_DROPPED = frozenset(
    {
        "script",
        "style",
        "noscript",
        "template",
        "head",
        "svg",
        "math",
        "canvas",
        "iframe",
        "object",
        "embed",
        "select",
    }
)
# Elements that stand as blocks of their own (a blank line before and after).
_BLOCKS = frozenset(
    {
        "p",
        "div",
        "section",
        "article",
        "header",
        "footer",
        "main",
        "nav",
        "aside",
        "ul",
        "ol",
        "dl",
        "table",
        "blockquote",
        "pre",
        "figure",
        "figcaption",
        "form",
        "fieldset",
        "address",
        "details",
        "summary",
        "hr",
        "body",
        "caption",
    }
)
# Elements that start a line of their own.
_LINES = frozenset({"li", "tr", "dt", "dd", "br", "option", "legend"})
_HEADINGS = {f"h{level}": level for level in range(1, 7)}
_CELLS = frozenset({"td", "th"})
_VERBATIM = frozenset({"pre", "textarea", "listing", "plaintext", "xmp"})


class _Writer:
    """Text assembled from pieces with pending breaks: a break is written only before the next
    text, so that empty elements leave no blank lines and nothing trails."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.pending = 0  # newlines owed before the next text (0, 1 or 2)
        self.prefix = ""  # written after the break, before the next text (list marker, #)
        self.at_line_start = True

    def brk(self, newlines: int) -> None:
        if self.parts:
            self.pending = max(self.pending, newlines)
        self.at_line_start = True

    def mark(self, prefix: str) -> None:
        """Write `prefix` before the next text (`""`: forget an unused one)."""
        self.prefix = prefix

    def separate(self, separator: str) -> None:
        """A separator between cells of a row (none before the first)."""
        if self.parts and not self.at_line_start and not self.pending:
            self.parts[-1] = self.parts[-1].rstrip(" ")
            self.parts.append(separator)
            self.at_line_start = True

    def write(self, text: str, *, verbatim: bool = False) -> None:
        if not verbatim:
            text = _SPACE.sub(" ", text)
            after_space = bool(self.parts) and self.parts[-1].endswith(" ")
            if self.at_line_start or self.pending or after_space:
                text = text.lstrip(" ")
        if not text:
            return
        if self.pending:
            if self.parts:
                self.parts[-1] = self.parts[-1].rstrip(" ")
            self.parts.append("\n" * self.pending)
            self.pending = 0
        if self.prefix:
            self.parts.append(self.prefix)
            self.prefix = ""
        self.parts.append(text)
        self.at_line_start = text.endswith("\n")

    def text(self) -> str:
        return "".join(self.parts).strip()


# ---------------------------------------------------------------------------------------- HTML


def _soup(data: bytes) -> Any:
    from bs4 import BeautifulSoup

    # lxml when installed: faster, and bounded in depth by libxml2.
    parser = "lxml" if importlib.util.find_spec("lxml") is not None else "html.parser"
    try:
        return BeautifulSoup(data, parser)
    except MemoryError:
        raise
    except Exception as exc:  # a parser's internal failure on hostile input
        raise DocumentRefused(f"the HTML cannot be parsed: {type(exc).__name__}: {exc}") from exc


def _events(root: Any) -> Iterator[tuple[Any, bool]]:
    """(node, entering) in document order, without recursion."""
    from bs4.element import Tag

    stack: list[tuple[Any, bool]] = [(root, True)]
    while stack:
        node, entering = stack.pop()
        yield node, entering
        if entering and isinstance(node, Tag) and node.name not in _DROPPED:
            stack.append((node, False))
            stack.extend((child, True) for child in reversed(node.contents))


def html_text(data: bytes) -> str:
    """The visible text of an HTML document (its encoding found from its bytes or meta tag)."""
    from bs4.element import NavigableString, PreformattedString, Tag

    soup = _soup(data)
    out = _Writer()
    verbatim = 0
    for node, entering in _events(soup):
        if isinstance(node, Tag):
            name = node.name
            if name in _DROPPED:
                continue
            if name in _VERBATIM:
                verbatim += 1 if entering else -1
            if name in _HEADINGS:
                out.brk(2)
                out.mark("#" * _HEADINGS[name] + " " if entering else "")
            elif name in _BLOCKS:
                out.brk(2)
            elif name in _LINES:
                out.brk(1)
                if name == "li":
                    out.mark("- " if entering else "")
            elif name in _CELLS and entering:
                out.separate(" | ")
            elif name == "img" and entering:
                alt = node.get("alt")
                if isinstance(alt, str) and alt.strip():
                    out.write(f" {alt} ")
        elif entering and isinstance(node, NavigableString):
            if isinstance(node, PreformattedString):  # comments, CDATA, doctype, ...
                continue
            out.write(str(node), verbatim=verbatim > 0)
    return out.text()


# ------------------------------------------------------------------------------------ Markdown

_MAX_NESTING = 100
_MD_BLOCKS = frozenset({"blockquote_open", "blockquote_close", "table_open", "table_close", "hr"})


def markdown_text(source: str) -> str:
    """The text of a Markdown document (CommonMark with tables), markup stripped."""
    from markdown_it import MarkdownIt

    # Nesting deeper than this ends the parse (what follows is left out): bounded recursion.
    parser = MarkdownIt("commonmark", {"maxNesting": _MAX_NESTING}).enable("table")
    try:
        tokens = parser.parse(source)
    except MemoryError:
        raise
    except Exception as exc:  # a parser's internal failure on hostile input
        raise DocumentRefused(
            f"the Markdown cannot be parsed: {type(exc).__name__}: {exc}"
        ) from exc
    out = _Writer()
    lists = 0  # depth of the list being written: items of nested lists are not spaced out
    for token in tokens:
        kind = token.type
        if kind == "heading_open":
            out.brk(2)
            out.mark("#" * int(token.tag[1:]) + " ")
        elif kind == "paragraph_open" and not token.hidden:
            out.brk(2)
        elif kind == "heading_close":
            out.mark("")
            out.brk(2)
        elif kind in _MD_BLOCKS or (kind == "paragraph_close" and not token.hidden):
            out.brk(2)
        elif kind in ("bullet_list_open", "ordered_list_open"):
            out.brk(1 if lists else 2)
            lists += 1
        elif kind in ("bullet_list_close", "ordered_list_close"):
            lists -= 1
            out.brk(1 if lists else 2)
        elif kind == "list_item_open":
            out.brk(1)
            out.mark(f"{token.info}. " if token.info else "- ")
        elif kind == "list_item_close":
            out.mark("")
            out.brk(1)
        elif kind == "tr_open":
            out.brk(1)
        elif kind in ("th_open", "td_open"):
            out.separate(" | ")
        elif kind in ("fence", "code_block"):
            out.brk(2)
            out.write(token.content.rstrip("\n"), verbatim=True)
            out.brk(2)
        elif kind == "html_block":
            out.brk(2)
            out.write(html_text(token.content.encode()))
            out.brk(2)
        elif kind == "inline":
            _inline(out, token.children or [])
    return out.text()


def _inline(out: _Writer, children: list[Any]) -> None:
    for child in children:
        kind = child.type
        if kind in ("text", "code_inline"):
            out.write(child.content)
        elif kind == "softbreak":
            out.write(" ")
        elif kind == "hardbreak":
            out.brk(1)
        elif kind == "image":
            alt = child.content
            if alt:
                out.write(alt)
