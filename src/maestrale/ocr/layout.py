"""Markdown from positioned text: rows by geometry, then headings, paragraphs, simple tables and
image references, in reading order (top to bottom, left to right; one column).

The same code lays out a PDF's text layer and what an OCR engine recognised: both are fragments
of text with a box (pixels, origin top-left) and a size (the text's height in pixels).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from maestrale.engines.ocr_types import Box

# Gaps and tolerances are in units of the text's size (its height), so they hold at any dpi.
_WORD_GAP = 1.2  # fragments of a row closer than this belong to the same cell or sentence
_PARAGRAPH_GAP = 0.8  # a vertical gap larger than this between rows starts a new paragraph
_TABLE_ROW_GAP = 2.5  # rows of one table are at most this far apart
_COLUMN_SLACK = 1.5  # cells of one column start or end within this of each other
_HEADING_RATIO = 1.25  # text this much larger than the body text is a heading
_HEADING_MAX_CHARS = 200


@dataclass(frozen=True, slots=True)
class Fragment:
    """Text with its box, or an image reference when `image_id` is set."""

    text: str
    box: Box
    size: float
    image_id: str | None = None
    confidence: float = 1.0

    @property
    def center_y(self) -> float:
        return (self.box[1] + self.box[3]) / 2


@dataclass(slots=True)
class _Row:
    cells: list[Fragment] = field(default_factory=list)

    @property
    def top(self) -> float:
        return min(c.box[1] for c in self.cells)

    @property
    def bottom(self) -> float:
        return max(c.box[3] for c in self.cells)

    @property
    def size(self) -> float:
        return max(c.size for c in self.cells)

    @property
    def text(self) -> str:
        return " ".join(c.text for c in self.cells)

    @property
    def image(self) -> str | None:
        return self.cells[0].image_id if len(self.cells) == 1 else None


def _rows(fragments: Sequence[Fragment]) -> list[_Row]:
    """Fragments grouped into rows: a fragment joins a row its vertical centre falls within."""
    rows: list[_Row] = []
    for fragment in sorted(fragments, key=lambda f: (f.center_y, f.box[0])):
        row = rows[-1] if rows else None
        if (
            fragment.image_id is None
            and row is not None
            and row.image is None
            and row.top <= fragment.center_y <= row.bottom
        ):
            row.cells.append(fragment)
        else:
            rows.append(_Row([fragment]))
    for row in rows:
        row.cells = _merge_words(sorted(row.cells, key=lambda c: c.box[0]))
    return rows


def _merge_words(cells: list[Fragment]) -> list[Fragment]:
    """Neighbouring fragments of a row with a word-sized gap are one piece of text."""
    merged: list[Fragment] = []
    for cell in cells:
        last = merged[-1] if merged else None
        if (
            last is not None
            and cell.image_id is None
            and cell.box[0] - last.box[2] < _WORD_GAP * max(last.size, cell.size)
        ):
            box = (
                min(last.box[0], cell.box[0]),
                min(last.box[1], cell.box[1]),
                max(last.box[2], cell.box[2]),
                max(last.box[3], cell.box[3]),
            )
            merged[-1] = Fragment(
                f"{last.text} {cell.text}",
                box,
                max(last.size, cell.size),
                confidence=min(last.confidence, cell.confidence),
            )
        else:
            merged.append(cell)
    return merged


def _aligned(a: Fragment, b: Fragment, slack: float) -> bool:
    """Two cells of one column: their spans overlap, or they share a left or right edge."""
    overlap = min(a.box[2], b.box[2]) - max(a.box[0], b.box[0])
    return overlap > 0 or abs(a.box[0] - b.box[0]) <= slack or abs(a.box[2] - b.box[2]) <= slack


def _continues_table(previous: _Row, row: _Row) -> bool:
    if row.image is not None or len(row.cells) != len(previous.cells) or len(row.cells) < 2:
        return False
    size = max(previous.size, row.size)
    if row.top - previous.bottom > _TABLE_ROW_GAP * size:
        return False
    slack = _COLUMN_SLACK * size
    return all(_aligned(a, b, slack) for a, b in zip(previous.cells, row.cells, strict=True))


def _table_markdown(rows: list[_Row]) -> str:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    header = [c.text for c in rows[0].cells]
    lines = [line(header), line(["---"] * len(header))]
    lines.extend(line([c.text for c in row.cells]) for row in rows[1:])
    return "\n".join(lines)


def _body_size(rows: Sequence[_Row]) -> float:
    """The size of most of the text (weighted by characters)."""
    sizes: list[float] = []
    for row in rows:
        for cell in row.cells:
            if cell.image_id is None:
                sizes.extend([cell.size] * max(len(cell.text), 1))
    return statistics.median(sizes) if sizes else 0.0


def _heading_level(size: float, body: float) -> int:
    ratio = size / body if body else 1.0
    if ratio >= 1.8:
        return 1
    if ratio >= 1.45:
        return 2
    return 3 if ratio >= _HEADING_RATIO else 0


@dataclass(frozen=True, slots=True)
class Block:
    """A block of the page in reading order: `type` is title, text, table or image (the SDK's
    OCR block types), `content` its markdown, `box` its extent in pixels."""

    type: str
    content: str
    box: tuple[int, int, int, int]
    image_id: str | None = None
    cells: list[list[str]] | None = None  # a table's rows
    confidences: tuple[float, ...] = ()  # of its words, in order


@dataclass(slots=True)
class Layout:
    markdown: str
    blocks: list[Block]
    # Every word in the order the markdown has it, with the confidence of the text it came from.
    words: list[tuple[str, float]]


def _extent(rows: Sequence[_Row]) -> tuple[int, int, int, int]:
    cells = [cell for row in rows for cell in row.cells]
    return (
        round(min(c.box[0] for c in cells)),
        round(min(c.box[1] for c in cells)),
        round(max(c.box[2] for c in cells)),
        round(max(c.box[3] for c in cells)),
    )


def _words(rows: Sequence[_Row]) -> list[tuple[str, float]]:
    return [
        (word, cell.confidence) for row in rows for cell in row.cells for word in cell.text.split()
    ]


def lay_out(fragments: Sequence[Fragment]) -> Layout:
    """The page's blocks in reading order, and its markdown: the blocks separated by blank lines."""
    rows = _rows(fragments)
    body = _body_size(rows)
    blocks: list[Block] = []
    words: list[tuple[str, float]] = []
    paragraph: list[_Row] = []

    def emit(kind: str, content: str, block_rows: Sequence[_Row], image: str | None = None) -> None:
        cells = [[c.text for c in r.cells] for r in block_rows] if kind == "table" else None
        block_words = _words(block_rows)
        confidences = tuple(confidence for _, confidence in block_words)
        blocks.append(Block(kind, content, _extent(block_rows), image, cells, confidences))
        words.extend(block_words)

    def flush() -> None:
        if paragraph:
            emit("text", " ".join(row.text for row in paragraph), paragraph)
            paragraph.clear()

    i = 0
    while i < len(rows):
        row = rows[i]
        if row.image is not None:
            flush()
            emit("image", f"![{row.image}]({row.image})", [row], row.image)
            i += 1
            continue
        table = [row]
        while i + len(table) < len(rows) and _continues_table(table[-1], rows[i + len(table)]):
            table.append(rows[i + len(table)])
        if len(table) >= 2:
            flush()
            emit("table", _table_markdown(table), table)
            i += len(table)
            continue
        level = _heading_level(row.size, body)
        if level and len(row.text) <= _HEADING_MAX_CHARS:
            flush()
            emit("title", "#" * level + " " + row.text, [row])
            i += 1
            continue
        if paragraph:
            previous = paragraph[-1]
            gap = row.top - previous.bottom
            if gap > _PARAGRAPH_GAP * max(row.size, previous.size) or (
                abs(row.size - previous.size) > 0.2 * max(row.size, previous.size)
            ):
                flush()
        paragraph.append(row)
        i += 1
    flush()
    return Layout("\n\n".join(block.content for block in blocks), blocks, words)


def to_markdown(fragments: Sequence[Fragment]) -> str:
    """The page's markdown only."""
    return lay_out(fragments).markdown
