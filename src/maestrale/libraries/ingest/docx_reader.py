"""Text of DOCX documents with python-docx: paragraphs and tables in document order.

A DOCX has no pages of its own (they are made when it is laid out). Word records where its
last layout broke the pages (`w:lastRenderedPageBreak`): where a document has these, its pages
are cut there, so that a reference to "page 3" points where a reader of the document would
look; a document written by a program has none, and is cut at its hard page breaks (and
paragraphs set to start a page) instead. Headings come out as
`# Heading`, list paragraphs as `- item`, table rows as `cell | cell`.

A DOCX is a ZIP: before python-docx unpacks it, the sizes its directory declares are added up
and refused over the limit (zipfile never inflates an entry past its declared size, so the
declaration bounds the memory); then the start tags of its XML parts are counted as they are
inflated, a chunk at a time, and refused over the element bound, before python-docx builds a
tree of them (the time it takes grows with the paragraphs, a minute for 100,000 of them).
python-docx parses XML without resolving entities. It runs in the bounded child process of
`isolated`.
"""

from __future__ import annotations

import io
import re
import zipfile
from typing import IO, Any

from maestrale.libraries.ingest.refused import DocumentRefused

_HEADING = re.compile(r"^heading ([1-9])$", re.I)
# Nested tables are read this deep; deeper ones are left out.
_MAX_TABLE_DEPTH = 4
_CHUNK = 1024 * 1024
# What may come before the first `<` of XML: byte order marks (UTF-8, UTF-16), blank space,
# and the NULs of UTF-16. Its `<` are bytes of their own in UTF-16 too (its `</` are not: end
# tags then count as elements, more, never fewer).
_BEFORE_XML = b"\xef\xbb\xbf\xff\xfe\x00 \t\r\n"


