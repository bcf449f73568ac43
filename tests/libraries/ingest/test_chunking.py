"""Chunks: their page and offsets point at their text, their size follows the chunk size, they
end where the text breaks, consecutive chunks overlap, and nothing of a page is lost."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maestrale.libraries.ingest.chunking import (
    CHARS_PER_TOKEN,
    DEFAULT_CHUNK_SIZE,
    MAX_CHUNK_SIZE,
    MIN_CHUNK_SIZE,
    Chunk,
    chunk,
    chunk_chars,
)

SENTENCES = [
    "The harbour handled more ships this year than ever.",
    "Container traffic rose by twelve percent!",
    "Was the new northern quay opened in April?",
    "Fishing boats kept their berths in the old basin; the channel was dredged twice.",
    "Revenue grew with traffic.",
]


def prose(seed: int, paragraphs: int) -> str:
    rng = random.Random(seed)
    return "\n\n".join(
        " ".join(rng.choice(SENTENCES) for _ in range(rng.randint(1, 12)))
        for _ in range(paragraphs)
    )


def check(pages: list[str], chunks: list[Chunk], limit: int) -> None:
    """Offsets exact, indexes in order, sizes bounded, and every word of every page covered."""
    assert [c.index for c in chunks] == list(range(len(chunks)))
    assert [c.page for c in chunks] == sorted(c.page for c in chunks)
    covered: dict[int, list[bool]] = {n: [False] * len(p) for n, p in enumerate(pages, 1)}
    for c in chunks:
        assert 1 <= c.page <= len(pages)
        assert pages[c.page - 1][c.start : c.end] == c.text
        assert c.text == c.text.strip() and c.text
        assert len(c.text) <= limit
        covered[c.page][c.start : c.end] = [True] * (c.end - c.start)
    for number, page in enumerate(pages, 1):
        missed = [i for i, ch in enumerate(page) if not ch.isspace() and not covered[number][i]]
        assert not missed, f"page {number}: {page[missed[0] : missed[0] + 40]!r} is in no chunk"


def test_offsets_sizes_and_coverage_on_prose() -> None:
    pages = [prose(seed, 8) for seed in range(5)]
    for size in (None, 32, 64, 200, 1000):
        chunks = chunk(pages, size)
        check(pages, chunks, chunk_chars(size))


def test_chunks_end_at_sentence_or_paragraph_breaks() -> None:
    pages = [prose(7, 20)]
    chunks = chunk(pages, 64)
    assert len(chunks) > 5
    for c in chunks[:-1]:
        assert c.text[-1] in ".!?;", c.text[-40:]
        assert c.text[0].isupper() or c.text[0] == "t", c.text[:40]


def test_paragraph_breaks_are_preferred_when_the_chunk_is_half_full() -> None:
    first = " ".join(SENTENCES)  # ~250 characters
    second = " ".join(SENTENCES[::-1])
    page = f"{first}\n\n{second}"
    chunks = chunk([page], 100)  # 400 characters: both paragraphs do not fit in one
    assert chunks[0].text == first
    assert chunks[1].text.endswith(second)


def test_consecutive_chunks_overlap() -> None:
    page = " ".join(SENTENCES * 40)
    for size in (64, 200):
        chunks = chunk([page], size)
        assert len(chunks) > 3
        for before, after in itertools.pairwise(chunks):
            assert after.start < before.end  # the next chunk repeats the end of this one
            assert after.start > before.start  # and moves on
            assert before.end - after.start <= chunk_chars(size) // 4


def test_a_chunk_never_spans_two_pages() -> None:
    pages = ["First page, short.", "", "   \n ", "Third page. " * 200]
    chunks = chunk(pages, 64)
    assert chunks[0] == Chunk(0, 1, 0, 18, "First page, short.")
    assert {c.page for c in chunks} == {1, 4}
    check(pages, chunks, chunk_chars(64))


def test_text_without_breaks_is_cut_blindly() -> None:
    token = "A" * 1000
    chunks = chunk([f"Start. {token} End."], 32)
    check([f"Start. {token} End."], chunks, chunk_chars(32))
    assert max(len(c.text) for c in chunks) == chunk_chars(32)


def test_lines_of_a_table_are_kept_whole() -> None:
    rows = "\n".join(f"| row {i} | {i * 10} | {i * 100} |" for i in range(60))
    chunks = chunk([rows], 32)
    for c in chunks:
        assert c.text.startswith("| row") and c.text.endswith("|")


def test_chunk_size_bounds_and_default() -> None:
    assert chunk_chars(None) == DEFAULT_CHUNK_SIZE * CHARS_PER_TOKEN
    assert chunk_chars(1) == MIN_CHUNK_SIZE * CHARS_PER_TOKEN
    assert chunk_chars(10**9) == MAX_CHUNK_SIZE * CHARS_PER_TOKEN
    assert chunk([], None) == []
    assert chunk(["", " "], None) == []


def test_non_latin_text() -> None:
    page = "東京の港は今年、過去最高の船を扱った。" * 40 + "\n\n" + "Ünïcödé 🚢 ships. " * 50
    chunks = chunk([page], 32)
    check([page], chunks, chunk_chars(32))
    assert chunks[0].text.endswith("。")


@settings(max_examples=150, deadline=None)
@given(
    pages=st.lists(
        st.text(alphabet=st.sampled_from(list("ab .!?\n\t,é世")), max_size=600), max_size=4
    ),
    size=st.sampled_from([None, 1, 32, 40, 100]),
)
def test_any_text(pages: list[str], size: int | None) -> None:
    check(pages, chunk(pages, size), chunk_chars(size))


@pytest.mark.parametrize("size", [32, 512])
def test_a_long_document_is_chunked_quickly(size: int) -> None:
    pages = [prose(seed, 40) for seed in range(50)]  # ~1 MB of text
    chunks = chunk(pages, size)
    check(pages[:2], [c for c in chunks if c.page <= 2], chunk_chars(size))
