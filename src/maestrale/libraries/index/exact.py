"""The exact scan: where no vector extension is available, the libraries' stored vectors are
read in batches and scored in NumPy (every vector is normalised: a dot product is the cosine).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.libraries.index.repository import ChunkRepository

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

# Vectors scored per batch: 4096 at 384 dimensions is 6 MB of float32.
SCAN_BATCH = 4096


async def nearest(
    session: AsyncSession,
    *,
    library_ids: Sequence[str],
    model: str,
    query: NDArray[np.float32],
    n: int,
) -> list[int]:
    """The ids of the `n` chunks of these libraries, embedded by `model`, nearest to `query`,
    nearest first (equal scores: the older chunk first)."""
    import numpy as np

    query = np.ascontiguousarray(query, dtype=np.float32)
    dimension = int(query.shape[0])
    best_ids = np.empty(0, dtype=np.int64)
    best_scores = np.empty(0, dtype=np.float32)
    chunks = ChunkRepository(session, library_ids)
    async for part in chunks.vectors(model, dimension, SCAN_BATCH):
        chunk_ids, blobs = zip(*part, strict=True)
        ids = np.array(chunk_ids, dtype=np.int64)
        matrix = np.frombuffer(b"".join(blobs), dtype=np.float32)
        scores = matrix.reshape(len(ids), dimension) @ query
        best_ids = np.concatenate([best_ids, ids])
        best_scores = np.concatenate([best_scores, scores.astype(np.float32, copy=False)])
        if len(best_ids) > n:
            keep = np.argpartition(-best_scores, n - 1)[:n]
            best_ids, best_scores = best_ids[keep], best_scores[keep]
    # Highest score first; among equals, the lowest id (a stable, repeatable order).
    order = np.lexsort((best_ids, -best_scores))
    return [int(i) for i in best_ids[order][:n]]
