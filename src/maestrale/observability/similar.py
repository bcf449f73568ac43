"""Similar events: the nearest events by the embedding of their conversation.

Embeddings are computed lazily with the embeddings engine, through the gateway (accounted like
any call), the first time a similar-events request needs them, and stored per event and model.
The candidates are the workspace's latest `CANDIDATES` events; their vectors are scanned in
memory (cosine similarity) and the `RESULTS` nearest with a positive similarity are returned,
nearest first. (No pgvector index: a vector scan on every backend.)"""

from __future__ import annotations

import uuid
from typing import Any

import numpy as np
from sqlalchemy import desc, select
from sqlalchemy.dialects import postgresql, sqlite

from maestrale.completions.execute import run_embeddings
from maestrale.completions.gateway import Gateway
from maestrale.completions.hooks import Caller
from maestrale.completions.schemas import EmbeddingRequest
from maestrale.core.errors import NotFound
from maestrale.engines.text import content_text
from maestrale.observability.errors import ObservabilityError
from maestrale.observability.repository import EventRepository
from maestrale.observability.tables import ChatCompletionEvent as E
from maestrale.observability.tables import EventEmbedding

SIMILARITY_MODEL = "mistral-embed"
CANDIDATES = 1000
BATCH = 64
RESULTS = 20
MAX_CHARS = 8000


def conversation_text(event: E) -> str:
    parts = []
    for message in [*(event.request_messages or []), *(event.response_messages or [])]:
        text = content_text(message.get("content")) if isinstance(message, dict) else ""
        if text:
            parts.append(f"{message.get('role', '')}: {text}")
    return "\n".join(parts)[:MAX_CHARS] or "(empty conversation)"


async def similar_events(
    repo: EventRepository, gateway: Gateway, caller: Caller, event_id: str
) -> list[E]:
    target = await repo.get(event_id)
    if target is None:
        raise ObservabilityError(
            f"chat completion event {event_id!r} not found", "SEARCH_NOT_FOUND", status_code=404
        )
    stmt = repo.select().where(E.id != target.id).order_by(desc(E.created_at), desc(E.id))
    candidates = list((await repo.session.execute(stmt.limit(CANDIDATES))).scalars())
    if not candidates:
        return []
    vectors = await _vectors(repo, gateway, caller, [target, *candidates])
    query = vectors[target.id]
    matrix = np.stack([vectors[e.id] for e in candidates])
    norms = np.linalg.norm(matrix, axis=1) * (np.linalg.norm(query) or 1.0)
    scores = (matrix @ query) / np.where(norms == 0, 1.0, norms)
    order = np.argsort(-scores, kind="stable")[:RESULTS]
    return [candidates[i] for i in order if scores[i] > 0]


async def _vectors(
    repo: EventRepository, gateway: Gateway, caller: Caller, events: list[E]
) -> dict[str, Any]:
    session = repo.session
    ids = [e.id for e in events]
    known = await session.execute(
        select(EventEmbedding.event_id, EventEmbedding.vector).where(
            EventEmbedding.model == SIMILARITY_MODEL,
            EventEmbedding.workspace_id == repo.tenant.workspace_id,
            EventEmbedding.event_id.in_(ids),
        )
    )
    vectors: dict[str, Any] = {i: np.frombuffer(v, dtype=np.float32) for i, v in known.all()}
    missing = [e for e in events if e.id not in vectors]
    dialect = postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
    for start in range(0, len(missing), BATCH):
        chunk = missing[start : start + BATCH]
        body = EmbeddingRequest(model=SIMILARITY_MODEL, input=[conversation_text(e) for e in chunk])
        try:
            _, response = await run_embeddings(
                gateway, caller, body, correlation_id=f"similar-{uuid.uuid4()}",
                source="observability",
            )  # fmt: skip
        except NotFound as exc:
            raise ObservabilityError(
                f"similar events need the embeddings model {SIMILARITY_MODEL!r}: {exc.message}",
                "FEATURE_NOT_SUPPORTED",
            ) from exc
        rows = []
        for event, item in zip(chunk, response["data"], strict=True):
            vector = np.asarray(item["embedding"], dtype=np.float32)
            vectors[event.id] = vector
            rows.append(
                {
                    "event_id": event.id,
                    "model": SIMILARITY_MODEL,
                    "workspace_id": repo.tenant.workspace_id,
                    "vector": vector.tobytes(),
                }
            )
        # Two requests may embed the same event at once: the first row stays.
        await session.execute(dialect.insert(EventEmbedding).values(rows).on_conflict_do_nothing())
    return vectors
