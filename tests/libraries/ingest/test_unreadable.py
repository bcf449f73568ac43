"""Documents that cannot be read, and hostile ones: each is `Unreadable` with a reason a person
understands (a 400 `document_unreadable` if it reaches a client), never a crash or a hang."""

from __future__ import annotations

import asyncio
import io
import os
import time

import pytest
from PIL import Image

from maestrale.engines.ocr_types import OcrImage, OcrLine
from maestrale.engines.types import EngineError
from maestrale.libraries.ingest.errors import OcrUnavailable, Unreadable
from maestrale.libraries.ingest.extract import ExtractionLimits, extract
from tests.libraries.ingest import samples

pytest.importorskip("pypdfium2")


async def unreadable(data: bytes, name: str = "doc", **kwargs: object) -> str:
    with pytest.raises(Unreadable) as caught:
        await extract(data, name, None, None, **kwargs)  # type: ignore[arg-type]
    error = caught.value
    assert (error.status_code, error.code, error.param) == (400, "document_unreadable", "document")
    assert error.reason == error.message
    return error.reason


class SlowOcr:
    async def recognize(self, image: OcrImage) -> list[OcrLine]:
        await asyncio.sleep(60)
        return []


class FailingOcr:
    def __init__(self, status: int) -> None:
        self.status = status

    async def recognize(self, image: OcrImage) -> list[OcrLine]:
        raise EngineError(self.status, "the engine is down")


@pytest.mark.parametrize(
    ("data", "name", "words"),
    [
        (b"", "empty.txt", "empty"),
        (b"  \n\t \r\n ", "blank.txt", "no text"),
        (b"<html><script>x()</script></html>", "blank.html", "no text"),
        (b"%PDF-1.7\n1 0 obj garbage\n%%EOF", "broken.pdf", "damaged or encrypted"),
        (b"\x7fELF\x02\x01\x01\x00\x00\x00", "a.out", "binary data"),
        (os.urandom(4096).replace(b"\x00", b"\x01"), "random", "not UTF-8"),
        ("Caf\u00e9 cr\u00e8me".encode("latin-1"), "menu.txt", "invalid byte 0xe9 at offset 3"),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(500), "old.doc", "legacy Office"),
        (b"{\\rtf1\\ansi hello}", "letter.rtf", "RTF"),
        (b"plain words", "report.pdf", "named or declared as a PDF"),
        (b"plain words", "report.docx", "named or declared as a DOCX"),
        (b"PK\x03\x04 not really a zip", "x.docx", "damaged ZIP"),
    ],
)
async def test_unreadable_documents_say_why(data: bytes, name: str, words: str) -> None:
    assert words in await unreadable(data, name)


async def test_encrypted_pdf() -> None:
    assert "damaged or encrypted" in await unreadable(samples.encrypted_pdf(), "secret.pdf")


async def test_office_files_other_than_docx() -> None:
    buffer = io.BytesIO()
    import zipfile

    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("xl/workbook.xml", "<workbook/>")
    assert "spreadsheet (XLSX)" in await unreadable(buffer.getvalue(), "book.xlsx")


async def test_scanned_page_without_ocr_engine_names_the_page_and_the_reason() -> None:
    reason = await unreadable(samples.mixed_pdf(), "mixed.pdf", no_ocr="install the [ocr] extra")
    assert reason == (
        "page 2 has no text layer (a scan) and cannot be recognised: install the [ocr] extra"
    )
    image = samples.png(samples.text_image(["hello"]))
    assert "OCR" in await unreadable(image, "photo.png")


async def test_ocr_engine_failures() -> None:
    with pytest.raises(OcrUnavailable, match="page 1"):
        await extract(samples.scanned_pdf(), "s.pdf", None, FailingOcr(503))
    with pytest.raises(Unreadable, match="OCR of page 1 failed"):
        await extract(samples.scanned_pdf(), "s.pdf", None, FailingOcr(400))
    with pytest.raises(OcrUnavailable, match="image"):
        await extract(samples.png(samples.text_image(["x"])), "i.png", None, FailingOcr(429))


# ------------------------------------------------------------------------------------ hostile


