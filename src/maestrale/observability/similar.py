"""Similar events: the nearest events by the embedding of their conversation.

Embeddings are computed lazily with the embeddings engine, through the gateway (accounted like
any call), by similar-events requests: the event asked about first, then the workspace's events
that have no vector yet, newest first, in batches of BATCH, at most `embed_limit` per request
(the rest on later requests, so one request stays bounded). The model is the setting
`similar_events_model` (MAESTRALE_SIMILAR_EVENTS_MODEL, a catalog embeddings model).

The search itself is in similar_vectors.py: pgvector where Postgres has it, else a chunked
vector scan of the stored vectors. The RESULTS nearest with a positive similarity are returned,
nearest first, never the event itself, never another workspace's."""

from __future__ import annotations

import uuid

import numpy as np

from maestrale.completions.execute import run_embeddings
from maestrale.completions.gateway import Gateway
from maestrale.completions.hooks import Caller
from maestrale.completions.schemas import EmbeddingRequest
from maestrale.core.errors import NotFound
from maestrale.engines.text import content_text
from maestrale.observability.errors import ObservabilityError
from maestrale.observability.repository import EventRepository
from maestrale.observability.similar_vectors import VectorStore, normalised
from maestrale.observability.tables import ChatCompletionEvent as E

SIMILARITY_MODEL = "mistral-embed"
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
    repo: EventRepository,
    gateway: Gateway,
    caller: Caller,
    event_id: str,
    *,
    model: str = SIMILARITY_MODEL,
    embed_limit: int = 2000,
) -> list[E]:
    target = await repo.get(event_id)
    if target is None:
        raise ObservabilityError(
            f"chat completion event {event_id!r} not found", "SEARCH_NOT_FOUND", status_code=404
        )
    store = VectorStore(repo.session, repo.tenant.workspace_id, model)
    await store.detect_pgvector()
    embedder = _Embedder(repo, gateway, caller, store)
    query = await store.get(target.id)
    if query is None:
        query = (await embedder.embed([target]))[target.id]
    elif store.pgvector:
        await store.save({target.id: query}, fresh=False)
    await embedder.fill(embed_limit)
    nearest = [(i, s) for i, s in await store.nearest(query, target.id, RESULTS) if s > 0]
    if not nearest:
        return []
    rows = await repo.session.execute(repo.select().where(E.id.in_([i for i, _ in nearest])))
    by_id = {e.id: e for e in rows.scalars()}
    return [by_id[i] for i, _ in nearest if i in by_id]


class _Embedder:
    def __init__(
        self, repo: EventRepository, gateway: Gateway, caller: Caller, store: VectorStore
    ) -> None:
        self.repo, self.gateway, self.caller, self.store = repo, gateway, caller, store

    async def fill(self, limit: int) -> None:
        """Vectors for the workspace's events that lack one, newest first, at most `limit`."""
        missing = await self.store.missing(limit)
        for start in range(0, len(missing), BATCH):
            ids = missing[start : start + BATCH]
            if self.store.pgvector:
                # Already embedded before pgvector appeared: copy, do not pay again.
                known = await self.store.stored(ids)
                await self.store.save(known, fresh=False)
                ids = [i for i in ids if i not in known]
            if not ids:
                continue
            rows = await self.repo.session.execute(self.repo.select().where(E.id.in_(ids)))
            await self.embed(list(rows.scalars()))

    async def embed(self, events: list[E]) -> dict[str, np.ndarray]:
        model = self.store.model
        body = EmbeddingRequest(model=model, input=[conversation_text(e) for e in events])
        try:
            _, response = await run_embeddings(
                self.gateway, self.caller, body, correlation_id=f"similar-{uuid.uuid4()}",
                source="observability",
            )  # fmt: skip
        except NotFound as exc:
            raise ObservabilityError(
                f"similar events need the embeddings model {model!r}: {exc.message}",
                "FEATURE_NOT_SUPPORTED",
            ) from exc
        vectors = {
            event.id: normalised(item["embedding"])
            for event, item in zip(events, response["data"], strict=True)
        }
        await self.store.save(vectors)
        return vectors
