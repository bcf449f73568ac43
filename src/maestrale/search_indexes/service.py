"""The life of a search index: created `provisioning` (a durable job checks the embeddings model
and makes the vector table, then `ready` or `failed`), listed by cursor, its schema updated by
addition only (`provisioning` again while a job applies the defaults, serving all along), and
deleted (`deleting` at once, gone once a job has removed its chunks, documents and summaries).

The jobs are queued in the request's transaction and the process's worker is rung once it has
committed, as the webhooks' receiver does, so that the usual index is ready within moments."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import as_utc, utcnow
from maestrale.core.errors import BadRequest
from maestrale.core.ids import new_id
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.pagination import decode_cursor, encode_cursor
from maestrale.core.uow import AfterCommit
from maestrale.search_indexes.errors import IndexNotReady, NameTaken
from maestrale.search_indexes.fields import check_additive, validated_schema
from maestrale.search_indexes.lookup import index_by_name
from maestrale.search_indexes.repository import IndexFilter, IndexRepository
from maestrale.search_indexes.schemas import CreateIndexIn, ManagedIndexFieldsIn
from maestrale.search_indexes.tables import SearchIndex

PROVISION_KIND = "search_indexes.provision"
APPLY_SCHEMA_KIND = "search_indexes.apply_schema"
DELETE_KIND = "search_indexes.delete"
JOB_ATTEMPTS = 5


def _stamp(value: datetime | None) -> str | None:
    return None if value is None else as_utc(value).isoformat()


def index_doc(row: SearchIndex) -> dict[str, Any]:
    """The SDK's `ManagedIndexResponse`. While an update applies, its schema is the new one."""
    return {
        "id": row.id,
        "name": row.name,
        "creator_id": row.creator_id,
        "status": row.status,
        "status_message": row.status_message,
        "schema": row.pending_schema or row.schema,
        "config": row.config,
        "created_at": _stamp(row.created_at),
        "modified_at": _stamp(row.modified_at),
    }


def _bad_token() -> BadRequest:
    return BadRequest("invalid page token", code="invalid_page_token", param="page_token")


def decode_token(token: str) -> tuple[datetime, str]:
    """The (created_at, id) a page token names; 400 for anything this service did not make."""
    try:
        cursor = decode_cursor(token)
    except BadRequest as exc:
        raise _bad_token() from exc
    stamp, id_ = cursor.get("t"), cursor.get("i")
    if not isinstance(stamp, str) or not isinstance(id_, str) or len(id_) > 200:
        raise _bad_token()
    try:
        return as_utc(datetime.fromisoformat(stamp)), id_
    except ValueError as exc:
        raise _bad_token() from exc


class IndexService:
    def __init__(
        self,
        session: AsyncSession,
        tenant: Tenant,
        queue: JobQueue,
        on_commit: Callable[[AfterCommit], None],
        wake: AfterCommit,
    ) -> None:
        self.session = session
        self.tenant = tenant
        self.repo = IndexRepository(session, tenant)
        self.queue = queue
        self.on_commit = on_commit
        self.wake = wake

    async def _enqueue(self, kind: str, row: SearchIndex, key: str) -> None:
        await self.queue.enqueue(
            self.session,
            kind,
            {"index_id": row.id},
            tenant=Tenant(row.organization_id, row.workspace_id),
            max_attempts=JOB_ATTEMPTS,
            dedupe_key=f"search-index:{row.id}:{key}",
        )
        self.on_commit(self.wake)

    async def create(self, body: CreateIndexIn, creator_id: str) -> SearchIndex:
        """A new index, `provisioning` (409 `name_taken` when the workspace has the name)."""
        embedding = body.config.embedding
        schema = validated_schema(body.schema_, embedding.type)
        now = utcnow()
        row = SearchIndex(
            id=new_id(),
            name=body.name,
            creator_id=creator_id,
            status="provisioning",
            schema=schema,
            config=body.config.model_dump(mode="json", exclude_none=True),
            embedding_model=None,
            dimension=embedding.dimensions,
            document_count=0,
            chunk_count=0,
            created_at=now,
            modified_at=now,
        )
        if not await self.repo.add_unique(row):
            raise NameTaken(f"a search index named {body.name!r} exists already", param="name")
        await self._enqueue(PROVISION_KIND, row, "provision")
        return row

    async def get(self, name: str) -> SearchIndex:
        return await index_by_name(self.session, self.tenant, name, ready=False)

    async def page(
        self, where: IndexFilter, size: int, token: str | None
    ) -> tuple[list[SearchIndex], str | None]:
        """A page of indexes, newest first, and the token of the next (None on the last)."""
        after = decode_token(token) if token else None
        rows = await self.repo.page(where, after, size + 1)
        more, rows = len(rows) > size, rows[:size]
        if not more or not rows:
            return rows, None
        last = rows[-1]
        return rows, encode_cursor({"t": as_utc(last.created_at).isoformat(), "i": last.id})

    async def update(self, name: str, given: ManagedIndexFieldsIn) -> SearchIndex:
        """Take `given` as the index's whole new schema, if it only adds (else 422): pending
        until the job has filled the new fields' defaults in."""
        row = await self.get(name)
        if row.status != "ready":
            raise IndexNotReady(
                f"the search index {name!r} is {row.status}: its schema cannot change now",
                param="index_name",
            )
        schema = validated_schema(given, str(row.config["embedding"]["type"]))
        check_additive(row.schema, schema)
        row.pending_schema = schema
        row.status = "provisioning"
        row.modified_at = utcnow()
        await self.session.flush()
        await self._enqueue(APPLY_SCHEMA_KIND, row, f"schema:{uuid.uuid4().hex}")
        return row

    async def delete(self, name: str) -> SearchIndex:
        """Mark the index `deleting` (a 404 from now on) and queue its removal."""
        row = await self.get(name)
        row.status = "deleting"
        row.status_message = None
        row.modified_at = utcnow()
        await self.session.flush()
        await self._enqueue(DELETE_KIND, row, "delete")
        return row
