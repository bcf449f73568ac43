"""Background work of libraries: processing a document, and removing one whose expiry passed.

Processing a document (`libraries.process`, one job per generation of the document):
1. a short transaction marks it in_progress, if it still exists at that generation;
2. with no transaction open, its bytes are read and INGEST's pipeline extracts, chunks and
   embeds them; the extracted pages are stored as a blob (a JSON list of page texts);
3. one short transaction, which first takes the document's row (and finds it still there at
   that generation: deleted or reprocessed meanwhile, the result is dropped), replaces the
   document's chunks in the index and records what processing found; then the usage is
   accounted (pages and embedded tokens: the admin usage's `libraries_api`).
A document that cannot be read (`Unreadable`, or a model refusing its text) ends in `error`
with the reason, at once; any other failure is retried, and ends in `error` after the last
attempt. A job that dies without a word (its worker killed) is shown as an error by the reads
(`DocumentService.shown`), so that no document stays in progress for ever.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from maestrale.accounting.recorder import Recorder
from maestrale.config import Settings
from maestrale.core.blobs import BlobStore
from maestrale.core.clock import utcnow
from maestrale.core.errors import AppError
from maestrale.core.jobs.worker import JobContext, JobInterrupted, JobRegistry, describe_error
from maestrale.engines.registry import EngineRegistry
from maestrale.libraries.documents import states, text
from maestrale.libraries.documents.repository import WorkspaceDocuments
from maestrale.libraries.documents.service import remove_document
from maestrale.libraries.ingest.errors import Unreadable
from maestrale.libraries.queueing import EXPIRE_KIND, PROCESS_KIND
from maestrale.libraries.repository import LibraryRepository
from maestrale.libraries.service import blob_remover

if TYPE_CHECKING:
    from maestrale.libraries.ingest.pipeline import Ingested

log = logging.getLogger("maestrale.libraries")

# The endpoint of the usage rows of processing (the admin usage's `libraries_api`).
USAGE_ENDPOINT = "libraries"


@dataclass(frozen=True, slots=True)
class Started:
    """What processing needs of a document, read when it started."""

    document_id: str
    generation: int
    organization_id: str
    workspace_id: str
    library_id: str
    blob_key: str
    name: str
    mime_type: str | None
    extension: str | None
    chunk_size: int | None
    user_id: str | None


def mime_type(declared: str | None, found: str) -> str:
    """The type found in the bytes, but for a text the client named more precisely (CSV)."""
    if declared and declared.startswith("text/") and found == "text/plain":
        return declared
    return found


def permanent_reason(exc: BaseException) -> str | None:
    """Why the document itself cannot be processed (the same answer every time), or None for
    a failure worth retrying (a model down, the database away)."""
    if isinstance(exc, Unreadable):
        return exc.reason
    if isinstance(exc, AppError) and 400 <= exc.status_code < 500:
        return exc.message
    return None


class LibraryServices(Protocol):
    """What processing documents reads of the process's services: the settings and engines of
    ingestion (its `EngineServices`), the blob store and the accounting recorder."""

    @property
    def settings(self) -> Settings: ...

    @property
    def engines(self) -> EngineRegistry: ...

    @property
    def blobs(self) -> BlobStore: ...

    @property
    def recorder(self) -> Recorder: ...


class LibraryTasks:
    def __init__(self, services: LibraryServices) -> None:
        self.services = services

    async def process(self, ctx: JobContext) -> dict[str, Any]:
        document_id = str(ctx.payload["document_id"])
        generation = int(ctx.payload["generation"])
        started = await self._start(ctx, document_id, generation)
        if started is None:
            return {"status": "superseded"}
        try:
            begun = time.perf_counter()
            ingested = await self._ingest(started)
            return await self._finish(ctx, started, ingested, time.perf_counter() - begun)
        except JobInterrupted:
            raise
        except Exception as exc:
            reason = permanent_reason(exc)
            if reason is None and ctx.attempt < ctx.max_attempts:
                raise  # retried after a backoff
            if reason is None:
                reason = f"processing failed: {describe_error(exc, ctx.payload)}"
            await self._fail(ctx, started, reason)
            if permanent_reason(exc) is None:
                raise  # the job itself failed too, with the same error
            return {"status": states.ERROR, "reason": reason}

    async def _start(self, ctx: JobContext, document_id: str, generation: int) -> Started | None:
        async with ctx.db.transaction() as work:
            documents = WorkspaceDocuments(work.session, ctx.tenant)
            claimed = await documents.claim(
                document_id,
                generation,
                process_status=states.IN_PROGRESS,
                processing_status=states.LABELS[states.IN_PROGRESS],
            )
            row = await documents.current(document_id) if claimed else None
            if row is None:
                return None
            library = await LibraryRepository(work.session, ctx.tenant).of_workspace(row.library_id)
            return Started(
                document_id=row.id,
                generation=generation,
                organization_id=row.organization_id,
                workspace_id=row.workspace_id,
                library_id=row.library_id,
                blob_key=row.blob_key,
                name=row.name,
                mime_type=row.mime_type,
                extension=row.extension,
                chunk_size=None if library is None else library.chunk_size,
                user_id=row.uploaded_by_id if row.uploaded_by_type == "User" else None,
            )

    async def _ingest(self, started: Started) -> Ingested:
        """Read and ingest the document, no transaction open."""
        from maestrale.libraries.ingest.pipeline import ingest

        try:
            data = await text.read_blob(self.services.blobs, started.blob_key)
        except KeyError as exc:
            raise Unreadable("the document's content is no longer stored") from exc
        return await ingest(
            self.services,
            data=data,
            filename=started.name,
            mimetype=started.mime_type,
            chunk_size=started.chunk_size,
        )

    async def _finish(
        self, ctx: JobContext, started: Started, ingested: Ingested, seconds: float
    ) -> dict[str, Any]:
        from maestrale.libraries.index import replace_document

        pages = ingested.extracted.pages
        embedded = ingested.embedded
        blobs = self.services.blobs
        key = text.text_key(
            started.workspace_id, started.library_id, started.document_id, started.generation
        )
        await text.store_pages(blobs, key, pages)
        previous: str | None = None
        row = None
        try:
            async with ctx.db.transaction() as work:
                documents = WorkspaceDocuments(work.session, ctx.tenant)
                current = await documents.claim(
                    started.document_id,
                    started.generation,
                    process_status=states.DONE,
                    processing_status=states.LABELS[states.DONE],
                    number_of_pages=len(pages),
                    tokens_processing_total=embedded.tokens,
                    tokens_processing_main_content=embedded.tokens,
                    last_processed_at=utcnow(),
                    mime_type=mime_type(started.mime_type, ingested.extracted.mimetype),
                    extension=started.extension or ingested.extracted.extension[:32] or None,
                )
                row = await documents.current(started.document_id) if current else None
                if row is not None:
                    previous, row.text_key = row.text_key, key
                    await replace_document(
                        work.session,
                        organization_id=started.organization_id,
                        workspace_id=started.workspace_id,
                        library_id=started.library_id,
                        document_id=started.document_id,
                        chunks=ingested.chunks,
                        vectors=embedded.vectors,
                        model=embedded.model,
                    )
                    await work.session.flush()
        except BaseException:
            await blob_remover(blobs, [key])
            raise
        if row is None:  # deleted or reprocessed meanwhile: this result is nobody's
            await blob_remover(blobs, [key])
            return {"status": "superseded"}
        if previous and previous != key:
            await blob_remover(blobs, [previous])
        self._account(
            started, pages=len(pages), model=embedded.model, tokens=embedded.tokens, seconds=seconds
        )
        return {
            "status": states.DONE,
            "pages": len(pages),
            "chunks": len(ingested.chunks),
            "tokens": embedded.tokens,
        }

    async def _fail(self, ctx: JobContext, started: Started, reason: str) -> None:
        """Put the document in error (if still at this generation), without chunks or text."""
        from maestrale.libraries.index import delete_document

        previous: str | None = None
        async with ctx.db.transaction() as work:
            documents = WorkspaceDocuments(work.session, ctx.tenant)
            claimed = await documents.claim(
                started.document_id,
                started.generation,
                process_status=states.ERROR,
                processing_status=states.error_label(reason),
                number_of_pages=None,
                tokens_processing_total=0,
                tokens_processing_main_content=None,
                last_processed_at=utcnow(),
            )
            row = await documents.current(started.document_id) if claimed else None
            if row is not None:
                previous, row.text_key = row.text_key, None
                await delete_document(work.session, started.library_id, started.document_id)
                await work.session.flush()
        if previous:
            await blob_remover(self.services.blobs, [previous])
        log.info("library document %s not processed: %.300s", started.document_id, reason)

    def _account(
        self, started: Started, *, pages: int, model: str, tokens: int, seconds: float
    ) -> None:
        """The usage of one processing: pages read, tokens embedded at the model's price."""
        resolved = self.services.engines.resolve(model)
        price = 0.0 if resolved is None else resolved.spec.price.input_per_million
        self.services.recorder.record(
            {
                "id": str(uuid.uuid4()),
                "organization_id": started.organization_id,
                "workspace_id": started.workspace_id,
                "key_id": None,
                "user_id": started.user_id,
                "model": model,
                "endpoint": USAGE_ENDPOINT,
                "source": USAGE_ENDPOINT,
                "prompt_tokens": tokens,
                "completion_tokens": 0,
                "total_tokens": tokens,
                "cost": tokens * price / 1_000_000,
                "audio_seconds": 0.0,
                "pages": pages,
                "latency_ms": seconds * 1000,
                "status_code": 200,
                "correlation_id": started.document_id,
                "created_at": utcnow(),
            }
        )

    async def expire(self, ctx: JobContext) -> dict[str, Any]:
        """Delete the document (chunks, row, then blobs) if its expiry has passed."""
        document_id = str(ctx.payload["document_id"])
        keys: list[str] | None = None
        async with ctx.db.transaction() as work:
            row = await WorkspaceDocuments(work.session, ctx.tenant).current(document_id)
            if row is not None and row.expires_at is not None and row.expires_at <= utcnow():
                keys = await remove_document(work.session, row)
            if keys:
                work.on_commit(partial(blob_remover, self.services.blobs, keys))
        return {"deleted": keys is not None}


def register(registry: JobRegistry, services: LibraryServices) -> None:
    tasks = LibraryTasks(services)
    # Reading (OCR included) has its own limit; embedding and indexing get as long again.
    timeout = max(3600.0, 2 * services.settings.library_extract_timeout_seconds)
    registry.register(PROCESS_KIND, tasks.process, timeout=timeout)
    registry.register(EXPIRE_KIND, tasks.expire)
