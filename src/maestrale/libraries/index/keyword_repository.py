"""SQL of the keyword index, one class per dialect: SQLite's FTS5 table over the chunks (bm25),
Postgres's tsvector column (ts_rank). Rankings are scoped to the libraries the repository is
built for; the statistics read to plan a search (how many chunks, how common a word is) are the
whole index's.

`keyword` holds the rules: which words to search for, when to narrow the match to the
libraries, how many to rank.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.libraries.index.tables import (
    CHUNKS,
    CHUNKS_FTS,
    CHUNKS_FTS_VOCAB,
    TEXT_SEARCH_COLUMN,
)


class Fts5Keywords:
    """The FTS5 index on SQLite. `match` arguments are FTS5 queries (built by `keyword`)."""

    def __init__(self, session: AsyncSession, library_ids: Iterable[str]) -> None:
        self.session = session
        self.library_ids = list(dict.fromkeys(library_ids))

    async def id_span(self) -> int | None:
        """The span of the chunk ids (an upper bound of the chunk count); None when empty."""
        span = (
            await self.session.execute(text(f"SELECT max(id) - min(id) + 1 FROM {CHUNKS}"))
        ).scalar()
        return None if span is None else int(span)

    async def chunk_counts(self, terms: Sequence[str]) -> dict[tuple[str, str], int]:
        """`{(column, term): chunks holding it}` of those of `terms` that the index holds."""
        statement = text(
            f"SELECT term, col, doc FROM {CHUNKS_FTS_VOCAB} WHERE term IN :terms"
        ).bindparams(bindparam("terms", expanding=True))
        counts: dict[tuple[str, str], int] = {}
        for term, column, doc in await self.session.execute(statement, {"terms": list(terms)}):
            counts[(str(column), str(term))] = int(doc)
        return counts

    async def best(self, match: str, fetched: int) -> tuple[list[int], int]:
        """Among the `fetched` best matches of the whole index: the ids of the libraries' own,
        best first, and how many matches there were (fewer than `fetched`: all of them)."""
        # The index ranks first, the chunks' libraries are read for the best only: checking
        # the library of every match, before ranking, costs a lookup per match.
        ranked = text(
            f"SELECT f.id, c.library_id FROM (SELECT rowid AS id, bm25({CHUNKS_FTS}, 1.0, 0.0) "
            f"AS score FROM {CHUNKS_FTS} WHERE {CHUNKS_FTS} MATCH :match "
            "ORDER BY score, rowid LIMIT :fetched) AS f "
            f"JOIN {CHUNKS} AS c ON c.id = f.id ORDER BY f.score, f.id"
        )
        rows = (await self.session.execute(ranked, {"match": match, "fetched": fetched})).all()
        wanted = set(self.library_ids)
        return [int(chunk_id) for chunk_id, library_id in rows if library_id in wanted], len(rows)

    async def best_in_libraries(self, match: str, n: int) -> list[int]:
        """The ids of the `n` best matches among the libraries' chunks, best first (each match
        checked for its library)."""
        statement = text(
            f"SELECT c.id FROM {CHUNKS_FTS} JOIN {CHUNKS} AS c ON c.id = {CHUNKS_FTS}.rowid "
            f"WHERE {CHUNKS_FTS} MATCH :match AND c.library_id IN :library_ids "
            f"ORDER BY bm25({CHUNKS_FTS}, 1.0, 0.0), c.id LIMIT :n"
        ).bindparams(bindparam("library_ids", expanding=True))
        params = {"match": match, "library_ids": self.library_ids, "n": n}
        return [int(i) for i in (await self.session.execute(statement, params)).scalars()]


class TsvectorKeywords:
    """Full-text search on Postgres. `query` arguments are `websearch_to_tsquery` texts."""

    def __init__(self, session: AsyncSession, library_ids: Iterable[str]) -> None:
        self.session = session
        self.library_ids = list(dict.fromkeys(library_ids))

    async def lexeme_frequencies(self) -> dict[str, float] | None:
        """`{lexeme: fraction of the chunks holding it}` of the most common lexemes, as ANALYZE
        last found them; None before it ran."""
        found = (
            await self.session.execute(
                text(
                    "SELECT most_common_elems::text::text[], most_common_elem_freqs FROM pg_stats "
                    "WHERE schemaname = current_schema() AND tablename = :table "
                    "AND attname = :column"
                ),
                {"table": CHUNKS, "column": TEXT_SEARCH_COLUMN},
            )
        ).first()
        if found is None or not found[0] or not found[1]:
            return None
        # The frequencies are the lexemes' (in order), then a minimum, a maximum and a null count.
        return dict(zip(found[0], found[1], strict=False))

    async def best(self, query: str, n: int) -> list[int]:
        """The ids of the `n` chunks of the libraries that best match `query`, best first."""
        statement = text(
            f"SELECT c.id FROM {CHUNKS} AS c, websearch_to_tsquery('simple', :query) AS q "
            "WHERE c.library_id IN :library_ids AND c.text_search @@ q "
            "ORDER BY ts_rank(c.text_search, q) DESC, c.id LIMIT :n"
        ).bindparams(bindparam("library_ids", expanding=True))
        params = {"query": query, "library_ids": self.library_ids, "n": n}
        return [int(i) for i in (await self.session.execute(statement, params)).scalars()]