async def test_too_many_pages() -> None:
    reason = await unreadable(samples.text_pdf(5), "long.pdf", limits=ExtractionLimits(max_pages=3))
    assert "5 pages" in reason and "limit of 3" in reason


async def test_too_much_text() -> None:
    limits = ExtractionLimits(max_text_chars=200)
    assert "over 200 characters" in await unreadable(samples.text_pdf(3), "a.pdf", limits=limits)
    assert "over 200 characters" in await unreadable(b"word " * 100, "a.txt", limits=limits)
    assert "over 200 characters" in await unreadable(b"w" * 10_000, "a.txt", limits=limits)
    html = b"<p>" + b"word " * 100 + b"</p>"
    assert "over 200 characters" in await unreadable(html, "a.html", limits=limits)


async def test_docx_zip_bomb_is_refused_before_it_is_unpacked() -> None:
    bomb = samples.docx_bomb(64 * 1024 * 1024)
    assert len(bomb) < 1024 * 1024  # 64 MiB of zeros packed in under 1 MiB
    limits = ExtractionLimits(max_unpacked_bytes=16 * 1024 * 1024)
    reason = await unreadable(bomb, "bomb.docx", limits=limits)
    assert "over the limit of 16777216" in reason and "ZIP bomb" in reason


async def test_zip_with_too_many_entries() -> None:
    assert "over 10000 entries" in await unreadable(samples.zip_of_many(10_001), "many.docx")


async def test_image_decompression_bomb() -> None:
    huge = Image.new("1", (9000, 9000))  # 81 megapixels, a few kilobytes as PNG
    buffer = io.BytesIO()
    huge.save(buffer, format="PNG")
    with pytest.raises(Unreadable, match=r"pixels|decompression bomb"):
        await extract(buffer.getvalue(), "huge.png", None, SlowOcr())


async def test_reading_stops_at_the_time_limit() -> None:
    started = time.monotonic()
    limits = ExtractionLimits(timeout_seconds=0.5)
    with pytest.raises(Unreadable, match=r"took over 0\.5 seconds"):
        await extract(samples.scanned_pdf(), "slow.pdf", None, SlowOcr(), limits=limits)
    assert time.monotonic() - started < 30  # far from the engine's minute


async def test_deeply_nested_html_and_markdown() -> None:
    html = b"<div>" * 50_000 + b"deep text" + b"</div>" * 50_000
    try:
        extracted = await extract(html, "deep.html", None, None)
    except Unreadable as exc:  # libxml2 stops at a depth of 256, losing the text
        reason = exc.reason
    else:
        reason = extracted.pages[0]
    assert reason in ("the document has no text", "deep text")
    quoted = "> " * 50 + "quoted\n\nshallow text\n"
    extracted = await extract(quoted.encode(), "quoted.md", None, None)
    assert extracted.pages == ["quoted\n\nshallow text"]
    # markdown-it ends its parse past 100 levels of nesting: the rest is left out.
    deep = "> " * 5_000 + "quoted\n\n" + "- " * 5_000 + "listed\n"
    assert await unreadable(deep.encode(), "deep.md") == "the document has no text"


async def test_docx_with_broken_xml() -> None:
    import zipfile

    buffer = io.BytesIO(samples.docx())
    source = zipfile.ZipFile(buffer)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename == "word/document.xml":
                data = data[: len(data) // 2]  # cut in the middle of an element
            archive.writestr(info, data)
    assert "the DOCX cannot be read" in await unreadable(out.getvalue(), "cut.docx")


async def test_docx_with_entity_expansion_is_not_expanded() -> None:
    import zipfile

    laughs = (
        '<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "hahahahahaha">'
        + "".join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(8))
        + "]>"
    )
    buffer = io.BytesIO(samples.docx())
    source = zipfile.ZipFile(buffer)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename == "word/document.xml":
                body = data.decode().split("?>", 1)[1]
                data = (laughs + body.replace(samples.TITLE, "&i;", 1)).encode()
            archive.writestr(info, data)
    started = time.monotonic()
    try:
        extracted = await extract(out.getvalue(), "laughs.docx", None, None)
    except Unreadable:
        pass  # refusing is as good as not expanding
    else:
        assert sum(map(len, extracted.pages)) < 100_000
    assert time.monotonic() - started < 30
