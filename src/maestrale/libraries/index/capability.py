"""Which vector store a connection offers: sqlite-vec, pgvector, or neither (an exact scan).

SQLite connections load sqlite-vec when they open (`maestrale.core.db`) and say so in their
`info`. On Postgres, pgvector is looked up (and enabled where the server has it but the
database does not yet) once per pooled connection, and the answer kept in its `info`.
"""

from __future__ import annotations

import functools
import logging
from enum import StrEnum

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from maestrale.core.db import SQLITE_VEC
from maestrale.libraries.index.vector_repository import installed_pgvector

log = logging.getLogger("maestrale.libraries.index")

# The key, in a pooled Postgres connection's `info`, of pgvector's version ("" when absent).
PGVECTOR = "pgvector"
# sqlite-vec's vec0 takes vectors of at most this many dimensions; pgvector's `vector` type,
# 16,000, and its HNSW index 2,000 (wider vectors are stored, and scanned exactly by Postgres).
SQLITE_VEC_MAX_DIMENSION = 8192
PGVECTOR_MAX_DIMENSION = 16000
PGVECTOR_HNSW_MAX_DIMENSION = 2000


class VectorBackend(StrEnum):
    """How vectors are searched on a connection."""

    SQLITE_VEC = "sqlite-vec"
    PGVECTOR = "pgvector"
    EXACT = "exact"


async def vector_backend(session: AsyncSession) -> VectorBackend:
    """The vector store of the session's connection (logging, once per process, what to
    install when there is none)."""
    return (await connection_backend(await session.connection()))[0]


async def connection_backend(conn: AsyncConnection) -> tuple[VectorBackend, str]:
    """The vector store of a connection, and pgvector's version ("" elsewhere)."""
    if conn.dialect.name == "sqlite":
        if conn.info.get(SQLITE_VEC):
            return VectorBackend.SQLITE_VEC, ""
        _warn_exact_scan(
            "sqlite-vec is not loaded (this Python's sqlite3 cannot load extensions, the "
            "sqlite-vec package is missing, or loading it failed: see above): vector search of "
            "document libraries runs as an exact scan; run Maestrale on a Python whose sqlite3 "
            "can load extensions (such as the system's /usr/bin/python3) for the vec0 index"
        )
        return VectorBackend.EXACT, ""
    version = conn.info.get(PGVECTOR)
    if version is None:
        version = await installed_pgvector(conn)
        conn.info[PGVECTOR] = version
    if version:
        return VectorBackend.PGVECTOR, str(version)
    _warn_exact_scan(
        "pgvector is not installed: vector search of document libraries runs as an exact scan "
        "in the server process; install pgvector (https://github.com/pgvector/pgvector) on the "
        "Postgres server for an HNSW index"
    )
    return VectorBackend.EXACT, ""


def pgvector_at_least(version: str, wanted: tuple[int, ...]) -> bool:
    """Whether pgvector `version` ("0.8.0") is `wanted` or later."""
    parts: list[int] = []
    for piece in version.split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts) >= wanted


# A warning about the deployment, not data: said once per process rather than per search.
@functools.cache
def _warn_exact_scan(message: str) -> None:
    log.warning(message)
