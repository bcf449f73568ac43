"""The durable jobs of an index's life (queued by `service`, one per step, by the index's id):

- `search_indexes.provision`: for `mistral` embeddings, the model named must be served and
  serve embeddings, and a probe text it embeds must have the dimensions configured (else the
  index ends `failed` with why; a model down is retried, `failed` after the last attempt);
  then the vector table of the dimension is made and the index is `ready`.
- `search_indexes.apply_schema`: the new fields' defaults are written into the documents and
  chunks already indexed (in batches, each its own transaction: a retry carries on), then the
  schema is in force and the index `ready` again. It served its documents throughout.
- `search_indexes.delete`: the index's chunks, documents, summaries and row, in one transaction.
No transaction is open while the embeddings model is called (docs/architecture.md §3).
"""

from __future__ import annotations

from typing import Any, Protocol

from maestrale.core.clock import utcnow
from maestrale.core.db import Database
from maestrale.core.jobs.worker import JobContext, JobRegistry
from maestrale.libraries.index import store
from maestrale.libraries.index import vectors as vector_tables
from maestrale.libraries.index.capability import connection_backend
from maestrale.libraries.ingest.embedding import EngineServices, embed
from maestrale.libraries.ingest.errors import EmbeddingRefused, EmbeddingUnavailable
from maestrale.search_indexes.fields import KINDS
from maestrale.search_indexes.repository import DocumentRepository, IndexRepository
from maestrale.search_indexes.service import APPLY_SCHEMA_KIND, DELETE_KIND, PROVISION_KIND
from maestrale.search_indexes.tables import SearchIndex

PROBE = "Maestrale checks the dimensions of this embeddings model."
BATCH = 500


class IndexJobServices(EngineServices, Protocol):
    @property
    def db(self) -> Database: ...


class Failed(Exception):
    """Why the index cannot be provisioned (the same answer every time)."""


class IndexJobs:
    def __init__(self, services: IndexJobServices) -> None:
        self.services = services

    async def _finish(self, ctx: JobContext, index_id: str, **values: Any) -> SearchIndex | None:
        """Set `values` on the index, if it is still provisioning."""
        async with self.services.db.transaction() as work:
            # Locked: a deletion marked meanwhile is never overwritten.
            row = await IndexRepository(work.session, ctx.tenant).locked(index_id)
            if row is None or row.status != "provisioning":
                return None  # deleted meanwhile
            for key, value in values.items():
                setattr(row, key, value)
            row.modified_at = utcnow()
            if values.get("status") == "ready":
                backend, version = await connection_backend(await work.session.connection())
                if vector_tables.supports(backend, row.dimension):
                    await vector_tables.ensure_table(work.session, backend, row.dimension, version)
            return row

    async def provision(self, ctx: JobContext) -> dict[str, Any] | None:
        index_id = str(ctx.payload["index_id"])
        async with self.services.db.transaction() as work:
            row = await IndexRepository(work.session, ctx.tenant).get(index_id)
            if row is None or row.status != "provisioning" or row.pending_schema is not None:
                return None
            embedding, dimension = dict(row.config["embedding"]), row.dimension
        model = None
        if embedding["type"] == "mistral":
            try:
                model = await self._probe(str(embedding["name"]), dimension)
            except Failed as exc:
                await self._finish(ctx, index_id, status="failed", status_message=str(exc))
                return {"status": "failed"}
            except EmbeddingUnavailable as exc:
                if ctx.attempt < ctx.max_attempts:
                    raise
                await self._finish(ctx, index_id, status="failed", status_message=exc.message)
                return {"status": "failed"}
        await self._finish(
            ctx, index_id, status="ready", status_message=None, embedding_model=model
        )
        return {"status": "ready"}

    async def _probe(self, name: str, dimension: int) -> str:
        """The catalog id of the model `name`, once it embedded the probe in `dimension`."""
        resolved = self.services.engines.resolve(name)
        if resolved is None:
            raise Failed(f"the embeddings model {name!r} is not served")
        if not resolved.spec.has("embeddings"):
            raise Failed(f"the model {name!r} does not serve embeddings")
        try:
            embedded = await embed(self.services, [PROBE], model_name=name)
        except EmbeddingRefused as exc:
            raise Failed(exc.message) from exc
        found = int(embedded.vectors.shape[1])
        if found != dimension:
            raise Failed(
                f"the model {name!r} embeds in {found} dimensions, not the {dimension} configured"
            )
        return embedded.model

    async def apply_schema(self, ctx: JobContext) -> dict[str, Any] | None:
        index_id = str(ctx.payload["index_id"])
        db = self.services.db
        async with db.transaction() as work:
            row = await IndexRepository(work.session, ctx.tenant).get(index_id)
            if row is None or row.status != "provisioning" or row.pending_schema is None:
                return None
            defaults = _defaults(row.pending_schema)
        filled = 0
        if defaults["document_fields"]:
            after = ""
            while True:
                ctx.check()
                async with db.transaction() as work:
                    docs = DocumentRepository(work.session, ctx.tenant, index_id)
                    batch = await docs.batch_after(after, BATCH)
                    for doc in batch:
                        fields = {**defaults["document_fields"], **(doc.fields or {})}
                        if fields != doc.fields:
                            doc.fields, filled = fields, filled + 1
                if len(batch) < BATCH:
                    break
                after = batch[-1].id
        if defaults["chunk_fields"]:
            last = 0
            while True:
                ctx.check()
                async with db.transaction() as work:
                    docs = DocumentRepository(work.session, ctx.tenant, index_id)
                    chunks = await docs.chunk_batch_after(last, BATCH)
                    for chunk_id, attributes in chunks:
                        attributes = dict(attributes or {})
                        given = attributes.get("fields") or {}
                        fields = {**defaults["chunk_fields"], **given}
                        if fields != given:
                            attributes["fields"] = fields
                            await docs.set_chunk_attributes(chunk_id, attributes)
                if len(chunks) < BATCH:
                    break
                last = chunks[-1][0]
        async with db.transaction() as work:
            row = await IndexRepository(work.session, ctx.tenant).locked(index_id)
            if row is None or row.status != "provisioning" or row.pending_schema is None:
                return None
            row.schema, row.pending_schema = row.pending_schema, None
            row.status, row.modified_at = "ready", utcnow()
        return {"documents_filled": filled}

    async def delete(self, ctx: JobContext) -> dict[str, Any] | None:
        index_id = str(ctx.payload["index_id"])
        async with self.services.db.transaction() as work:
            indexes = IndexRepository(work.session, ctx.tenant)
            row = await indexes.locked(index_id)
            if row is None or row.status != "deleting":
                return None
            await store.delete_library(work.session, row.id)
            await indexes.remove(row)
        return {"deleted": index_id}


def _defaults(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The defaults of a schema's fields, by kind (a field without one has none to fill)."""
    return {
        kind: {
            name: spec["default"]
            for name, spec in (schema.get(kind) or {}).items()
            if "default" in spec
        }
        for kind in KINDS
    }


def register(registry: JobRegistry, services: IndexJobServices) -> None:
    jobs = IndexJobs(services)
    registry.register(PROVISION_KIND, jobs.provision)
    registry.register(APPLY_SCHEMA_KIND, jobs.apply_schema)
    registry.register(DELETE_KIND, jobs.delete)
