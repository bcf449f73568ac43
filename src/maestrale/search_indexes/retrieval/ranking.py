"""The two rankings of an index's chunks, by the libraries' index (one store for both APIs):
nearest neighbours of a vector, and keyword matches of a query. Both give chunk ids, best
first, of the index's chunks only (its id is the library id they are filtered on)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.libraries.index import keyword
from maestrale.libraries.index.search import vector_ranking
from maestrale.search_indexes.retrieval.chunks import IndexView

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray


async def nearest(
    session: AsyncSession, index: IndexView, query: NDArray[np.float32], n: int
) -> list[int]:
    """The `n` chunks nearest to `query` (a unit vector of the index's dimension), by the
    libraries' vector ranking (it may write: chunks written without the extension are added to
    its table first)."""
    return await vector_ranking(session, [index.id], index.model, query, n)


async def keywords(session: AsyncSession, index: IndexView, query: str, n: int) -> list[int]:
    """The `n` chunks that best match `query`'s words (bm25 on SQLite, ts_rank on Postgres)."""
    return await keyword.ranking(session, library_ids=[index.id], query=query, n=n)


def terms(query: str) -> list[str]:
    """The words of a query as the keyword engine reads them (lower-cased, distinct)."""
    return keyword.terms(query)
