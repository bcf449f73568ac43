"""Chunks, vectors and a writer for the index's tests."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.ids import new_id
from maestrale.libraries import index

MODEL = "test-embed"
DIM = 16
ORG = new_id()
WORKSPACE = new_id()


@dataclass(frozen=True)
class Chunk:
    index: int
    page: int
    start: int
    end: int
    text: str


def unit(rng: np.random.Generator, rows: int, dim: int = DIM) -> NDArray[np.float32]:
    matrix = rng.standard_normal((rows, dim)).astype(np.float32)
    unit_rows: NDArray[np.float32] = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
    return unit_rows


def chunks_of(texts: list[str]) -> list[Chunk]:
    return [
        Chunk(index=i, page=1 + i // 3, start=10 * i, end=10 * i + 9, text=t)
        for i, t in enumerate(texts)
    ]


async def put(
    session: AsyncSession,
    library_id: str,
    document_id: str,
    texts: list[str],
    vectors: NDArray[np.float32],
    *,
    model: str = MODEL,
) -> None:
    await index.replace_document(
        session,
        organization_id=ORG,
        workspace_id=WORKSPACE,
        library_id=library_id,
        document_id=document_id,
        chunks=chunks_of(texts),
        vectors=vectors,
        model=model,
    )


def filler(rng: np.random.Generator, count: int) -> list[str]:
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"]
    return [" ".join(rng.choice(words, size=12)) for _ in range(count)]


def clustered(rng: np.random.Generator, rows: int, dim: int, clusters: int) -> NDArray[np.float32]:
    """Unit vectors in clusters around a shared direction, as real embeddings lie (a random
    pair's cosine is about 0.5): what quantization and HNSW must tell apart."""
    common = unit(rng, 1, dim)[0]
    centres = unit(rng, clusters, dim)
    matrix = (
        0.8 * common + 0.6 * centres[rng.integers(clusters, size=rows)] + 0.5 * unit(rng, rows, dim)
    )
    out: NDArray[np.float32] = (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(
        np.float32
    )
    return out


def recall_at(found: Sequence[Sequence[object]], exact: Sequence[Sequence[object]]) -> float:
    """The share of the exact neighbours found, over queries."""
    hits = sum(len(set(f) & set(e)) for f, e in zip(found, exact, strict=True))
    return hits / sum(len(e) for e in exact)
