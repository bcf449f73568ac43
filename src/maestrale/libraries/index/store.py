"""Writing the index: a document's chunks and vectors in, a document's or a library's out.

On the caller's session (which owns the transaction), through the index's repositories:
embeddings are computed before, with no session open.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.libraries.index import vectors as vector_tables
from maestrale.libraries.index.capability import connection_backend
from maestrale.libraries.index.repository import ChunkRepository

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

# Chunks written (rows and vectors) per step.
INSERT_BATCH = 500
# The widths of the chunk table's string columns.
ID_LENGTH = 36
MODEL_LENGTH = 200


class ChunkLike(Protocol):
    """A chunk of a document's text (INGEST's `Chunk` is one): its ordinal in the document,
    its page (1-based), its character offsets in that page's text, and its text."""

    @property
    def index(self) -> int: ...

    @property
    def page(self) -> int: ...

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...

    @property
    def text(self) -> str: ...


def clean_text(value: str) -> str:
    """Text both databases store: NULs and lone surrogates become U+FFFD (one character for
    one, so that offsets still hold)."""
    if "\x00" in value:
        value = value.replace("\x00", "\ufffd")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = "".join("\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in value)
    return value


def normalised(vectors_: Any, rows: int | None = None) -> NDArray[np.float32]:
    """`vectors_` as a C-contiguous float32 matrix of unit rows (a 1-D vector: one row).
    Raises ValueError for a shape, a row count or values that cannot be indexed."""
    import numpy as np

    matrix = np.array(vectors_, dtype=np.float32, copy=True)
    if matrix.ndim == 1:
        matrix = matrix.reshape(1, -1)
    if matrix.ndim != 2 or matrix.shape[1] < 1:
        raise ValueError(f"vectors must be a (n, dim) matrix, not of shape {matrix.shape}")
    if rows is not None and matrix.shape[0] != rows:
        raise ValueError(f"{matrix.shape[0]} vectors for {rows} chunks")
    if not np.isfinite(matrix).all():
        raise ValueError("vectors must be finite")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(matrix / norms, dtype=np.float32)


def storable(value: object, length: int) -> bool:
    """Whether `value` is a string both databases can hold in a column of `length`."""
    if not isinstance(value, str) or not value or len(value) > length or "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _check_ids(**ids: str) -> None:
    for name, value in ids.items():
        if not storable(value, ID_LENGTH):
            raise ValueError(f"bad {name} {value!r}")


async def replace_document(
    session: AsyncSession,
    *,
    organization_id: str,
    workspace_id: str,
    library_id: str,
    document_id: str,
    chunks: Sequence[ChunkLike],
    vectors: Any,
    model: str,
    attributes: Sequence[dict[str, Any] | None] | None = None,
) -> None:
    """Make `chunks` (with their `vectors`, one row each, by embedding `model`, and a search
    index's chunk `attributes`, one per chunk) the indexed content of the document, in place
    of whatever it had."""
    _check_ids(
        organization_id=organization_id,
        workspace_id=workspace_id,
        library_id=library_id,
        document_id=document_id,
    )
    if not storable(model, MODEL_LENGTH):
        raise ValueError(f"bad embedding model {model!r}")
    await delete_document(session, library_id, document_id)
    if not chunks:
        return
    matrix = normalised(vectors, len(chunks))
    dimension = int(matrix.shape[1])
    backend, version = await connection_backend(await session.connection())
    indexed = vector_tables.supports(backend, dimension)
    if indexed:
        await vector_tables.ensure_table(session, backend, dimension, version)
    base = {
        "organization_id": organization_id,
        "workspace_id": workspace_id,
        "library_id": library_id,
        "document_id": document_id,
        "model": model,
        "dimension": dimension,
        "vector_indexed": indexed,
    }
    repository = ChunkRepository(session, [library_id])
    for start in range(0, len(chunks), INSERT_BATCH):
        batch = chunks[start : start + INSERT_BATCH]
        blobs = [matrix[start + i].tobytes() for i in range(len(batch))]
        rows = [
            {
                **base,
                "ordinal": int(chunk.index),
                "page": int(chunk.page),
                "start_offset": int(chunk.start),
                "end_offset": int(chunk.end),
                "text": clean_text(chunk.text),
                "vector": blob,
                "attributes": attributes[start + i] if attributes is not None else None,
            }
            for i, (chunk, blob) in enumerate(zip(batch, blobs, strict=True))
        ]
        ids = await repository.insert(rows)
        if indexed:
            entries = [
                (int(chunk_id), library_id, model, blob)
                for chunk_id, blob in zip(ids, blobs, strict=True)
            ]
            await vector_tables.add(session, backend, dimension, entries)


async def delete_document(session: AsyncSession, library_id: str, document_id: str) -> None:
    """Take a document's chunks out of the index."""
    await _delete(session, ChunkRepository(session, [library_id]), document_id)


async def delete_library(session: AsyncSession, library_id: str) -> None:
    """Take every chunk of a library out of the index."""
    await _delete(session, ChunkRepository(session, [library_id]), None)


async def _delete(session: AsyncSession, chunks: ChunkRepository, document_id: str | None) -> None:
    backend, _ = await connection_backend(await session.connection())
    await vector_tables.forget(session, backend, chunks, document_id)
    await chunks.delete(document_id)
