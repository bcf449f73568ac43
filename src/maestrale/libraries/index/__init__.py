"""The index of document libraries: their chunks, a vector index and a keyword index over
them, and hybrid search.

- Vectors: sqlite-vec (`vec0`) on SQLite where Python's sqlite3 can load it; pgvector (HNSW,
  cosine) on Postgres where the server has it; else an exact scan in NumPy over the stored
  vectors, with a warning in the log saying what to install.
- Keywords: SQLite FTS5 (bm25) / Postgres full-text search (a tsvector column, GIN).
- Search fuses both rankings by reciprocal rank, over the libraries asked for only.

Every function works on the caller's session and nothing else (embed before, with no session
open: docs/architecture.md §3), through the index's repositories: `repository` (the chunk table,
scoped to libraries), `keyword_repository` (FTS5, tsvector) and `vector_repository` (vec0,
pgvector).
"""

from maestrale.libraries.index.capability import VectorBackend, vector_backend
from maestrale.libraries.index.search import Hit, search
from maestrale.libraries.index.store import (
    ChunkLike,
    delete_document,
    delete_library,
    replace_document,
)

__all__ = [
    "ChunkLike",
    "Hit",
    "VectorBackend",
    "delete_document",
    "delete_library",
    "replace_document",
    "search",
    "vector_backend",
]
