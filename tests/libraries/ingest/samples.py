"""Documents the ingest tests and benchmark make: PDFs with a text layer (fpdf2, core Helvetica
font, no font file needed), scanned PDFs (a page that is only a picture of text drawn by
Pillow), DOCX (python-docx), HTML and Markdown, and hostile variants of them."""

from __future__ import annotations

import io
import zipfile

from fpdf import FPDF
from PIL import Image, ImageDraw, ImageFont

TITLE = "Annual Report of the Harbour Authority"
PARAGRAPHS = [
    "The harbour handled more ships this year than in any year before. Container traffic "
    "rose by twelve percent, and the new northern quay opened in April.",
    "Fishing boats kept their berths in the old basin. The authority dredged the channel "
    "twice, in March and in September, so that larger ferries could dock at low tide.",
    "Revenue grew with traffic. Most of it was spent on the breakwater, whose repair will "
    "take three more years; the rest paid for the new pilot boats.",
]
TABLE = [("Quarter", "Ships", "Tonnes"), ("Q1", "410", "52000"), ("Q2", "455", "61000")]
SCAN_LINES = [
    "Invoice number 48213 dated 12 March 2024",
    "The quick brown fox jumps over the lazy dog",
    "Total amount due 1250.75 dollars",
]


def text_pdf(pages: int = 2) -> bytes:
    """`pages` A4 pages with a text layer: the title, the paragraphs and a table on the first,
    then pages of prose naming their number."""
    pdf = FPDF()
    pdf.set_auto_page_break(True, margin=15)
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 20)
    pdf.cell(0, 12, TITLE, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", size=11)
    for paragraph in PARAGRAPHS:
        pdf.multi_cell(0, 6, paragraph, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(4)
    for row in TABLE:
        for cell in row:
            pdf.cell(40, 8, cell, border=1)
        pdf.ln(8)
    for number in range(2, pages + 1):
        pdf.add_page()
        pdf.set_font("Helvetica", size=11)
        for paragraph in PARAGRAPHS:
            pdf.multi_cell(0, 6, f"Page {number}. {paragraph}", new_x="LMARGIN", new_y="NEXT")
            pdf.ln(4)
    return bytes(pdf.output())


def text_image(lines: list[str], size: int = 36) -> Image.Image:
    """Black text on white, drawn by Pillow with its bundled font: pixels only."""
    font = ImageFont.load_default(size=size)
    width = max(int(font.getlength(line)) for line in lines) + 2 * size
    height = (len(lines) * 2 + 1) * size
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    for i, line in enumerate(lines):
        draw.text((size, size + i * 2 * size), line, fill="black", font=font)
    return image


def png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def scanned_pdf(lines: list[str] = SCAN_LINES, pages: int = 1) -> bytes:
    """An image-only PDF: each page is a picture of `lines`, full width, and nothing else."""
    image = text_image(lines)
    page_w = 180.0
    page_h = page_w * image.height / image.width
    pdf = FPDF(format=(page_w, page_h))
    pdf.set_margins(0, 0)
    pdf.set_auto_page_break(False)
    for _ in range(pages):
        pdf.add_page()
        pdf.image(io.BytesIO(png(image)), x=0, y=0, w=page_w, h=page_h)
    return bytes(pdf.output())


def mixed_pdf() -> bytes:
    """Page 1 with a text layer, page 2 a scan."""
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.multi_cell(0, 6, PARAGRAPHS[0])
    pdf.add_page()
    pdf.image(io.BytesIO(png(text_image(SCAN_LINES))), x=10, y=10, w=190)
    return bytes(pdf.output())


def encrypted_pdf() -> bytes:
    pdf = FPDF()
    pdf.set_encryption(owner_password="owner", user_password="secret")
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.cell(0, 10, "Top secret")
    return bytes(pdf.output())


def docx(page_break: bool = True) -> bytes:
    """A heading, paragraphs, a list, a table, then (after a hard page break) a second page."""
    import docx as python_docx
    from docx.enum.text import WD_BREAK

    document = python_docx.Document()
    document.add_heading(TITLE, level=1)
    document.add_paragraph(PARAGRAPHS[0])
    document.add_paragraph("dredging the channel", style="List Bullet")
    table = document.add_table(rows=len(TABLE), cols=len(TABLE[0]))
    for r, row in enumerate(TABLE):
        for c, cell in enumerate(row):
            table.cell(r, c).text = cell
    last = document.add_paragraph(PARAGRAPHS[1])
    if page_break:
        last.add_run().add_break(WD_BREAK.PAGE)
    document.add_heading("Appendix", level=2)
    document.add_paragraph(PARAGRAPHS[2])
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def docx_laid_out() -> bytes:
    """A DOCX as Word saves it: where its last layout broke the pages is recorded
    (`w:lastRenderedPageBreak`), here in the middle of the second paragraph, and at the start
    of the third, which follows a hard page break (Word records both)."""
    import docx as python_docx
    from docx.enum.text import WD_BREAK
    from docx.oxml import OxmlElement

    document = python_docx.Document()
    document.add_paragraph(PARAGRAPHS[0])
    second = document.add_paragraph("Fishing boats kept their berths ")
    second.add_run()._r.append(OxmlElement("w:lastRenderedPageBreak"))
    second.add_run("in the old basin.")
    second.add_run().add_break(WD_BREAK.PAGE)
    third = document.add_paragraph()
    third.add_run()._r.append(OxmlElement("w:lastRenderedPageBreak"))
    third.add_run(PARAGRAPHS[2])
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def docx_bomb(inflated: int) -> bytes:
    """A real DOCX with one more entry of `inflated` zero bytes (compressed to almost nothing)."""
    buffer = io.BytesIO(docx())
    block = bytes(1024 * 1024)
    with (
        zipfile.ZipFile(buffer, "a", compression=zipfile.ZIP_DEFLATED) as archive,
        archive.open("word/media/zeros.bin", "w", force_zip64=True) as entry,
    ):
        for _ in range(inflated // len(block)):
            entry.write(block)
    return buffer.getvalue()


def docx_of_paragraphs(count: int, text: str = "") -> bytes:
    """A real DOCX whose body holds `count` more paragraphs: packed, a few bytes each."""
    source = zipfile.ZipFile(io.BytesIO(docx()))
    out = io.BytesIO()
    paragraph = f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>" if text else "<w:p/>"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            data = source.read(info.filename)
            if info.filename == "word/document.xml":
                head, tail = data.split(b"<w:body>", 1)
                data = head + b"<w:body>" + paragraph.encode() * count + tail
            archive.writestr(info.filename, data)
    return out.getvalue()


def docx_renamed(document: bytes) -> bytes:
    """`document` (a DOCX) with its document part moved to `word/main.bin`, where its
    relationships send python-docx (a tiny `word/document.xml` stays, for the name's sake)."""
    source = zipfile.ZipFile(io.BytesIO(document))
    main = "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            data = source.read(info.filename)
            name = info.filename
            if name == "word/document.xml":
                archive.writestr("word/document.xml", b"<w:document/>")
                name = "word/main.bin"
            elif name == "word/_rels/document.xml.rels":
                name = "word/_rels/main.bin.rels"
            elif name == "_rels/.rels":
                data = data.replace(b'Target="word/document.xml"', b'Target="word/main.bin"')
            elif name == "[Content_Types].xml":
                override = f'<Override PartName="/word/main.bin" ContentType="{main}"/>'
                data = data.replace(b"</Types>", override.encode() + b"</Types>")
            archive.writestr(name, data)
    return out.getvalue()


def zip_of_many(entries: int) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("word/document.xml", "<x/>")
        for i in range(entries):
            archive.writestr(f"f{i}", b"")
    return buffer.getvalue()


HTML = """<!DOCTYPE html>
<html><head><title>Harbour</title><style>body { color: red }</style>
<script>var secret = "do not index me";</script></head>
<body><h1>Harbour news</h1>
<p>The <b>northern</b> quay <a href="https://example.org/quay">opened</a> in April.</p>
<ul><li>Ships: 410</li><li>Tonnes: 52000</li></ul>
<table><tr><th>Quarter</th><th>Ships</th></tr><tr><td>Q1</td><td>410</td></tr></table>
<noscript>enable javascript</noscript>
</body></html>
"""

MARKDOWN = """# Harbour news

The **northern** quay [opened](https://example.org/quay) in April.
![a photo of the quay](quay.jpg)

- Ships: 410
- Tonnes: 52000

| Quarter | Ships |
|---------|-------|
| Q1      | 410   |

```python
print("berths")
```
"""
