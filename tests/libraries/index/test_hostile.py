"""Queries that would break a full-text engine's query language, or a driver, never raise."""

from __future__ import annotations

import numpy as np
import pytest

from maestrale.core.db import Database
from maestrale.core.ids import new_id
from maestrale.libraries import index
from maestrale.libraries.index.keyword import MAX_TERMS, terms
from tests.libraries.index.helpers import MODEL, put, unit

# Postgres' own keyword search (tsquery, ANALYZE's frequent lexemes) on hostile and edge queries.
pytestmark = pytest.mark.both_databases("maestrale.libraries.index.keyword_repository")

HOSTILE = [
    "",
    "   \t\n",
    '"',
    '"unbalanced',
    "'single' quotes'",
    "a AND OR NOT b",
    "NEAR(a b, 3)",
    "text : column filter",
    "{text}: x",
    "prefix* ^first -minus +plus",
    "(((",
    ")",
    "a & b | !c <-> d",
    "col:term",
    "nul\x00byte",
    "lone \ud800 surrogate \udfff",
    "\ud83d",
    "___ __ _",
    "émoji 🤖 naïve façade",
    "x" * 100_000,
    "word " * 20_000,
    " ".join(f"w{i}" for i in range(5000)),
    "OR or Or",
    "%_\\",
    "'; DROP TABLE library_chunks; --",
]


@pytest.mark.parametrize("query", HOSTILE, ids=range(len(HOSTILE)))
async def test_a_hostile_query_never_raises(db: Database, query: str) -> None:
    rng = np.random.default_rng(1)
    library = new_id()
    vectors = unit(rng, 3)
    texts = ["column filter text", "naïve façade word", "the minus and plus signs"]
    async with db.transaction() as work:
        await put(work.session, library, new_id(), texts, vectors)
    async with db.transaction() as work:
        hits = await index.search(
            work.session,
            library_ids=[library],
            query=query,
            vector=vectors[0],
            model=MODEL,
            limit=2,
        )
        # The vector side answers whatever the text (whose words may rank another chunk first).
        assert texts[0] in {hit.text for hit in hits}
        await index.search(
            work.session, library_ids=[library], query=query, vector=None, model=MODEL, limit=3
        )


async def test_hostile_words_still_find_what_they_name(db: Database) -> None:
    library = new_id()
    texts = ["column filter text", "naïve façade word", "the minus and plus signs"]
    async with db.transaction() as work:
        await put(work.session, library, new_id(), texts, unit(np.random.default_rng(2), 3))
    async with db.transaction() as work:
        for query, expected in (
            ("text : column filter", texts[0]),
            ('"naïve', texts[1]),
            ("-minus", texts[2]),
            ("NEAR(filter", texts[0]),
        ):
            hits = await index.search(
                work.session, library_ids=[library], query=query, vector=None, model=MODEL, limit=1
            )
            assert [hit.text for hit in hits] == [expected], query


def test_the_words_of_a_query_are_bounded() -> None:
    assert terms('Hello, "World"! hello') == ["hello", "world"]
    assert terms("a\x00b \ud800c") == ["a", "b", "c"]
    assert terms("x" * 100_000) == []
    assert len(terms(" ".join(f"w{i}" for i in range(5000)))) == MAX_TERMS
    assert terms("__ _x_") == ["_x_"]


async def test_odd_library_ids_neither_raise_nor_leak(db: Database) -> None:
    rng = np.random.default_rng(3)
    odd = ['quo"te', "---", "two words", "OR", "a-b", "ab"]
    vectors = unit(rng, len(odd))
    async with db.transaction() as work:
        for library, vector in zip(odd, vectors, strict=True):
            await put(
                work.session, library, new_id(), [f"shared words of {library}"], vector[None, :]
            )
    async with db.transaction() as work:
        for library, vector in zip(odd, vectors, strict=True):
            hits = await index.search(
                work.session,
                library_ids=[library],
                query="shared words",
                vector=vector,
                model=MODEL,
                limit=5,
            )
            assert [hit.library_id for hit in hits] == [library]
            hits = await index.search(
                work.session,
                library_ids=[library],
                query="shared words",
                vector=None,
                model=MODEL,
                limit=5,
            )
            assert {hit.library_id for hit in hits} <= {library}


async def test_hostile_library_ids_and_models_find_nothing(db: Database) -> None:
    rng = np.random.default_rng(4)
    library = new_id()
    vectors = unit(rng, 1)
    async with db.transaction() as work:
        await put(work.session, library, new_id(), ["some words"], vectors)
    async with db.transaction() as work:
        for ids in (["nul\x00"], ["\ud800"], ["x" * 10_000], [""], [library + "\x00"]):
            hits = await index.search(
                work.session,
                library_ids=ids,
                query="words",
                vector=vectors[0],
                model=MODEL,
                limit=5,
            )
            assert hits == []
        for model in ("nul\x00", "\udfff", "m" * 1000, ""):
            hits = await index.search(
                work.session,
                library_ids=[library],
                query="",
                vector=vectors[0],
                model=model,
                limit=5,
            )
            assert hits == []
