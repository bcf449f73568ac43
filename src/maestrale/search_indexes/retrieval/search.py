"""`search`: a retriever (nearest neighbours, keywords, or their reciprocal rank fusion) checked
against the index (`plan`, with the session open), then run (`run`) once the queries that need
an embedding have one (embedded by the caller with no session open).

Filters are evaluated on the candidates the index ranks; when a filter (or the keyword
operator `and`) leaves fewer than top_k of them, the ranking is asked again for more (at least
four times as many, as many as the pass rate so far suggests), up to MAX_CANDIDATES, so that a
selective filter still fills top_k where it can.

Scores: nearest neighbours, the cosine similarity of the query and the chunk's stored float
vector (distance = 1 - score); keywords, the reciprocal of the chunk's rank (1, 1/2, 1/3...:
FTS5's bm25 and Postgres' ts_rank are not on one scale, ranks are); fusion, the sum over the
child rankings of weight / (rank_constant + rank).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.libraries.index.store import normalised
from maestrale.search_indexes.errors import InvalidRetriever
from maestrale.search_indexes.retrieval import filters, ranking
from maestrale.search_indexes.retrieval import schemas as s
from maestrale.search_indexes.retrieval.chunks import ChunkReader, ContextChunk, IndexView

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

MAX_TOP_K = 1000
MAX_CANDIDATES = 4096
MIN_CANDIDATES = 100
MAX_RETRIEVERS = 10
MAX_QUERY_CHARS = 20_000
_WORD = re.compile(r"\w+")


@dataclass(slots=True)
class Leaf:
    """A keyword or nearest-neighbour retriever, checked. `embed`: the text whose embedding
    `vector` must be before it runs (set by the caller)."""

    kind: str
    top_k: int
    filter: filters.Filter | None
    query: str = ""
    operator: str = "or"
    candidates: int = 0
    embed: str | None = None
    vector: Any = None


@dataclass(slots=True)
class Plan:
    """A checked retriever: one leaf, or the fusion of several."""

    top_k: int
    filter: filters.Filter | None
    leaves: list[Leaf]
    fused: bool = False
    weights: list[float] = field(default_factory=list)
    rank_constant: int = 60


@dataclass(frozen=True, slots=True)
class Hit:
    chunk: ContextChunk
    score: float
    distance: float | None = None


def _bad(message: str, param: str = "retriever") -> InvalidRetriever:
    return InvalidRetriever(message, param=param)


def _top_k(value: int, param: str) -> int:
    if not 1 <= value <= MAX_TOP_K:
        raise _bad(f"top_k must be between 1 and {MAX_TOP_K}", param)
    return value


def plan(
    retriever: s.KeywordRetriever | s.NearestNeighbourRetriever | s.RRFRetriever, index: IndexView
) -> Plan:
    """The retriever checked against the index (400 `invalid_retriever` for what it cannot
    run)."""
    if not isinstance(retriever, s.RRFRetriever):
        leaf = _leaf(retriever, index, "retriever")
        return Plan(leaf.top_k, None, [leaf])
    top_k = _top_k(retriever.top_k, "retriever.top_k")
    flt = filters.parse(retriever.filter)
    children = retriever.retrievers
    if not 1 <= len(children) <= MAX_RETRIEVERS:
        raise _bad(f"rrf fuses 1 to {MAX_RETRIEVERS} retrievers", "retriever.retrievers")
    weights = retriever.weights if retriever.weights is not None else [1.0] * len(children)
    if len(weights) != len(children):
        raise _bad("rrf needs one weight per retriever", "retriever.weights")
    if any(not 0 <= w < float("inf") for w in weights):
        raise _bad("rrf weights must be finite and not negative", "retriever.weights")
    if retriever.rank_constant < 1:
        raise _bad("rank_constant must be at least 1", "retriever.rank_constant")
    leaves = []
    for i, child in enumerate(children):
        if isinstance(child, s.RRFRetriever):
            raise _bad("rrf retrievers cannot be nested", f"retriever.retrievers[{i}]")
        leaves.append(_leaf(child, index, f"retriever.retrievers[{i}]"))
    return Plan(top_k, flt, leaves, True, [float(w) for w in weights], retriever.rank_constant)


def _leaf(
    retriever: s.KeywordRetriever | s.NearestNeighbourRetriever, index: IndexView, param: str
) -> Leaf:
    top_k = _top_k(retriever.top_k, f"{param}.top_k")
    flt = filters.parse(retriever.filter, f"{param}.filter")
    if isinstance(retriever, s.KeywordRetriever):
        if retriever.field not in (None, "content"):
            raise _bad("a keyword retriever searches the chunks' `content` only", f"{param}.field")
        if len(retriever.query) > MAX_QUERY_CHARS:
            raise _bad(f"a query has at most {MAX_QUERY_CHARS} characters", f"{param}.query")
        return Leaf(
            "keyword",
            top_k,
            flt,
            retriever.query,
            retriever.operator,
            min(max(4 * top_k, MIN_CANDIDATES), MAX_CANDIDATES),
        )
    if retriever.field is not None and index.chunk_field_type(retriever.field) != "dense_vector":
        raise _bad(f"{retriever.field[:100]!r} is no dense_vector chunk field", f"{param}.field")
    candidates = retriever.max_candidates
    if candidates is None:
        candidates = max(4 * top_k, MIN_CANDIDATES)
    elif not 1 <= candidates <= MAX_CANDIDATES:
        raise _bad(
            f"max_candidates must be between 1 and {MAX_CANDIDATES}", f"{param}.max_candidates"
        )
    leaf = Leaf(
        "nearest_neighbour", top_k, flt, candidates=min(max(candidates, top_k), MAX_CANDIDATES)
    )
    if retriever.query_embedding is not None:
        leaf.vector = query_vector(retriever.query_embedding, index, f"{param}.query_embedding")
    elif retriever.query is None:
        raise _bad("a nearest_neighbour retriever needs `query` or `query_embedding`", param)
    elif index.embedding_model is None:
        raise _bad(
            "the index takes custom embeddings: send `query_embedding`", f"{param}.query_embedding"
        )
    elif not retriever.query.strip() or len(retriever.query) > MAX_QUERY_CHARS:
        raise _bad(f"`query` must hold 1 to {MAX_QUERY_CHARS} characters", f"{param}.query")
    else:
        leaf.embed = retriever.query
    return leaf


def query_vector(values: Any, index: IndexView, param: str) -> NDArray[np.float32]:
    """A query's embedding as a unit vector of the index's dimension (400 otherwise)."""
    try:
        matrix = normalised(values)
    except (ValueError, TypeError):
        raise _bad("the query embedding must be a list of finite numbers", param) from None
    if matrix.shape != (1, index.dimension):
        raise _bad(f"the query embedding must have the index's {index.dimension} dimensions", param)
    if not matrix.any():
        raise _bad("the query embedding must not be all zeros", param)
    row: NDArray[np.float32] = matrix[0]
    return row


async def run(session: AsyncSession, index: IndexView, checked: Plan) -> list[Hit]:
    """The hits of a checked retriever, best first."""
    if not checked.fused:
        return await _run_leaf(session, index, checked.leaves[0], checked.leaves[0].top_k, None)
    scores: dict[int, float] = {}
    best: dict[int, int] = {}
    chunks: dict[int, ContextChunk] = {}
    for leaf, weight in zip(checked.leaves, checked.weights, strict=True):
        # The fusion's filter applies to every child: a child ranks only chunks that pass it.
        found = await _run_leaf(
            session, index, leaf, max(leaf.top_k, checked.top_k), checked.filter
        )
        for rank, hit in enumerate(found, start=1):
            chunk_id = hit.chunk.id
            chunks[chunk_id] = hit.chunk
            scores[chunk_id] = scores.get(chunk_id, 0.0) + weight / (checked.rank_constant + rank)
            best[chunk_id] = min(best.get(chunk_id, rank), rank)
    order = sorted(scores, key=lambda i: (-scores[i], best[i], i))[: checked.top_k]
    return [Hit(chunks[i], scores[i]) for i in order]


async def _run_leaf(
    session: AsyncSession,
    index: IndexView,
    leaf: Leaf,
    limit: int,
    extra: filters.Filter | None,
) -> list[Hit]:
    flt = filters.both(leaf.filter, extra)
    required = set(ranking.terms(leaf.query)) if leaf.operator == "and" else set()
    checked = flt is not None or bool(required)
    nearest = leaf.kind == "nearest_neighbour"
    if nearest and leaf.vector is None:
        raise RuntimeError("a nearest_neighbour retriever runs with its query's vector")
    reader = ChunkReader(session, index)
    n = max(leaf.candidates, limit)
    while True:
        if nearest:
            ids = await ranking.nearest(session, index, leaf.vector, n)
        else:
            ids = await ranking.keywords(session, index, leaf.query, n)
        found = await reader.by_ids(ids, vectors=nearest)
        kept = [found[i] for i in ids if i in found and _passes(found[i], flt, required)]
        if not checked or len(kept) >= limit or len(ids) < n or n >= MAX_CANDIDATES:
            break
        n = _more(n, len(kept), limit)
    if not nearest:
        return [Hit(chunk, 1.0 / rank) for rank, chunk in enumerate(kept[:limit], start=1)]
    scored = [(chunk, _cosine(chunk, leaf.vector)) for chunk in kept]
    # Re-scored on the stored float vectors: the best of the candidates, whatever the order
    # an approximate index gave them in (a stable sort keeps its order among equals).
    scored.sort(key=lambda pair: -pair[1])
    return [Hit(chunk, score, 1.0 - score) for chunk, score in scored[:limit]]


def _more(n: int, kept: int, limit: int) -> int:
    """How many candidates to rank next when `kept` of `n` passed and `limit` are wanted: at
    least four times as many, more when the filter's pass rate so far says so (with a margin),
    sixteen times as many when none passed."""
    wanted = 16 * n if kept == 0 else -(-2 * n * limit // kept)
    return min(max(4 * n, wanted), MAX_CANDIDATES)


def _passes(chunk: ContextChunk, flt: filters.Filter | None, required: set[str]) -> bool:
    if required and not required <= {w.lower() for w in _WORD.findall(chunk.text)}:
        return False
    return flt is None or filters.matches(flt, chunk.lookup)


def _cosine(chunk: ContextChunk, query: NDArray[np.float32]) -> float:
    import numpy as np

    blob = chunk.vector or b""
    if len(blob) != 4 * query.shape[0]:
        return 0.0
    return float(np.frombuffer(blob, dtype=np.float32) @ query)


def hit_doc(hit: Hit, index: IndexView) -> dict[str, Any]:
    """A SearchHitResponse."""
    return {
        "chunk": hit.chunk.wire(),
        "score": hit.score,
        "index_name": index.name,
        "distance": hit.distance,
    }
