"""The pages of search results: fetched through the SSRF-safe fetcher (`core.fetch`: every
address and redirect hop checked, bytes and time bounded), and reduced to their readable text
(BeautifulSoup with the standard library's parser, in a worker thread: a large page takes a
second of CPU that the event loop must not wait for)."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from urllib.parse import urljoin

from bs4 import BeautifulSoup, Tag
from bs4.element import NavigableString

from maestrale.core.errors import AppError
from maestrale.core.fetch import FetchPolicy, fetch_url
from maestrale.tools.web.backends import MAX_TITLE_CHARS, clean_text, web_url

_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_TEXT_TYPES = frozenset({"text/plain", "text/markdown", "text/x-markdown"})
# Elements that are not the page's reading text.
_NOISE = frozenset(
    [
        "script",
        "style",
        "noscript",
        "template",
        "svg",
        "canvas",
        "iframe",
        "object",
        "nav",
        "header",
        "footer",
        "aside",
        "form",
        "button",
        "select",
        "head",
    ]
)
# Elements that end a line of text.
_BLOCKS = frozenset(
    [
        "p",
        "div",
        "li",
        "tr",
        "br",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "pre",
        "blockquote",
        "section",
        "article",
        "dd",
        "dt",
        "figcaption",
        "table",
        "ul",
        "ol",
    ]
)
_BREAK = "\u2029"  # paragraph separator
_BLOCK_END = object()
_CODE = ("script", "style", "svg", "noscript", "template")
_CODE_OPENING = re.compile(rf"<({'|'.join(_CODE)})\b", re.I)
_CODE_CLOSING = {name: re.compile(rf"</{name}\s*>", re.I) for name in _CODE}
# The most HTML parsed (once code is cut out): the parse is the costly part (about 1 s of CPU a
# MiB of dense markup), and the model reads a few thousand characters of it.
PARSED_CHARS = 512 * 1024
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_.:-]{1,40})""", re.I)


class PageUnreadable(Exception):
    """A fetched page with no text to read (an image, a PDF, an empty page)."""


@dataclass(frozen=True, slots=True)
class Page:
    """A result's page as the model reads it."""

    url: str  # where it was found, after redirects
    text: str  # its readable text, at most the configured characters
    title: str | None
    favicon: str | None


async def fetch_page(url: str, policy: FetchPolicy, chars: int) -> Page:
    """The readable text of `url`. Raises an AppError of the fetcher (a refused address, a
    failure, a page over the byte limit) or PageUnreadable."""
    # The fetcher bounds its own time; this bound also covers a resolver that never answers.
    async with asyncio.timeout(policy.timeout_seconds + 1.0):
        fetched = await fetch_url(url, policy)
    content, kind = fetched.content, fetched.content_type
    return await asyncio.to_thread(extract, content, kind, fetched.url, chars)


def extract(content: bytes, content_type: str | None, url: str, chars: int) -> Page:
    """The readable text, title and favicon of a page's bytes."""
    kind = (content_type or "").split(";", 1)[0].strip().lower()
    if not kind:
        kind = "text/html" if content.lstrip()[:1] == b"<" else "text/plain"
    if kind in _TEXT_TYPES:
        text = _lines(_decode(content, None))
        return Page(url, _shorten(text, chars), None, None)
    if kind not in _HTML_TYPES:
        raise PageUnreadable(f"not a text page ({kind[:80]})")
    html = _decode(content, _META_CHARSET.search(content[:4096]))
    soup = BeautifulSoup(_without_code(html)[:PARSED_CHARS], "html.parser")
    title = clean_text(soup.title.get_text(), MAX_TITLE_CHARS) if soup.title else None
    favicon = _favicon(soup, url)
    articles = soup.find_all("article", limit=2)
    root = soup.find("main") or (articles[0] if len(articles) == 1 else None) or soup.body or soup
    text = _lines(_reading_text(root), _BREAK)
    if not text:
        raise PageUnreadable("the page has no text")
    return Page(url, _shorten(text, chars), title or None, favicon)


def _without_code(html: str) -> str:
    """`html` without its script, style, svg, noscript and template elements (often most of a
    modern page), cut with two linear scans, before the much slower parse."""
    kept: list[str] = []
    position = 0
    while (opening := _CODE_OPENING.search(html, position)) is not None:
        kept.append(html[position : opening.start()])
        closing = _CODE_CLOSING[opening.group(1).lower()].search(html, opening.end())
        if closing is None:  # unclosed: the rest of the page is code
            return "".join(kept)
        position = closing.end()
    kept.append(html[position:])
    return "".join(kept)


def _reading_text(root: Tag) -> str:
    """The text of `root` without its noise elements, each block on its own line (inside a
    block, the source's line breaks are mere spaces). Iterative, and linear in the tree's size:
    a page may nest deeper than Python recurses, and inserting line breaks into the tree would be
    quadratic in the number of siblings."""
    parts: list[str] = []
    stack: list[object] = [root]
    while stack:
        node = stack.pop()
        if node is _BLOCK_END:
            parts.append(_BREAK)
        elif isinstance(node, Tag):
            if node.name in _NOISE:
                continue
            if node.name in _BLOCKS:
                parts.append(_BREAK)
                stack.append(_BLOCK_END)
            stack.extend(reversed(node.contents))
        elif type(node) is NavigableString:  # not a comment, doctype or declaration
            parts.append(node)
    return "".join(parts)


def _decode(content: bytes, meta: re.Match[bytes] | None) -> str:
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        pass
    if meta is not None:
        try:
            return content.decode(meta.group(1).decode("ascii"), "replace")
        except LookupError:
            pass
    return content.decode("cp1252", "replace")


def _lines(text: str, breaks: str | None = None) -> str:
    pieces = text.split(breaks) if breaks else text.splitlines()
    lines = (" ".join(piece.split()) for piece in pieces)
    return "\n".join(line for line in lines if line)


def _shorten(text: str, chars: int) -> str:
    if len(text) <= chars:
        return text
    cut = text[:chars]
    space = cut.rfind(" ", chars - 80)
    return (cut[:space] if space > 0 else cut).rstrip() + " …"


def _favicon(soup: BeautifulSoup, url: str) -> str | None:
    """The page's declared icon (`<link rel="icon">`), as an absolute http(s) URL."""
    for link in soup.find_all("link", href=True, limit=50):
        if not isinstance(link, Tag):
            continue
        rel = link.get("rel")
        names = rel.split() if isinstance(rel, str) else [str(name) for name in rel or ()]
        if any(name.lower() == "icon" for name in names):
            href = urljoin(url, str(link["href"]).strip())
            return href if web_url(href) else None
    return None


def fetch_error(exc: Exception) -> str:
    """Why a page was not read, in a line."""
    if isinstance(exc, AppError):
        return exc.message
    if isinstance(exc, TimeoutError):
        return "fetching the page took too long"
    return str(exc) or type(exc).__name__
