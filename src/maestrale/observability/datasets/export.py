"""Export a dataset to a JSONL file of the Files API and hand back a signed link to it.

The records are read from the database in keyset pages of EXPORT_BATCH and streamed to blob
storage as they are read: the export is never held in memory whole. The request's blob store
(`ReleasingBlobStore`) ends the transaction of the pages read before each chunk of their lines
reaches it (a remote store, perhaps): no transaction stays open while the file is written.
One line per live record,
in the records' order: `{"id", "source", "payload", "properties"}` — the shape the file import
reads back. The file belongs to the workspace (visibility `workspace`, purpose
`dataset-export`), expires after EXPORT_DAYS, and the link is valid LINK_HOURS (a new one can be
signed with `GET /v1/files/{id}/url`)."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from datetime import datetime, timedelta

import orjson

from maestrale.core.blobs import CHUNK, BlobStore
from maestrale.core.clock import utcnow
from maestrale.core.ids import new_id
from maestrale.core.jobs.queue import JobQueue
from maestrale.files.service import EXPIRE_KIND, FileService
from maestrale.files.tables import StoredFile
from maestrale.observability.datasets.service import DatasetService

EXPORT_BATCH = 500
EXPORT_DAYS = 7
LINK_HOURS = 24


async def export_lines(datasets: DatasetService, dataset_id: str) -> AsyncIterator[bytes]:
    """The dataset's records as JSONL, in chunks of about CHUNK bytes."""
    buffer = bytearray()
    after: tuple[datetime, str] | None = None
    while True:
        rows = await datasets.records.after(dataset_id, after, EXPORT_BATCH)
        for r in rows:
            doc = {"id": r.id, "source": r.source, "payload": r.payload, "properties": r.properties}
            buffer += orjson.dumps(doc)
            buffer += b"\n"
            if len(buffer) >= CHUNK:
                yield bytes(buffer)
                buffer.clear()
        if len(rows) < EXPORT_BATCH:
            break
        after = (rows[-1].created_at, rows[-1].id)
    if buffer:
        yield bytes(buffer)


async def export_to_jsonl(
    datasets: DatasetService,
    dataset_id: str,
    *,
    key_id: str | None,
    blobs: BlobStore,
    queue: JobQueue,
    base_url: str,
    secret: bytes,
) -> str:
    """Write the export file and return a signed link to its content. The file's row and its
    expiry are written in the request's transaction, after the content is stored; `blobs` is
    the request's (`ReleasingBlobStore`), which ends the transaction before each write."""
    dataset = await datasets.get(dataset_id)
    tenant = datasets.datasets.tenant
    session = datasets.datasets.session
    files = FileService(session, tenant, key_id, blobs)
    file_id = new_id()
    key = files.blob_key(file_id)
    digest = hashlib.sha256()
    lines = 0

    async def counted() -> AsyncIterator[bytes]:
        nonlocal lines
        async for chunk in export_lines(datasets, dataset.id):
            digest.update(chunk)
            lines += chunk.count(b"\n")
            yield chunk

    size = await blobs.put(key, counted())
    expires_at = utcnow() + timedelta(days=EXPORT_DAYS)
    try:
        row = StoredFile(
            id=file_id,
            user_id=tenant.user_id,
            key_id=key_id,
            visibility="workspace",
            filename=f"dataset-{dataset.id}.jsonl",
            purpose="dataset-export",
            sample_type="instruct",
            source="service",
            size=size,
            num_lines=lines,
            mimetype="application/jsonl",
            signature=digest.hexdigest(),
            blob_key=key,
            expires_at=expires_at,
            created_at=utcnow(),
        )
        await files.repo.add(row)
        await queue.enqueue(
            session,
            EXPIRE_KIND,
            {"file_id": file_id},
            tenant=tenant,
            run_at=expires_at,
            dedupe_key=f"file-expire:{file_id}",
        )
        return await files.signed_url(file_id, LINK_HOURS, base_url, secret)
    except BaseException:
        await blobs.delete(key)
        raise