def check_unpacked_size(data: bytes, limit: int) -> None:
    """`DocumentRefused` when the ZIP container unpacks to more than `limit` bytes."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            total = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise DocumentRefused(f"the DOCX is damaged (not a valid ZIP container): {exc}") from exc
    if total > limit:
        raise DocumentRefused(
            f"the DOCX unpacks to {total} bytes, over the limit of {limit} (a ZIP bomb?)"
        )


def _xml_start(part: IO[bytes]) -> bytes:
    """The part's first chunk if it begins as XML does, else b"" (an image, a font: no parser
    builds a tree of it). Names do not tell: python-docx finds its parts by their relationships,
    so a document part may be named `word/a.bin`."""
    while chunk := part.read(_CHUNK):
        rest = chunk.lstrip(_BEFORE_XML)
        if rest:
            return chunk if rest.startswith(b"<") else b""
    return b""


def check_elements(data: bytes, limit: int) -> None:
    """`DocumentRefused` when the XML parts of the ZIP container hold more than `limit` elements
    (start tags, counted without parsing: a tag cut between two chunks may count once more)."""
    count = 0
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for info in archive.infolist():
                with archive.open(info) as part:
                    chunk = _xml_start(part)
                    while chunk:
                        count += chunk.count(b"<") - chunk.count(b"</")
                        count -= chunk.count(b"<?") + chunk.count(b"<!")
                        if count > limit:
                            raise DocumentRefused(
                                f"the DOCX document has over {limit} elements (paragraphs, "
                                "runs, cells...), over the bound"
                            )
                        chunk = part.read(_CHUNK)
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
        raise DocumentRefused(f"the DOCX is damaged (not a valid ZIP container): {exc}") from exc


def read_docx(data: bytes, max_unpacked_bytes: int, max_elements: int) -> list[str]:
    """The pages of a DOCX (blocking, and unbounded in time and memory: run it in the child
    process of `isolated`)."""
    check_unpacked_size(data, max_unpacked_bytes)
    check_elements(data, max_elements)
    import docx

    try:
        document = docx.Document(io.BytesIO(data))
        return _Pages().read(document)
    except (DocumentRefused, MemoryError):
        raise
    except Exception as exc:  # python-docx fails on malformed parts in many different ways
        raise DocumentRefused(f"the DOCX cannot be read: {type(exc).__name__}: {exc}") from exc


class _Pages:
    def __init__(self) -> None:
        self.pages: list[list[str]] = [[]]
        self.rendered = False  # cut at Word's rendered page breaks, not the hard ones

    def read(self, document: Any) -> list[str]:
        from docx.table import Table

        self.rendered = bool(document.element.body.xpath(".//w:lastRenderedPageBreak"))
        for block in document.iter_inner_content():
            if isinstance(block, Table):
                self._add(_table_text(block, 0))
            else:
                self._paragraph(block)
        return ["\n\n".join(blocks) for blocks in self.pages]

    def _add(self, text: str) -> None:
        if text.strip():
            self.pages[-1].append(text.strip())

    def _new_page(self) -> None:
        if self.pages[-1]:
            self.pages.append([])

    def _paragraph(self, paragraph: Any) -> None:
        if not self.rendered and paragraph.paragraph_format.page_break_before:
            self._new_page()
        prefix = _prefix(paragraph)
        pieces = _paragraph_pieces(paragraph, self.rendered)
        for i, piece in enumerate(pieces):
            if i:
                self._new_page()
            if piece.strip():
                self._add(prefix + piece.strip())


def _prefix(paragraph: Any) -> str:
    try:
        style = paragraph.style
        name = (style.name or "") if style is not None else ""
    except (KeyError, ValueError, AttributeError):  # a style id that the styles part lacks
        name = ""
    heading = _HEADING.match(name)
    if heading:
        return "#" * int(heading.group(1)) + " "
    if name.lower() == "title":
        return "# "
    properties = paragraph._p.pPr
    numbered = properties is not None and properties.numPr is not None
    if numbered or name.lower().startswith("list"):
        return "- "
    return ""


_INNER = "w:br | w:cr | w:noBreakHyphen | w:ptab | w:t | w:tab | w:lastRenderedPageBreak"


def _paragraph_pieces(paragraph: Any, rendered: bool) -> list[str]:
    """The paragraph's text, cut at its page breaks, rendered or hard (usually one piece)."""
    from docx.oxml.ns import qn

    hard = qn("w:br")
    hard_type = qn("w:type")
    rendered_break = qn("w:lastRenderedPageBreak")
    pieces = [""]
    # Runs wherever they sit (hyperlinks, insertions, fields), but not those of text boxes:
    # their text is drawn apart from the paragraph's flow (and Word keeps a fallback copy).
    for run in paragraph._p.xpath(".//w:r[not(ancestor::w:txbxContent)]"):
        for element in run.xpath(_INNER):
            if element.tag == rendered_break:
                if rendered:
                    pieces.append("")
            elif element.tag == hard and element.get(hard_type) == "page":
                if not rendered:
                    pieces.append("")
            else:
                pieces[-1] += str(element)
    return pieces


def _cell_text(cell: Any, depth: int) -> str:
    from docx.table import Table

    parts: list[str] = []
    for block in cell.iter_inner_content():
        if isinstance(block, Table):
            if depth < _MAX_TABLE_DEPTH:
                parts.append(_table_text(block, depth + 1))
        else:
            parts.append("".join(_paragraph_pieces(block, False)).strip())
    return " ".join(" ".join(part.split()) for part in parts if part.strip())


def _table_text(table: Any, depth: int) -> str:
    rows: list[str] = []
    for row in table.rows:
        cells: list[str] = []
        previous = None
        for cell in row.cells:
            if cell is previous:  # a cell spanning several grid columns comes once per column
                continue
            previous = cell
            cells.append(_cell_text(cell, depth))
        if any(cells):
            rows.append(" | ".join(cells))
    return "\n".join(rows)
