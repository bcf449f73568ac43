"""Background responses: a job (on the durable queue, so a response outlives the process that
took it: a restarted server's worker runs it again) runs a queued response on the conversation
runtime, keeps its events as they come (a client streams them by id, from any replica) and
stores its end. A response cancelled meanwhile stops at its next event; nothing of it is stored.
A retried attempt starts its events over."""

from __future__ import annotations

import time
from typing import Any, Protocol

from maestrale.conversations.executors import ConversationServices, conversation_service
from maestrale.core.blobs import BlobStore
from maestrale.core.jobs.worker import JobContext, JobInterrupted, JobRegistry
from maestrale.core.uow import UnitOfWork
from maestrale.gateway.hooks import Caller
from maestrale.responses.events import ResponseEvents
from maestrale.responses.files import InputFiles
from maestrale.responses.schemas import ResponseCreate
from maestrale.responses.service import BACKGROUND, ResponsesService
from maestrale.responses.streaming import failure

# Events are kept in batches: at most this many, or this old (a client polls for them).
BATCH_EVENTS = 64
BATCH_SECONDS = 0.1


class ResponseServices(ConversationServices, Protocol):
    """What a background response reads of the process's services: a conversation's, and the
    blob store its input files are read from."""

    @property
    def blobs(self) -> BlobStore: ...


class BackgroundResponses:
    def __init__(self, services: ResponseServices) -> None:
        self.services = services

    def _service(self, work: UnitOfWork, caller: Caller) -> ResponsesService:
        conversations = conversation_service(self.services, work, caller, source="api")
        files = InputFiles.of(self.services.settings, self.services.blobs)
        return ResponsesService(work, conversations.tenant, conversations, files=files)

    async def run(self, ctx: JobContext) -> dict[str, Any] | None:
        tenant = ctx.tenant
        payload = ctx.payload
        response_id = str(payload["response_id"])
        caller = Caller(
            tenant.organization_id,
            tenant.workspace_id,
            payload.get("key_id"),
            payload.get("user_id"),
            payload.get("service_account_id"),
        )
        db = self.services.db
        async with db.transaction() as work:
            service = self._service(work, caller)
            row = await service.repo.fresh(response_id)
            if row is None or row.status not in ("queued", "in_progress") or row.request is None:
                return None  # deleted, cancelled or ended meanwhile
            await service.repo.clear_events(response_id)
            body = ResponseCreate.model_validate(row.request)
            started = {**row.body, "status": "in_progress"}
            await service.repo.update(response_id, status="in_progress", body=started)
        events = ResponseEvents()
        pending: list[dict[str, Any]] = events.start(started)
        flushed = time.monotonic()

        async def flush() -> None:
            nonlocal pending, flushed
            batch, pending, flushed = pending, [], time.monotonic()
            async with db.transaction() as work:
                service = self._service(work, caller)
                row = await service.repo.fresh(response_id)
                if row is None or row.status == "cancelled":
                    raise JobInterrupted("the response was cancelled")
                await service.repo.add_events(response_id, batch)

        async def emit(event: dict[str, Any]) -> None:
            ctx.check()
            pending.extend(events.on(event))
            if len(pending) >= BATCH_EVENTS or time.monotonic() - flushed >= BATCH_SECONDS:
                await flush()

        await flush()
        try:
            async with db.transaction() as work:
                service = self._service(work, caller)
                planned = await service.plan(body, response_id)
                planned.response = started
                response = await service.run(planned, emit)
                # Its last events commit with its end: a client streaming it sees both at once.
                await service.repo.add_events(response_id, [*pending, *events.finish(response)])
        except JobInterrupted:
            raise
        except Exception as exc:
            response = failure(started, exc)
            async with db.transaction() as work:
                service = self._service(work, caller)
                await service.keep(response, new=False)
                await service.repo.add_events(response_id, [*pending, *events.finish(response)])
        return {"status": response["status"]}


def register(registry: JobRegistry, services: ResponseServices) -> None:
    registry.register(BACKGROUND, BackgroundResponses(services).run)
