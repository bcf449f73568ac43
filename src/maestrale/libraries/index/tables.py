"""The chunk store of document libraries: one row per chunk of a document, with its text and
its embedding.

The indexes over it live outside this model (`unmodelled`): on SQLite an FTS5 table over the
text and the library id (a generated column), kept in sync by triggers (migration 0015) and,
where sqlite-vec loads, one `vec0` table per embedding dimension, created on first use; on
Postgres a generated tsvector column with a GIN index (migration 0015) and, where pgvector is
installed, one table of `vector(dim)` per dimension, created on first use. The `vector`
column keeps every embedding as float32 bytes: the exact scan reads it where no vector
extension is available, and the vector tables are filled (and refilled) from it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Boolean, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime


class LibraryChunk(Base):
    """A chunk of a library's document: where it lies (page, character offsets in that page's
    text), its text, and its embedding by `model` (`dimension` float32 values in `vector`)."""

    __tablename__ = "library_chunks"
    __table_args__ = (
        # The chunks of the searched libraries; the second column finds those whose vector
        # is not yet in the vector extension's table (written where it could not be loaded).
        Index("ix_library_chunks_library", "library_id", "vector_indexed"),
        Index("ix_library_chunks_document", "document_id"),
        # Ids are never reused: the FTS5 and vec0 tables are keyed by them.
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True
    )
    organization_id: Mapped[str] = mapped_column(String(36))
    workspace_id: Mapped[str] = mapped_column(String(36))
    library_id: Mapped[str] = mapped_column(String(36))
    document_id: Mapped[str] = mapped_column(String(36))
    ordinal: Mapped[int] = mapped_column(Integer)
    page: Mapped[int] = mapped_column(Integer)
    start_offset: Mapped[int] = mapped_column(Integer)
    end_offset: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    model: Mapped[str] = mapped_column(String(200))
    dimension: Mapped[int] = mapped_column(Integer)
    vector: Mapped[bytes] = mapped_column(LargeBinary)
    # True once the vector is in the vector extension's table of its dimension.
    vector_indexed: Mapped[bool] = mapped_column(Boolean, default=False)
    # What a context search index's chunk has beyond a library's: its locator, chunk type,
    # parent, metadata and custom chunk fields (None for a library's chunk).
    attributes: Mapped[dict[str, Any] | None] = mapped_column(JSONDoc, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


CHUNKS = LibraryChunk.__tablename__
# The FTS5 table over the chunks' text on SQLite (external content: no second copy of it).
CHUNKS_FTS = "library_chunks_fts"
# Its terms and how many chunks hold each (fts5vocab), to leave out the commonest words.
CHUNKS_FTS_VOCAB = "library_chunks_fts_vocab"
# On SQLite, the library id as one token (a generated column), the FTS5 table's second column.
LIBRARY_TOKEN_COLUMN = "library_token"
# The generated tsvector column and its GIN index on Postgres.
TEXT_SEARCH_COLUMN = "text_search"
TEXT_SEARCH_INDEX = "ix_library_chunks_text_search"
# The vector tables, one per dimension: `<prefix><dim>` (vec0 on SQLite, vector on Postgres).
VECTOR_TABLE_PREFIX = "library_chunk_vectors_"

_FTS_OBJECTS = frozenset(
    {
        CHUNKS_FTS,
        *(f"{CHUNKS_FTS}_{shadow}" for shadow in ("data", "idx", "docsize", "config", "content")),
        CHUNKS_FTS_VOCAB,
        TEXT_SEARCH_INDEX,
    }
)


def unmodelled(name: str | None, type_: str, parent_names: object) -> bool:
    """Whether a database object is one of the index's that no model declares (Alembic's
    `include_name` leaves them out of the comparison with the models)."""
    if name is None:
        return False
    if name in _FTS_OBJECTS or name.startswith(VECTOR_TABLE_PREFIX):
        return True
    if type_ == "column" and name in (TEXT_SEARCH_COLUMN, LIBRARY_TOKEN_COLUMN):
        return isinstance(parent_names, dict) and parent_names.get("table_name") == CHUNKS
    return False
