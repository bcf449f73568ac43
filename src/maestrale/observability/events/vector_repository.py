"""All SQL of event vectors: stored vectors and the nearest-neighbour search over them, scoped
to the caller's workspace.

Every backend keeps each event's vector (normalised float32 bytes) in
observability_event_embeddings and answers with a chunked scan: SCAN_CHUNK vectors at a time,
in event_id order on the (workspace_id, model, event_id) index, scored with numpy, the best
kept; memory stays at one chunk whatever the workspace's size.

Where Postgres has the pgvector extension (`vector` in pg_extension, or available and creatable
by the connecting role), vectors are also kept in a `vector` column of
observability_event_vectors, a table created at run time (the extension is optional, so it is no
part of the migrated schema) and the search is one `ORDER BY embedding <=> :query` in the
database.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sqlalchemy import column, desc, exists, select, table, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.accounting.tables import ChatCompletionEvent as E
from maestrale.core.auth.principal import Tenant
from maestrale.observability.events.tables import EventEmbedding as V

SCAN_CHUNK = 4096
PGVECTOR_TABLE = "observability_event_vectors"
_pgvector = table(PGVECTOR_TABLE, column("event_id"), column("model"), column("workspace_id"))


def normalised(values: Any) -> np.ndarray:
    vector = np.asarray(values, dtype=np.float32)
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector


class VectorRepository:
    """A workspace's vectors of one embeddings model."""

    def __init__(self, session: AsyncSession, tenant: Tenant, model: str) -> None:
        self.session = session
        self.workspace_id = tenant.workspace_id
        self.model = model
        self.pg = session.get_bind().dialect.name == "postgresql"
        self.pgvector = False

    async def detect_pgvector(self) -> bool:
        """Use pgvector when the extension is installed, or available and creatable here."""
        if not self.pg:
            return False
        installed = await self.session.scalar(
            text("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
        )
        if not installed:
            available = await self.session.scalar(
                text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
            )
            if not available:
                return False
            try:
                async with self.session.begin_nested():
                    await self.session.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
            except DBAPIError:  # no privilege to create it: the scan answers instead
                return False
        async with self.session.begin_nested():
            await self.session.execute(
                text(
                    f"CREATE TABLE IF NOT EXISTS {PGVECTOR_TABLE} ("
                    "event_id varchar(36) NOT NULL, model varchar(200) NOT NULL, "
                    "workspace_id varchar(36) NOT NULL, embedding vector NOT NULL, "
                    "PRIMARY KEY (event_id, model))"
                )
            )
            await self.session.execute(
                text(
                    f"CREATE INDEX IF NOT EXISTS ix_{PGVECTOR_TABLE}_ws "
                    f"ON {PGVECTOR_TABLE} (workspace_id, model)"
                )
            )
        self.pgvector = True
        return True

    async def get(self, event_id: str) -> np.ndarray | None:
        raw = await self.session.scalar(
            select(V.vector).where(
                V.workspace_id == self.workspace_id, V.model == self.model, V.event_id == event_id
            )
        )
        return None if raw is None else np.frombuffer(raw, dtype=np.float32)

    async def stored(self, event_ids: list[str]) -> dict[str, np.ndarray]:
        rows = await self.session.execute(
            select(V.event_id, V.vector).where(
                V.workspace_id == self.workspace_id,
                V.model == self.model,
                V.event_id.in_(event_ids),
            )
        )
        return {i: np.frombuffer(raw, dtype=np.float32) for i, raw in rows.all()}

    async def missing(self, limit: int) -> list[str]:
        """The workspace's events without a vector here, newest first (an anti-join on the
        primary key of the vectors, walking the events' created_at index)."""
        if self.pgvector:
            have: Any = exists().where(
                _pgvector.c.event_id == E.id,
                _pgvector.c.model == self.model,
                _pgvector.c.workspace_id == self.workspace_id,
            )
        else:
            have = exists().where(
                V.event_id == E.id, V.model == self.model, V.workspace_id == self.workspace_id
            )
        stmt = (
            select(E.id)
            .where(E.workspace_id == self.workspace_id, ~have)
            .order_by(desc(E.created_at), desc(E.id))
            .limit(limit)
        )
        return list((await self.session.execute(stmt)).scalars())

    async def save(self, vectors: dict[str, np.ndarray], *, fresh: bool = True) -> None:
        """Store vectors (normalised float32). Two requests may embed the same event at once:
        the first row stays. `fresh=False`: already in the bytes table, pgvector only."""
        if not vectors:
            return
        if fresh:
            dialect: Any = postgresql if self.pg else sqlite
            rows = [self._row(i, v) for i, v in vectors.items()]
            await self.session.execute(dialect.insert(V).values(rows).on_conflict_do_nothing())
        if self.pgvector:
            await self.session.execute(
                text(
                    f"INSERT INTO {PGVECTOR_TABLE} (event_id, model, workspace_id, embedding) "
                    "SELECT unnest(CAST(:ids AS varchar[])), :model, :ws, "
                    "CAST(unnest(CAST(:vectors AS text[])) AS vector) ON CONFLICT DO NOTHING"
                ),
                {
                    "ids": list(vectors),
                    "model": self.model,
                    "ws": self.workspace_id,
                    "vectors": [_literal(v) for v in vectors.values()],
                },
            )

    def _row(self, event_id: str, vector: np.ndarray) -> dict[str, Any]:
        return {
            "event_id": event_id,
            "model": self.model,
            "workspace_id": self.workspace_id,
            "vector": vector.astype(np.float32).tobytes(),
        }

    async def nearest(self, query: np.ndarray, exclude: str, k: int) -> list[tuple[str, float]]:
        """The k event ids nearest to `query` (cosine similarity), nearest first."""
        if self.pgvector:
            return await self._nearest_pgvector(query, exclude, k)
        return await self._nearest_scan(query, exclude, k)

    async def _nearest_pgvector(
        self, query: np.ndarray, exclude: str, k: int
    ) -> list[tuple[str, float]]:
        rows = await self.session.execute(
            text(
                "SELECT event_id, 1 - (embedding <=> CAST(:q AS vector)) AS score "
                f"FROM {PGVECTOR_TABLE} WHERE workspace_id = :ws AND model = :model "
                "AND event_id <> :exclude AND vector_dims(embedding) = :dims "
                "ORDER BY embedding <=> CAST(:q AS vector) LIMIT :k"
            ),
            {
                "q": _literal(query),
                "ws": self.workspace_id,
                "model": self.model,
                "exclude": exclude,
                "dims": int(query.shape[0]),
                "k": k,
            },
        )
        return [(str(i), float(s)) for i, s in rows.all()]

    async def _nearest_scan(
        self, query: np.ndarray, exclude: str, k: int
    ) -> list[tuple[str, float]]:
        query = normalised(query)
        width = query.shape[0] * 4
        best_ids: list[str] = []
        best = np.empty(0, dtype=np.float32)
        after = ""
        while True:
            stmt = (
                select(V.event_id, V.vector)
                .where(V.workspace_id == self.workspace_id, V.model == self.model)
                .where(V.event_id > after)
                .order_by(V.event_id)
                .limit(SCAN_CHUNK)
            )
            chunk = (await self.session.execute(stmt)).all()
            if not chunk:
                break
            after = chunk[-1][0]
            # A vector of another width (the model name now resolves elsewhere) cannot compare.
            rows = [(i, raw) for i, raw in chunk if i != exclude and len(raw) == width]
            if not rows:
                continue
            matrix = np.frombuffer(b"".join(raw for _, raw in rows), dtype=np.float32)
            matrix = matrix.reshape(len(rows), -1)
            norms = np.linalg.norm(matrix, axis=1)
            scores = (matrix @ query) / np.where(norms == 0, 1.0, norms)
            ids = best_ids + [i for i, _ in rows]
            merged = np.concatenate([best, scores.astype(np.float32)])
            keep = np.argsort(-merged, kind="stable")[:k]
            best_ids, best = [ids[j] for j in keep], merged[keep]
        return list(zip(best_ids, (float(s) for s in best), strict=True))


def _literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{float(x):.7g}" for x in vector) + "]"
