"""Layout of positioned text into markdown: rows, paragraphs, headings, tables, images."""

from __future__ import annotations

import pytest

from maestrale.core.errors import PayloadTooLarge
from maestrale.ocr.layout import Fragment, lay_out, to_markdown
from maestrale.ocr.pages import InvalidPages, select_pages


def frag(text: str, x: float, y: float, size: float = 20.0, width: float | None = None) -> Fragment:
    w = width if width is not None else len(text) * size * 0.5
    return Fragment(text, (x, y, x + w, y + size), size)


def test_rows_paragraphs_and_heading() -> None:
    fragments = [
        frag("Body line two", 50, 190),
        frag("Title", 50, 40, size=40),
        frag("Body line one", 50, 164),
        frag("Second paragraph", 50, 260),
    ]
    assert to_markdown(fragments) == ("# Title\n\nBody line one Body line two\n\nSecond paragraph")


def test_fragments_of_one_line_join_in_x_order() -> None:
    # An OCR engine may cut a line in pieces, in any order.
    fragments = [frag("world", 130, 100), frag("hello", 50, 102)]
    assert to_markdown(fragments) == "hello world"


def test_aligned_columns_make_a_table() -> None:
    rows = [("Item", "Qty", "Price"), ("Apples", "3", "1.20"), ("Pears", "12", "0.80")]
    fragments = [
        frag(cell, 50 + col * 300, 100 + r * 30)
        for r, row in enumerate(rows)
        for col, cell in enumerate(row)
    ]
    layout = lay_out(fragments)
    assert layout.markdown == (
        "| Item | Qty | Price |\n| --- | --- | --- |\n| Apples | 3 | 1.20 |\n| Pears | 12 | 0.80 |"
    )
    assert [b.type for b in layout.blocks] == ["table"]
    assert layout.blocks[0].cells == [list(row) for row in rows]


def test_one_row_with_a_gap_is_not_a_table() -> None:
    fragments = [frag("Left", 50, 100), frag("Right", 600, 100)]
    assert to_markdown(fragments) == "Left Right"


def test_images_take_their_place_in_reading_order() -> None:
    fragments = [
        frag("Above", 50, 100),
        Fragment("", (50, 150, 400, 400), 0.0, image_id="img-0.jpeg"),
        frag("Below", 50, 450),
    ]
    layout = lay_out(fragments)
    assert layout.markdown == "Above\n\n![img-0.jpeg](img-0.jpeg)\n\nBelow"
    assert layout.blocks[1].image_id == "img-0.jpeg"
    assert layout.blocks[1].box == (50, 150, 400, 400)


def test_same_size_text_has_no_heading() -> None:
    assert to_markdown([frag("Just text", 50, 100), frag("More text", 50, 300)]) == (
        "Just text\n\nMore text"
    )


def test_pipes_in_table_cells_are_escaped() -> None:
    fragments = [
        frag(t, 50 + c * 300, 100 + r * 30) for r in range(2) for c, t in enumerate(["a|b", "c"])
    ]
    assert "| a\\|b | c |" in to_markdown(fragments)


def test_page_selection() -> None:
    assert select_pages(None, 3, 10) == [0, 1, 2]
    assert select_pages([2, 0, 2], 3, 10) == [2, 0]
    assert select_pages("0, 1-2", 3, 10) == [0, 1, 2]
    for bad in ([3], [-1], "2-1", "x", "", []):
        with pytest.raises(InvalidPages):
            select_pages(bad, 3, 10)
    with pytest.raises(PayloadTooLarge):
        select_pages(None, 11, 10)
