"""Similar events: the nearest events by the embedding of their conversation.

Embeddings are computed lazily with the embeddings engine, through the gateway (accounted like
any call), by similar-events requests: the event asked about first, then the workspace's events
that have no vector yet, newest first, in batches of BATCH, at most `embed_limit` per request
(the rest on later requests, so one request stays bounded). The model is the setting
`similar_events_model` (MAESTRALE_SIMILAR_EVENTS_MODEL, a catalog embeddings model).

No transaction is open while the model embeds: each batch's conversations are read, the
request's transaction is released, the batch is embedded, and its vectors are written in the
next short transaction (a vector another request wrote meanwhile stays; see VectorRepository).

The search itself is in vector_repository.py: pgvector where Postgres has it, else a chunked
vector scan of the stored vectors. The RESULTS nearest with a positive similarity are returned,
nearest first, never the event itself, never another workspace's."""

from __future__ import annotations

import uuid

import numpy as np

from maestrale.accounting.tables import ChatCompletionEvent as E
from maestrale.core.auth.principal import Tenant
from maestrale.core.errors import NotFound
from maestrale.core.uow import UnitOfWork
from maestrale.engines.text import content_text
from maestrale.gateway.hooks import Caller
from maestrale.gateway.platform_calls import PlatformCalls
from maestrale.observability.errors import ObservabilityError
from maestrale.observability.events.repository import ChatCompletionEventRepository
from maestrale.observability.events.service import event_not_found
from maestrale.observability.events.vector_repository import VectorRepository, normalised

SIMILARITY_MODEL = "mistral-embed"
BATCH = 64
RESULTS = 20
MAX_CHARS = 8000


def conversation_text(event: E) -> str:
    parts = []
    for message in event.conversation():
        text = content_text(message.get("content")) if isinstance(message, dict) else ""
        if text:
            parts.append(f"{message.get('role', '')}: {text}")
    return "\n".join(parts)[:MAX_CHARS] or "(empty conversation)"


class SimilarEvents:
    """The similar events of one workspace, in the request's unit of work."""

    def __init__(
        self,
        work: UnitOfWork,
        tenant: Tenant,
        calls: PlatformCalls,
        caller: Caller,
        *,
        model: str = SIMILARITY_MODEL,
        embed_limit: int = 2000,
    ) -> None:
        self.work = work
        self.events = ChatCompletionEventRepository(work.session, tenant)
        self.vectors = VectorRepository(work.session, tenant, model)
        self.calls = calls
        self.caller = caller
        self.embed_limit = embed_limit

    async def nearest(self, event_id: str) -> list[E]:
        """The events nearest to `event_id`, nearest first (404 for an unknown event)."""
        target = await self.events.get(event_id)
        if target is None:
            raise event_not_found(event_id)
        await self.vectors.detect_pgvector()
        query = await self.vectors.get(target.id)
        if query is None:
            query = (await self._embed({target.id: conversation_text(target)}))[target.id]
        elif self.vectors.pgvector:
            await self.vectors.save({target.id: query}, fresh=False)
        await self._fill()
        scored = await self.vectors.nearest(query, target.id, RESULTS)
        nearest = [i for i, score in scored if score > 0]
        if not nearest:
            return []
        by_id = {e.id: e for e in await self.events.by_ids(nearest)}
        return [by_id[i] for i in nearest if i in by_id]

    async def _fill(self) -> None:
        """Vectors for the workspace's events that lack one, newest first, at most
        `embed_limit`."""
        missing = await self.vectors.missing(self.embed_limit)
        for start in range(0, len(missing), BATCH):
            ids = missing[start : start + BATCH]
            if self.vectors.pgvector:
                # Already embedded before pgvector appeared: copy, do not pay again.
                known = await self.vectors.stored(ids)
                await self.vectors.save(known, fresh=False)
                ids = [i for i in ids if i not in known]
            if not ids:
                continue
            events = await self.events.by_ids(ids)
            if events:  # none when they were deleted since
                await self._embed({e.id: conversation_text(e) for e in events})

    async def _embed(self, texts: dict[str, str]) -> dict[str, np.ndarray]:
        """Embed the texts by event id (the gateway releases the request's transaction first),
        then store their vectors (in a new transaction, which the next call releases or the
        request commits)."""
        model = self.vectors.model
        body = {"model": model, "input": list(texts.values())}
        try:
            response = await self.calls.embeddings(
                self.caller,
                body,
                correlation_id=f"similar-{uuid.uuid4()}",
                source="observability",
            )
        except NotFound as exc:
            raise ObservabilityError(
                f"similar events need the embeddings model {model!r}: {exc.message}",
                "FEATURE_NOT_SUPPORTED",
            ) from exc
        vectors = {
            event_id: normalised(item["embedding"])
            for event_id, item in zip(texts, response["data"], strict=True)
        }
        await self.vectors.save(vectors)
        return vectors
