"""Each format a library reads, to pages of text, and the format told by content first."""

from __future__ import annotations

import codecs
import io

import pytest

from maestrale.libraries.ingest.extract import extract
from maestrale.libraries.ingest.formats import DOCX_MIMETYPE, detect, extension_of
from tests.libraries.ingest import samples

pytest.importorskip("pypdfium2")


async def test_text_pdf_is_read_from_its_text_layer_without_ocr() -> None:
    extracted = await extract(samples.text_pdf(3), "report.pdf", "application/pdf", None)
    assert (extracted.mimetype, extracted.extension, extracted.ocr_pages) == (
        "application/pdf",
        "pdf",
        0,
    )
    assert len(extracted.pages) == 3
    first = extracted.pages[0]
    assert first.startswith(f"# {samples.TITLE}")
    assert samples.PARAGRAPHS[1] in first
    assert "| Q2 | 455 | 61000 |" in first  # the table, laid out
    assert extracted.pages[2].startswith("Page 3. The harbour")


async def test_docx_paragraphs_tables_headings_and_hard_page_breaks() -> None:
    extracted = await extract(samples.docx(), "report.docx", None, None)
    assert (extracted.mimetype, extracted.extension) == (DOCX_MIMETYPE, "docx")
    assert len(extracted.pages) == 2
    first, second = extracted.pages
    assert first.startswith(f"# {samples.TITLE}\n\n{samples.PARAGRAPHS[0]}")
    assert "- dredging the channel" in first
    assert "Quarter | Ships | Tonnes\nQ1 | 410 | 52000" in first
    assert first.endswith(samples.PARAGRAPHS[1])
    assert second == f"## Appendix\n\n{samples.PARAGRAPHS[2]}"


async def test_docx_without_page_breaks_is_one_page() -> None:
    extracted = await extract(samples.docx(page_break=False), "r.docx", None, None)
    assert len(extracted.pages) == 1
    assert "## Appendix" in extracted.pages[0]


async def test_docx_pages_where_word_last_laid_them_out() -> None:
    extracted = await extract(samples.docx_laid_out(), "laid-out.docx", None, None)
    assert extracted.pages == [
        f"{samples.PARAGRAPHS[0]}\n\nFishing boats kept their berths",
        "in the old basin.",
        samples.PARAGRAPHS[2],
    ]


async def test_html_text_without_scripts_styles_or_urls() -> None:
    extracted = await extract(samples.HTML.encode(), "news.html", "text/html", None)
    assert (extracted.mimetype, extracted.extension) == ("text/html", "html")
    (text,) = extracted.pages
    assert text == (
        "# Harbour news\n\nThe northern quay opened in April.\n\n- Ships: 410\n- Tonnes: 52000"
        "\n\nQuarter | Ships\nQ1 | 410"
    )
    for absent in ("secret", "color", "javascript", "example.org", "Harbour\n"):
        assert absent not in text


async def test_html_in_its_declared_encoding() -> None:
    page = '<html><head><meta charset="iso-8859-1"></head><body><p>Café déjà vu</p></body></html>'
    extracted = await extract(page.encode("latin-1"), "page.htm", None, None)
    assert extracted.pages == ["Café déjà vu"]
    assert extracted.extension == "htm"


async def test_markdown_markup_is_stripped() -> None:
    extracted = await extract(samples.MARKDOWN.encode(), "news.md", None, None)
    assert (extracted.mimetype, extracted.extension) == ("text/markdown", "md")
    (text,) = extracted.pages
    assert text == (
        "# Harbour news\n\nThe northern quay opened in April. a photo of the quay\n\n"
        '- Ships: 410\n- Tonnes: 52000\n\nQuarter | Ships\nQ1 | 410\n\nprint("berths")'
    )


@pytest.mark.parametrize(
    ("name", "content", "mimetype"),
    [
        ("data.csv", "city,ships\nGenoa,410\nNaples,455\n", "text/csv"),
        ("data.json", '{"city": "Genoa", "ships": 410}', "application/json"),
        ("tool.py", "def berths():\n    return 12\n", "text/x-python"),
        ("notes", "Plain notes, no extension.\n", "text/plain"),
    ],
)
async def test_plain_text_formats_are_read_as_utf8(name: str, content: str, mimetype: str) -> None:
    extracted = await extract(content.encode(), name, None, None)
    assert extracted.pages == [content.rstrip()]
    assert extracted.mimetype == mimetype
    assert extracted.extension == (extension_of(name) or "txt")


async def test_byte_order_marks_and_newlines() -> None:
    utf8 = await extract(codecs.BOM_UTF8 + "Grüße\r\nzweite Zeile".encode(), "a.txt", None, None)
    assert utf8.pages == ["Grüße\nzweite Zeile"]
    utf16 = await extract("Grüße, 世界".encode("utf-16"), "a.txt", None, None)
    assert utf16.pages == ["Grüße, 世界"]


async def test_control_characters_and_lone_surrogates_never_reach_a_page() -> None:
    extracted = await extract("tab\there\x0cform feed\u2028end".encode(), "a.txt", None, None)
    assert extracted.pages == ["tab\thereform feed\nend"]


@pytest.mark.parametrize(
    ("name", "mimetype", "reader"),
    [
        ("upload.bin", "application/octet-stream", "pdf"),
        ("notes.txt", "text/plain", "pdf"),  # the bytes win over the name and the declared type
        ("", None, "pdf"),
    ],
)
def test_pdf_found_by_its_bytes(name: str, mimetype: str | None, reader: str) -> None:
    assert detect(samples.text_pdf(1), name, mimetype).reader == reader


def test_docx_found_by_its_bytes() -> None:
    found = detect(samples.docx(), "upload", "application/octet-stream")
    assert (found.reader, found.mimetype, found.extension) == ("docx", DOCX_MIMETYPE, "docx")


def test_text_formats_told_apart_by_name_type_or_content() -> None:
    assert detect(b"<!DOCTYPE html><p>x</p>", "upload", None).reader == "html"
    assert detect(b"  <!-- c --><html lang=en>x</html>", "upload", None).reader == "html"
    assert detect(b"<p>x</p>", "x", "text/html; charset=utf-8").reader == "html"
    assert detect(b"# Title", "README.markdown", None).reader == "markdown"
    assert detect(b"# Title", "upload", "text/markdown").reader == "markdown"
    assert detect(b"# Title", "notes.txt", None).reader == "text"


def test_images_found_by_their_bytes() -> None:
    found = detect(samples.png(samples.text_image(["x"])), "scan.pdf", "application/pdf")
    assert (found.reader, found.mimetype, found.extension) == ("image", "image/png", "png")
    buffer = io.BytesIO()
    samples.text_image(["x"]).save(buffer, format="JPEG")
    assert detect(buffer.getvalue(), "x", None).mimetype == "image/jpeg"


def test_extension_of() -> None:
    assert extension_of("Report.Final.PDF") == "pdf"
    assert extension_of("dir.d/README") is None
    assert extension_of(".bashrc") is None
    assert extension_of("weird.ext with space") is None
