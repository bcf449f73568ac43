"""The index of document libraries: writes, hybrid search, library filtering (SQLite and
Postgres)."""

from __future__ import annotations

import numpy as np
import pytest
from sqlalchemy import func, select, text

from maestrale.core.db import Database, sqlite_can_load_extensions, sqlite_vec_path
from maestrale.core.ids import new_id
from maestrale.libraries import index
from maestrale.libraries.index.tables import LibraryChunk
from tests.libraries.index.helpers import DIM, MODEL, Chunk, filler, put, unit

pytestmark = pytest.mark.both_databases(
    "maestrale.libraries.index.repository",
    "maestrale.libraries.index.keyword_repository",
    "maestrale.libraries.index.vector_repository",
)


async def _count(db: Database, **where: str) -> int:
    async with db.transaction() as work:
        query = select(func.count()).select_from(LibraryChunk)
        for column, value in where.items():
            query = query.where(getattr(LibraryChunk, column) == value)
        return int((await work.session.execute(query)).scalar_one())


async def test_a_keyword_only_match_and_a_vector_only_match_are_both_found(db: Database) -> None:
    rng = np.random.default_rng(1)
    library, document = new_id(), new_id()
    texts = filler(rng, 60)
    texts[17] = "the quarterly revenue of the zephyr project grew by a third"
    vectors = unit(rng, 60)
    query_vector = vectors[42] + 0.01 * unit(rng, 1)[0]  # chunk 42: nearest by far
    async with db.transaction() as work:
        await put(work.session, library, document, texts, vectors)
    async with db.transaction() as work:
        hits = await index.search(
            work.session,
            library_ids=[library],
            query="Zephyr?",
            vector=query_vector,
            model=MODEL,
            limit=2,
        )
    assert {hit.text for hit in hits} == {texts[17], texts[42]}
    assert all(isinstance(hit, index.Hit) and hit.score > 0 for hit in hits)
    found = {hit.text: hit for hit in hits}[texts[17]]
    assert (found.library_id, found.document_id) == (library, document)
    assert (found.page, found.start, found.end) == (1 + 17 // 3, 170, 179)


async def test_the_vector_side_ranks_by_cosine(db: Database) -> None:
    rng = np.random.default_rng(2)
    library = new_id()
    vectors = unit(rng, 300)
    texts = [f"chunk number {i}" for i in range(300)]
    async with db.transaction() as work:
        await put(work.session, library, new_id(), texts, vectors)
    for target in (0, 123, 299):
        async with db.transaction() as work:
            hits = await index.search(
                work.session,
                library_ids=[library],
                query="",
                vector=vectors[target] * 3.0,
                model=MODEL,
                limit=5,
            )
        assert hits[0].text == texts[target]
        expected = np.argsort(-(vectors @ vectors[target]))[:5]
        assert [hit.text for hit in hits] == [texts[i] for i in expected]


async def test_keywords_alone_rank_by_relevance(db: Database) -> None:
    library = new_id()
    texts = [
        "apples and oranges",
        "a treatise on pears",
        "pears pears pears, and more pears",
        "nothing to see here",
    ]
    async with db.transaction() as work:
        await put(work.session, library, new_id(), texts, unit(np.random.default_rng(3), 4))
    async with db.transaction() as work:
        hits = await index.search(
            work.session, library_ids=[library], query="PEARS", vector=None, model=MODEL, limit=10
        )
    assert [hit.text for hit in hits] == [texts[2], texts[1]]


async def test_a_chunk_of_another_library_is_never_returned(db: Database) -> None:
    rng = np.random.default_rng(4)
    mine, theirs, third = new_id(), new_id(), new_id()
    vectors = unit(rng, 5)
    texts = ["secret merger plans", *filler(rng, 4)]
    async with db.transaction() as work:
        # The other libraries hold the very same chunks (same text, same vectors) and more.
        await put(work.session, theirs, new_id(), texts * 3, np.vstack([vectors] * 3))
        await put(work.session, third, new_id(), texts, vectors)
        await put(work.session, mine, new_id(), ["merger of nothing", "plain words"], unit(rng, 2))
    async with db.transaction() as work:
        hits = await index.search(
            work.session,
            library_ids=[mine],
            query="secret merger plans",
            vector=vectors[0],
            model=MODEL,
            limit=50,
        )
        assert {hit.library_id for hit in hits} == {mine}
        assert len(hits) == 2
        both = await index.search(
            work.session,
            library_ids=[mine, third],
            query="secret merger plans",
            vector=vectors[0],
            model=MODEL,
            limit=50,
        )
        assert {hit.library_id for hit in both} == {mine, third}
        assert both[0].library_id == third and both[0].text == texts[0]
        assert (
            await index.search(
                work.session,
                library_ids=[new_id()],
                query="merger",
                vector=vectors[0],
                model=MODEL,
                limit=5,
            )
            == []
        )


async def test_vectors_of_another_model_are_not_compared(db: Database) -> None:
    rng = np.random.default_rng(5)
    library = new_id()
    vectors = unit(rng, 3)
    async with db.transaction() as work:
        await put(work.session, library, new_id(), ["one", "two", "three"], vectors, model="other")
        await put(work.session, library, new_id(), ["four"], unit(rng, 1))
    async with db.transaction() as work:
        hits = await index.search(
            work.session, library_ids=[library], query="", vector=vectors[0], model=MODEL, limit=5
        )
        assert [hit.text for hit in hits] == ["four"]
        hits = await index.search(
            work.session,
            library_ids=[library],
            query="two",
            vector=vectors[0],
            model=MODEL,
            limit=5,
        )
        assert {hit.text for hit in hits} == {"two", "four"}


async def test_replace_delete_document_and_library(db: Database) -> None:
    rng = np.random.default_rng(6)
    library, other = new_id(), new_id()
    doc_a, doc_b, doc_c = new_id(), new_id(), new_id()
    async with db.transaction() as work:
        await put(work.session, library, doc_a, ["old text of a", "more old text"], unit(rng, 2))
        await put(work.session, library, doc_b, ["text of b"], unit(rng, 1))
        await put(work.session, other, doc_c, ["text of c"], unit(rng, 1))
    new_vectors = unit(rng, 3)
    async with db.transaction() as work:
        await put(
            work.session, library, doc_a, ["new a one", "new a two", "new a three"], new_vectors
        )
    assert await _count(db, document_id=doc_a) == 3
    async with db.transaction() as work:
        hits = await index.search(
            work.session,
            library_ids=[library],
            query="old",
            vector=new_vectors[1],
            model=MODEL,
            limit=10,
        )
    assert hits[0].text == "new a two"
    assert not any("old" in hit.text for hit in hits)

    async with db.transaction() as work:
        await index.delete_document(work.session, library, doc_a)
    assert await _count(db, document_id=doc_a) == 0
    assert await _count(db, library_id=library) == 1
    async with db.transaction() as work:
        hits = await index.search(
            work.session,
            library_ids=[library],
            query="new text",
            vector=new_vectors[1],
            model=MODEL,
            limit=10,
        )
    assert [hit.text for hit in hits] == ["text of b"]

    async with db.transaction() as work:
        await index.delete_library(work.session, library)
    assert await _count(db, library_id=library) == 0
    assert await _count(db, library_id=other) == 1
    async with db.transaction() as work:
        assert (
            await index.search(
                work.session,
                library_ids=[library],
                query="text",
                vector=new_vectors[0],
                model=MODEL,
                limit=5,
            )
            == []
        )
        # An empty document: nothing indexed, nothing left of what it had.
        await put(work.session, other, doc_c, [], np.empty((0, DIM), dtype=np.float32))
    assert await _count(db, library_id=other) == 0


async def test_many_chunks_keep_their_places(db: Database) -> None:
    """More chunks than one insert batch: each row keeps its chunk's text, place and vector."""
    rng = np.random.default_rng(7)
    library = new_id()
    count = 1234
    vectors = unit(rng, count)
    texts = [f"passage {i} word{i}" for i in range(count)]
    async with db.transaction() as work:
        await put(work.session, library, new_id(), texts, vectors)
    async with db.transaction() as work:
        for i in (0, 499, 500, 1233):
            hits = await index.search(
                work.session,
                library_ids=[library],
                query=f"word{i}",
                vector=vectors[i],
                model=MODEL,
                limit=1,
            )
            assert [(hit.text, hit.start) for hit in hits] == [(texts[i], 10 * i)]


async def test_text_the_databases_refuse_is_stored_cleaned(db: Database) -> None:
    library = new_id()
    texts = ["nul\x00inside", "lone \ud800 surrogate", "ünïcödé façade"]
    async with db.transaction() as work:
        await put(work.session, library, new_id(), texts, unit(np.random.default_rng(8), 3))
    async with db.transaction() as work:
        hits = await index.search(
            work.session,
            library_ids=[library],
            query="surrogate façade nul",
            vector=None,
            model=MODEL,
            limit=5,
        )
    assert sorted(hit.text for hit in hits) == sorted(
        ["nul\ufffdinside", "lone \ufffd surrogate", "ünïcödé façade"]
    )


async def test_bad_writes_are_refused(db: Database) -> None:
    rng = np.random.default_rng(9)
    async with db.transaction() as work:
        with pytest.raises(ValueError, match="3 vectors for 2 chunks"):
            await put(work.session, new_id(), new_id(), ["a", "b"], unit(rng, 3))
        with pytest.raises(ValueError, match="finite"):
            await put(
                work.session, new_id(), new_id(), ["a"], np.full((1, DIM), np.nan, np.float32)
            )
        with pytest.raises(ValueError, match="bad library_id"):
            await put(work.session, "x" * 37, new_id(), ["a"], unit(rng, 1))
        with pytest.raises(ValueError, match="bad embedding model"):
            await put(work.session, new_id(), new_id(), ["a"], unit(rng, 1), model="")


async def test_degenerate_searches_return_nothing(db: Database) -> None:
    rng = np.random.default_rng(10)
    library = new_id()
    async with db.transaction() as work:
        await put(work.session, library, new_id(), ["some words"], unit(rng, 1))
    async with db.transaction() as work:
        for kwargs in (
            {"library_ids": [], "query": "words", "limit": 5},
            {"library_ids": [library], "query": "words", "limit": 0},
            {"library_ids": [library], "query": "words", "limit": -3},
            {"library_ids": [library], "query": "", "limit": 5},
        ):
            hits = await index.search(work.session, vector=None, model=MODEL, **kwargs)  # type: ignore[arg-type]
            assert hits == []
        # A vector of another width, of zeros, of NaN: no vector side, the keywords still work.
        for vector in (unit(rng, 1, DIM + 1)[0], np.zeros(DIM), np.full(DIM, np.nan), [[1.0, 2.0]]):
            hits = await index.search(
                work.session,
                library_ids=[library],
                query="words",
                vector=vector,
                model=MODEL,
                limit=5,
            )
            assert [hit.text for hit in hits] == ["some words"]


async def test_sqlite_vec_is_used_where_python_can_load_it(db: Database) -> None:
    async with db.transaction() as work:
        backend = await index.vector_backend(work.session)
        if db.is_sqlite:
            if sqlite_can_load_extensions() and sqlite_vec_path() is not None:
                assert backend is index.VectorBackend.SQLITE_VEC
            else:
                assert backend is index.VectorBackend.EXACT
            if backend is not index.VectorBackend.SQLITE_VEC:
                return
            await put(
                work.session, new_id(), new_id(), ["indexed"], unit(np.random.default_rng(11), 1)
            )
            rows = await work.session.execute(
                text(f"SELECT count(*) FROM library_chunk_vectors_{DIM}_i8")
            )
            assert rows.scalar_one() == 1
        else:
            pgvector = (
                await work.session.execute(
                    text("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
                )
            ).first()
            expected = index.VectorBackend.PGVECTOR if pgvector else index.VectorBackend.EXACT
            assert backend is expected


def test_a_chunk_needs_only_its_attributes() -> None:
    chunk: index.ChunkLike = Chunk(index=0, page=1, start=0, end=1, text="x")
    assert chunk.text == "x"


async def test_words_in_most_chunks_are_left_out_of_a_large_index(db: Database) -> None:
    """On a large index, a word held by more than half the chunks (which bm25 weighs at ~0)
    does not make every chunk a keyword match; a query of such words alone still searches."""
    rng = np.random.default_rng(12)
    library = new_id()
    count = 1200
    texts = [f"common filler {i}" for i in range(count)]
    texts[7] = "common filler with a rare word"
    async with db.transaction() as work:
        await put(work.session, library, new_id(), texts, unit(rng, count))
        if not db.is_sqlite:
            await work.session.execute(text("ANALYZE library_chunks"))
    async with db.transaction() as work:
        hits = await index.search(
            work.session,
            library_ids=[library],
            query="common rare",
            vector=None,
            model=MODEL,
            limit=5,
        )
        assert [hit.text for hit in hits] == [texts[7]]
        hits = await index.search(
            work.session,
            library_ids=[library],
            query="common filler",
            vector=None,
            model=MODEL,
            limit=5,
        )
        assert len(hits) == 5
    # A small library beside the large one: its match is narrowed to it in the index.
    small = new_id()
    async with db.transaction() as work:
        await put(work.session, small, new_id(), ["common rare", "common only"], unit(rng, 2))
        if not db.is_sqlite:
            await work.session.execute(text("ANALYZE library_chunks"))
    async with db.transaction() as work:
        hits = await index.search(
            work.session,
            library_ids=[small],
            query="common rare",
            vector=None,
            model=MODEL,
            limit=5,
        )
        assert [hit.text for hit in hits] == ["common rare"]
        hits = await index.search(
            work.session,
            library_ids=[small, library],
            query="rare",
            vector=None,
            model=MODEL,
            limit=5,
        )
        assert sorted(hit.text for hit in hits) == sorted(["common rare", texts[7]])


async def test_a_library_s_keyword_match_outranked_by_another_library_s_is_found(
    db: Database,
) -> None:
    rng = np.random.default_rng(13)
    mine, theirs = new_id(), new_id()
    texts = [f"common filler {i}" for i in range(1200)]
    texts[7] = "common filler with one rare word among many others"
    async with db.transaction() as work:
        await put(work.session, mine, new_id(), texts, unit(rng, len(texts)))
        await put(work.session, theirs, new_id(), ["rare rare"] * 250, unit(rng, 250))
    async with db.transaction() as work:
        hits = await index.search(
            work.session, library_ids=[mine], query="rare", vector=None, model=MODEL, limit=1
        )
    assert [(hit.library_id, hit.text) for hit in hits] == [(mine, texts[7])]
