"""Documents the OCR tests and benchmark make: PDFs written with fpdf2 (core Helvetica font, so no
font file is needed), images rendered from them with pdfium, image-only PDFs that embed those
images, and the character error rate."""

from __future__ import annotations

import base64
import io

from fpdf import FPDF
from PIL import Image, ImageDraw

HEADING = "Quarterly Report"
PARAGRAPH = (
    "Sales grew in every region this quarter. The northern office opened two new stores "
    "and hired twelve people."
)
TABLE = [("Region", "Sales", "Growth"), ("North", "1200", "12%"), ("South", "950", "8%")]
SECOND_PAGE = "The second page holds the appendix."
SCAN_LINES = [
    "Invoice number 48213 dated 12 March 2024",
    "The quick brown fox jumps over the lazy dog",
    "Total amount due 1250.75 dollars",
    "Contact billing at example dot com",
]

PROSE = [
    "Maestrale is a self-hosted AI platform server that speaks the platform API.",
    "Documents given to its OCR endpoint are read page by page: a page with a text",
    "layer is taken as it is, a scanned page is rendered and recognised, and each",
    "page comes back as markdown with its headings, paragraphs and simple tables.",
    "Invoice 2024-0815 totals 3,482.50 EUR, due on 30 September 2024.",
    "Contact: accounts@example.org, +33 1 23 45 67 89, 12 rue de la Paix, Paris.",
]


def figure_png(width: int = 200, height: int = 120) -> bytes:
    """A picture without text: a blue square on red."""
    image = Image.new("RGB", (width, height), (200, 30, 30))
    ImageDraw.Draw(image).rectangle(
        (width // 10, height // 6, width - width // 10, height - height // 6), fill=(20, 20, 200)
    )
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


def text_pdf() -> bytes:
    """Two pages with a text layer: a heading, a paragraph, a 3x3 table and a figure (at x=20 mm,
    y=120 mm, 50 mm wide), then a page of plain text."""
    pdf = FPDF()  # A4, millimetres
    pdf.add_page()
    pdf.set_font("Helvetica", "B", 24)
    pdf.cell(0, 12, HEADING, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(0, 6, PARAGRAPH)
    pdf.ln(4)
    for row in TABLE:
        for cell in row:
            pdf.cell(40, 8, cell, border=1)
        pdf.ln(8)
    pdf.image(io.BytesIO(figure_png()), x=20, y=120, w=50)
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(0, 6, SECOND_PAGE)
    return bytes(pdf.output())


def lines_pdf(lines: list[str], size: int = 16) -> bytes:
    pdf = FPDF(format=(180, 20 + len(lines) * size * 0.6))
    pdf.set_margins(8, 8)
    pdf.set_auto_page_break(False)
    pdf.add_page()
    pdf.set_font("Helvetica", size=size)
    for line in lines:
        pdf.cell(0, size * 0.55, line, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def render_png(pdf_bytes: bytes, dpi: int = 150, page: int = 0, fmt: str = "PNG") -> bytes:
    """A page of a PDF as an image file (no text layer left: pixels only)."""
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(pdf_bytes)
    try:
        image = document[page].render(scale=dpi / 72).to_pil().convert("RGB")
    finally:
        document.close()
    buffer = io.BytesIO()
    image.save(buffer, format=fmt)
    return buffer.getvalue()


def scanned_pdf(image_bytes: bytes, pages: int = 1) -> bytes:
    """An image-only PDF: each page is the image, full width, and nothing else."""
    with Image.open(io.BytesIO(image_bytes)) as image:
        width, height = image.size
    page_w = 180.0
    page_h = page_w * height / width
    pdf = FPDF(format=(page_w, page_h))
    pdf.set_margins(0, 0)
    pdf.set_auto_page_break(False)
    for _ in range(pages):
        pdf.add_page()
        pdf.image(io.BytesIO(image_bytes), x=0, y=0, w=page_w, h=page_h)
    return bytes(pdf.output())


def data_url(content: bytes, mimetype: str) -> str:
    return f"data:{mimetype};base64," + base64.b64encode(content).decode("ascii")


def _levenshtein(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def cer(reference: str, hypothesis: str) -> float:
    """Character error rate: edit distance over the reference's length, whitespace collapsed."""
    ref = " ".join(reference.split())
    hyp = " ".join(hypothesis.split())
    return _levenshtein(ref, hyp) / max(len(ref), 1)


def plain(markdown: str) -> str:
    """Markdown's text without table pipes, heading marks and image references."""
    out: list[str] = []
    for line in markdown.splitlines():
        line = line.strip()
        if not line or line.startswith("![") or set(line) <= set("|- "):
            continue
        out.append(line.lstrip("#").replace("|", " ").strip())
    return "\n".join(out)
