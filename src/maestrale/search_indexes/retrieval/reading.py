"""Reading a source of an index as an agent does: the chunks next to a span (`navigate`), the
chunks within a span (`read`), the chunks that hold a pattern (`grep`), one chunk by id.

Every answer is in reading order (ascending start_offset). A source with no chunk is a 404
`source_not_found`; a source whose chunks none match is an empty list (a span past the end
included)."""

from __future__ import annotations

from maestrale.search_indexes.errors import ChunkNotFound, InvalidRetriever, SourceNotFound
from maestrale.search_indexes.retrieval import grep as grep_matching
from maestrale.search_indexes.retrieval.chunks import (
    CONTENT,
    INT64_MAX,
    C,
    ChunkReader,
    ContextChunk,
    IndexView,
)
from maestrale.search_indexes.tables import SearchIndexDocument

MAX_TOP_K = 1000
# Chunks read (and matched) per step of a grep.
GREP_BATCH = 500


def _bad(message: str, param: str) -> InvalidRetriever:
    return InvalidRetriever(message, param=param)


def check(index: IndexView, top_k: int, content_type: str) -> None:
    """top_k within 1..MAX_TOP_K; `content_type` "content" (the chunk's text) or the name of
    a text chunk field of the index."""
    if not 1 <= top_k <= MAX_TOP_K:
        raise _bad(f"top_k must be between 1 and {MAX_TOP_K}", "top_k")
    if content_type != CONTENT and index.chunk_field_type(content_type) != "text":
        raise _bad(
            f"content_type must be 'content' or a text chunk field, not {content_type[:100]!r}",
            "content_type",
        )


def _offset(value: int | None, param: str) -> int | None:
    if value is not None and not 0 <= value <= INT64_MAX:
        raise _bad(f"{param} must be an offset from 0 to 2^63 - 1", param)
    return value


async def source(reader: ChunkReader, source_id: str) -> SearchIndexDocument:
    """The document of `source_id`, which has chunks (404 `source_not_found` otherwise)."""
    document = await reader.document(source_id)
    if document is None or not await reader.has_chunks(document):
        raise SourceNotFound(
            f"the index has no chunk of source {source_id[:200]!r}", param="source_id"
        )
    return document


async def navigate(
    reader: ChunkReader, source_id: str, start: int, end: int, direction: str, top_k: int
) -> list[ContextChunk]:
    """`next`: the top_k first chunks starting at or after `end`; `previous`: the top_k last
    chunks ending at or before `start` (the nearest ones), in reading order."""
    _offset(start, "start_offset")
    _offset(end, "end_offset")
    document = await source(reader, source_id)
    if direction == "next":
        return await reader.in_source(document, C.start_offset >= end, limit=top_k)
    nearest = await reader.in_source(
        document,
        C.end_offset <= start,
        order=(C.end_offset.desc(), C.start_offset.desc(), C.id.desc()),
        limit=top_k,
    )
    return sorted(nearest, key=lambda chunk: (chunk.start, chunk.id))


async def read(
    reader: ChunkReader, source_id: str, start: int | None, end: int | None, top_k: int
) -> list[ContextChunk]:
    """The top_k first chunks lying within [start, end) (either bound open when None)."""
    _offset(start, "start_offset")
    _offset(end, "end_offset")
    if start is not None and end is not None and end < start:
        raise _bad("end_offset must not be before start_offset", "end_offset")
    document = await source(reader, source_id)
    conditions = []
    if start is not None:
        conditions.append(C.start_offset >= start)
    if end is not None:
        conditions.append(C.end_offset <= end)
    return await reader.in_source(document, *conditions, limit=top_k)


async def grep(
    reader: ChunkReader,
    source_id: str,
    matcher: grep_matching.Matcher,
    top_k: int,
    content_type: str,
) -> list[ContextChunk]:
    """The top_k first chunks (in reading order) whose `content_type` text `matcher` finds,
    the source read GREP_BATCH chunks at a time, within the matcher's time budget."""
    document = await source(reader, source_id)
    found: list[ContextChunk] = []
    after: tuple[int, int] = (-1, 0)
    while len(found) < top_k:
        batch = await reader.in_source(
            document,
            (C.start_offset > after[0]) | ((C.start_offset == after[0]) & (C.id > after[1])),
            limit=GREP_BATCH,
        )
        found.extend(c for c in batch if matcher.search(c.content(content_type)))
        if len(batch) < GREP_BATCH:
            break
        after = (batch[-1].start, batch[-1].id)
    return found[:top_k]


async def chunk(reader: ChunkReader, chunk_id: str) -> ContextChunk:
    """The index's chunk `chunk_id` (404 `chunk_not_found` for any other id)."""
    number = int(chunk_id) if chunk_id.isascii() and chunk_id.isdigit() else 0
    found = await reader.by_ids([number]) if 0 < number <= INT64_MAX else {}
    if number not in found:
        raise ChunkNotFound(f"no chunk {chunk_id[:100]!r} in the index", param="chunk_id")
    return found[number]
