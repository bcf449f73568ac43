"""Pages of text into chunks for the index: about `chunk_size` tokens each, cut where the text
itself breaks (between paragraphs, else lines, else sentences, else words), consecutive chunks
sharing a little text so that a passage cut in two is still found whole in one of them.

A chunk never spans two pages: each knows its page (1-based) and its character offsets in that
page's text, so that `pages[page - 1][start:end] == text` and a citation can point into the
page. Tokens are estimated from characters (about four per token in European languages):
chunking needs no tokenizer and gives the same chunks whatever the embeddings model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["DEFAULT_CHUNK_SIZE", "Chunk", "chunk", "chunk_chars"]

DEFAULT_CHUNK_SIZE = 512  # tokens, when the library does not say
CHARS_PER_TOKEN = 4
# Bounds of a chunk size, in tokens: a tiny one makes a document thousands of chunks, a huge
# one dilutes every passage in its neighbours.
MIN_CHUNK_SIZE = 32
MAX_CHUNK_SIZE = 8192
# The share of a chunk the next one repeats.
OVERLAP = 0.125
# A cut at a stronger break is taken when the chunk is at least this full.
_PREFER_FULL = 0.5

# Breaks, strongest first: a span longer than a chunk is cut at the strongest kind it has.
_PARAGRAPH = re.compile(r"\n[ \t]*\n\s*")
_LINE = re.compile(r"\n\s*")
# Sentence ends and the closing quotes or brackets after them: followed by a space in most
# scripts, by nothing after the CJK full stop and fullwidth marks.
_SENTENCE = re.compile(
    "(?<=[.!?;:\u2026])[\"'\u201d\u2019)\\]]*\\s+|(?<=[\u3002\uff01\uff1f])[\u300d\u300f)]*\\s*"
)
_WORD = re.compile(r"\s+")
_BREAKS = (_PARAGRAPH, _LINE, _SENTENCE, _WORD)


@dataclass(frozen=True, slots=True)
class Chunk:
    """A chunk of a document: its place among the document's chunks (`index`, from 0), its page
    (from 1), and where it lies in that page's text (`start`, `end`: character offsets)."""

    index: int
    page: int
    start: int
    end: int
    text: str


def chunk_chars(chunk_size: int | None) -> int:
    """The longest chunk, in characters, for a chunk size in tokens (None: the default)."""
    tokens = DEFAULT_CHUNK_SIZE if chunk_size is None else chunk_size
    return min(max(tokens, MIN_CHUNK_SIZE), MAX_CHUNK_SIZE) * CHARS_PER_TOKEN


@dataclass(frozen=True, slots=True)
class _Piece:
    start: int
    end: int
    strength: int  # of the break at its end: 4 paragraph, 3 line, 2 sentence, 1 word, 0 none


def _pieces(text: str, start: int, end: int, limit: int, level: int) -> list[_Piece]:
    """[start, end) of `text` as pieces no longer than `limit`, cut at the strongest breaks
    found from `level` on; each piece ends with the break that follows it."""
    fits = end - start <= limit
    # A span that fits is still cut into sentences (finer overlaps), not into words.
    for depth in range(level, len(_BREAKS) - 1 if fits else len(_BREAKS)):
        cuts = [m.end() for m in _BREAKS[depth].finditer(text, start, end) if start < m.end() < end]
        if not cuts:
            continue
        strength = len(_BREAKS) - depth
        pieces: list[_Piece] = []
        for left, right in zip([start, *cuts], [*cuts, end], strict=True):
            inner = _pieces(text, left, right, limit, depth + 1)
            last = inner[-1]
            inner[-1] = _Piece(last.start, last.end, strength if right != end else 0)
            pieces.extend(inner)
        return pieces
    if fits:
        return [_Piece(start, end, 0)]
    # No break at all (a long token, a line of base64): cut blindly.
    return [_Piece(i, min(i + limit, end), 0) for i in range(start, end, limit)]


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _page_spans(text: str, limit: int) -> list[tuple[int, int]]:
    """The (start, end) of the chunks of one page's text."""
    pieces = _pieces(text, 0, len(text), limit, 0)
    overlap = int(limit * OVERLAP)
    spans: list[tuple[int, int]] = []
    first = 0
    while first < len(pieces):
        begin = pieces[first].start
        last = first
        while last + 1 < len(pieces) and pieces[last + 1].end - begin <= limit:
            last += 1
        if last + 1 < len(pieces):
            # Not the page's end: end at the strongest break of the chunk's second half.
            best = last
            for i in range(last, first - 1, -1):
                if pieces[i].end - begin < _PREFER_FULL * limit:
                    break
                if pieces[i].strength > pieces[best].strength:
                    best = i
            last = best
        spans.append((begin, pieces[last].end))
        if last + 1 >= len(pieces):
            break
        # The next chunk starts with the last pieces of this one that fit in the overlap.
        # (At least its last piece when that is short: small chunks overlap too.)
        following = last + 1
        tail = pieces[last].end - pieces[last].start
        budget = max(overlap, tail) if tail <= 2 * overlap else overlap
        while following - 1 > first and pieces[last].end - pieces[following - 1].start <= budget:
            following -= 1
        first = following
    return spans


def chunk(pages: list[str], chunk_size: int | None) -> list[Chunk]:
    """The chunks of a document's pages, in page order; blank text makes none."""
    limit = chunk_chars(chunk_size)
    chunks: list[Chunk] = []
    for number, text in enumerate(pages, start=1):
        for span_start, span_end in _page_spans(text, limit):
            start, end = _trimmed(text, span_start, span_end)
            if start < end:
                chunks.append(Chunk(len(chunks), number, start, end, text[start:end]))
    return chunks
