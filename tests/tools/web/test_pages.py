"""The readable text of a result's page: blocks on their own lines, code and navigation left out,
hostile markup (deep, unclosed, huge) read without a crash."""

from __future__ import annotations

import pytest

from maestrale.tools.web.pages import PARSED_CHARS, PageUnreadable, extract

URL = "https://example.org/a/page.html"


def html(body: str, head: str = "") -> bytes:
    return f"<!doctype html><html><head>{head}</head><body>{body}</body></html>".encode()


def test_blocks_make_lines_and_code_is_left_out() -> None:
    page = extract(
        html(
            "<nav>Menu</nav><main><h1>Title</h1><p>One\n  two <i>three</i></p>"
            "<script>var s = '</div><p>not text</p>';</script><!-- a comment -->"
            "<ul><li>first</li><li>second</li></ul><svg><text>drawn</text></svg></main>"
            "<aside>Related</aside>",
            head="<title> The  page </title><style>p{}</style>",
        ),
        "text/html",
        URL,
        1000,
    )
    assert page.text == "Title\nOne two three\nfirst\nsecond"
    assert page.title == "The page"
    assert page.url == URL


def test_main_content_is_preferred() -> None:
    one = extract(html("<p>intro</p><article><p>story</p></article>"), "text/html", URL, 100)
    assert one.text == "story"
    listing = html("<article><p>a</p></article><article><p>b</p></article>")
    assert extract(listing, "text/html", URL, 100).text == "a\nb"


@pytest.mark.parametrize(
    ("head", "favicon"),
    [
        ('<link rel="icon" href="/favicon.png">', "https://example.org/favicon.png"),
        ('<link rel="apple-touch-icon" href="x.png"><link rel="Shortcut Icon" href="i.ico">',
         "https://example.org/a/i.ico"),
        ('<link rel="icon" href="javascript:alert(1)">', None),
        ('<link rel="stylesheet" href="/s.css">', None),
    ],
)  # fmt: skip
def test_favicons(head: str, favicon: str | None) -> None:
    assert extract(html("<p>x</p>", head), "text/html", URL, 100).favicon == favicon


def test_text_pages_and_sniffing() -> None:
    plain = extract(b"line one\n\n  line   two\n", "text/plain", URL, 100)
    assert (plain.text, plain.title, plain.favicon) == ("line one\nline two", None, None)
    assert extract(b"  <p>markup</p>", None, URL, 100).text == "markup"
    assert extract(b"just words", None, URL, 100).text == "just words"
    assert extract("caf\xe9".encode("cp1252"), "text/plain", URL, 100).text == "café"


@pytest.mark.parametrize("kind", ["application/pdf", "image/png", "application/octet-stream"])
def test_other_types_are_not_read(kind: str) -> None:
    with pytest.raises(PageUnreadable, match="not a text page"):
        extract(b"%PDF-1.7", kind, URL, 100)


def test_long_text_is_cut_at_a_word() -> None:
    page = extract(html("<p>" + "word " * 1000 + "</p>"), "text/html", URL, 100)
    assert page.text.endswith("word …")
    assert len(page.text) <= 102


@pytest.mark.parametrize(
    "body",
    [
        "<div>" * 100_000 + "deep" + "</div>" * 100_000,  # deeper than Python recurses
        "<p>before</p>" + "<script>" * 200_000,  # unclosed code: the rest is code
        "<p>before</p>" + "<script></script" + " " * 100_000,
        "<p>before</p>" + "<b>" * 50_000 + "<p>" * 50_000,  # unclosed elements
        "<p>before</p>" + "x" * (PARSED_CHARS * 2) + "<p>after</p>",  # past the parsed part
    ],
)
def test_hostile_markup(body: str) -> None:
    page = extract(body.encode(), "text/html", URL, 200)
    assert page.text.startswith(("before", "deep"))
    assert "after" not in page.text


def test_a_page_without_text() -> None:
    with pytest.raises(PageUnreadable, match="no text"):
        extract(html("<script>only code</script>"), "text/html", URL, 100)
