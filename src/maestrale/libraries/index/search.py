"""Hybrid search: the vector ranking and the keyword ranking of the chunks of some libraries,
fused by reciprocal rank (each chunk scores the sum of 1 / (60 + its rank) in each ranking).

Only chunks of the libraries asked for ever come back: every query of both sides filters on
them, and the chunks fused are read back under the same filter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.libraries.index import exact, keyword
from maestrale.libraries.index import vectors as vector_tables
from maestrale.libraries.index.capability import connection_backend
from maestrale.libraries.index.repository import ChunkRepository
from maestrale.libraries.index.store import ID_LENGTH, MODEL_LENGTH, normalised, storable

# Reciprocal rank fusion's constant (Cormack et al.): damps the weight of the very first ranks.
RRF_K = 60
MAX_LIMIT = 1000


@dataclass(frozen=True, slots=True)
class Hit:
    """A chunk found: where it lies (library, document, page, offsets in that page's text),
    its text, and its fused score (higher is better)."""

    chunk_id: int
    library_id: str
    document_id: str
    page: int
    start: int
    end: int
    text: str
    score: float


def candidates(limit: int) -> int:
    """How many chunks each side ranks for a search of `limit`: a good deal more, so that a
    chunk ranked modestly by both sides can still win the fusion."""
    return min(max(4 * limit, 50), 2 * MAX_LIMIT)


def fuse(rankings: Sequence[Sequence[int]], k: int = RRF_K) -> list[tuple[int, float]]:
    """Reciprocal rank fusion of rankings of chunk ids (best first): (id, score), best first;
    among equal scores, the chunk ranked best by any side, then the lowest id."""
    scores: dict[int, float] = {}
    best: dict[int, int] = {}
    for ranking in rankings:
        for rank, chunk_id in enumerate(ranking, start=1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + 1.0 / (k + rank)
            best[chunk_id] = min(best.get(chunk_id, rank), rank)
    return sorted(scores.items(), key=lambda item: (-item[1], best[item[0]], item[0]))


async def search(
    session: AsyncSession,
    *,
    library_ids: Sequence[str],
    query: str,
    vector: Any,
    model: str,
    limit: int,
) -> list[Hit]:
    """The `limit` chunks of these libraries that best answer `query` (its words) and
    `vector` (its embedding by `model`; None for keywords only), best first.

    May write: chunks indexed where the vector extension could not be loaded are added to its
    tables here, so the caller's transaction should commit."""
    # Ids no chunk can have (and that a driver would refuse) are no libraries of the index.
    libraries = list(dict.fromkeys(i for i in library_ids if storable(i, ID_LENGTH)))
    limit = min(int(limit), MAX_LIMIT)
    if not libraries or limit <= 0:
        return []
    n = candidates(limit)
    rankings: list[list[int]] = []
    query_vector = _query_vector(vector)
    if query_vector is not None and storable(model, MODEL_LENGTH):
        rankings.append(await vector_ranking(session, libraries, model, query_vector, n))
    if isinstance(query, str):
        rankings.append(await keyword.ranking(session, library_ids=libraries, query=query, n=n))
    fused = fuse(rankings)[:limit]
    if not fused:
        return []
    rows = await ChunkRepository(session, libraries).located([chunk_id for chunk_id, _ in fused])
    return [
        Hit(chunk_id, *rows[chunk_id], score=score) for chunk_id, score in fused if chunk_id in rows
    ]


def _query_vector(vector: Any) -> Any:
    """The query's embedding as a unit float32 vector, or None when there is none to use."""
    if vector is None:
        return None
    try:
        matrix = normalised(vector)
    except (ValueError, TypeError):
        return None
    if matrix.shape[0] != 1 or not matrix.any():
        return None
    return matrix[0]


async def vector_ranking(
    session: AsyncSession, libraries: list[str], model: str, query: Any, n: int
) -> list[int]:
    """The ids of the `n` chunks of these libraries, embedded by `model`, nearest to `query`
    (a unit vector): by the vector extension's table where it takes the dimension (chunks
    written without it are added first: this may write), else by the exact scan."""
    backend, version = await connection_backend(await session.connection())
    dimension = int(query.shape[0])
    if vector_tables.supports(backend, dimension):
        await vector_tables.backfill(session, backend, version, libraries)
        return await vector_tables.nearest(
            session, backend, version, library_ids=libraries, model=model, query=query, n=n
        )
    # No extension, or a dimension it does not take (such chunks never enter its tables).
    return await exact.nearest(session, library_ids=libraries, model=model, query=query, n=n)
