"""Batch jobs: creation (checked up front: endpoint, model, input files, inline requests), reads
(with results inline), cancellation and deletion. The lines run in `tasks.py`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from datetime import datetime
from functools import partial
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.agents.service import AgentService
from maestrale.batch.endpoints import ENDPOINTS
from maestrale.batch.repository import BatchRepository
from maestrale.batch.schemas import BatchErrorOut, BatchJobCreate, BatchJobOut
from maestrale.batch.tables import BatchJob, BatchStatus
from maestrale.batch.tasks import ATTEMPTS, KIND
from maestrale.core.auth.principal import Tenant
from maestrale.core.blobs import BlobStore
from maestrale.core.clock import utcnow
from maestrale.core.errors import BadRequest, NotFound
from maestrale.core.ids import new_id
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.jobs.tables import JobStatus
from maestrale.core.pagination import PageParams
from maestrale.core.uow import AfterCommit
from maestrale.files.repository import FileRepository
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller

MAX_TIMEOUT_HOURS = 168
INLINE_MAX_LINES = 10_000


class BatchNotFound(NotFound):
    code = "batch_job_not_found"


class InvalidBatch(BadRequest):
    code = "invalid_batch_job"


class BatchService:
    def __init__(
        self,
        session: AsyncSession,
        tenant: Tenant,
        key_id: str | None,
        *,
        blobs: BlobStore,
        gateway: Gateway,
        queue: JobQueue,
    ) -> None:
        self.session, self.tenant, self.key_id = session, tenant, key_id
        self.blobs, self.gateway, self.queue = blobs, gateway, queue
        self.repo = BatchRepository(session, tenant)

    async def create(self, body: BatchJobCreate) -> BatchJob:
        if body.endpoint not in ENDPOINTS:
            supported = ", ".join(ENDPOINTS)
            raise InvalidBatch(
                f"endpoint {body.endpoint!r} cannot be run in batch (supported: {supported})",
                code="unsupported_endpoint",
                param="endpoint",
            )
        endpoint = ENDPOINTS[body.endpoint]
        if body.agent_id is not None and not endpoint.agents:
            agents = ", ".join(path for path, e in ENDPOINTS.items() if e.agents)
            raise InvalidBatch(
                f"jobs of {body.endpoint} run on a `model`; only {agents} jobs may run on an agent",
                code="agents_unavailable",
                param="agent_id",
            )
        if (body.agent_id is None) == (not body.model):
            raise InvalidBatch(
                "give the `model` the lines run on"
                if body.agent_id is None
                else "give either `model` or `agent_id`, not both",
                param="model",
            )
        if not 1 <= body.timeout_hours <= MAX_TIMEOUT_HOURS:
            raise InvalidBatch(
                f"timeout_hours must be between 1 and {MAX_TIMEOUT_HOURS}", param="timeout_hours"
            )
        # 404 for an unknown model or agent, 400 for a model that does not serve the endpoint:
        # now, not once per line.
        if body.agent_id is not None:
            await AgentService(self.session, self.tenant, self.gateway.registry).agent_version(
                body.agent_id, None
            )
        else:
            assert body.model is not None
            caller = Caller(
                self.tenant.organization_id,
                self.tenant.workspace_id,
                self.key_id,
                self.tenant.user_id,
            )
            await self.gateway.open(
                caller, body.model, endpoint.capability, correlation_id="", source="batch"
            )
        input_files = body.input_files or []
        total = await self._count_input_lines(input_files)
        batch_id = new_id()
        requests_blob = None
        if body.requests:
            requests_blob = f"{self.tenant.workspace_id}/batch/{batch_id}/requests.jsonl"
            total += len(body.requests)
        if total == 0:
            raise InvalidBatch(
                "the job has no requests: give input_files with lines, or requests",
                param="input_files",
            )
        row = BatchJob(
            id=batch_id,
            user_id=self.tenant.user_id,
            key_id=self.key_id,
            endpoint=body.endpoint,
            model=body.model,
            agent_id=body.agent_id,
            input_files=input_files,
            requests_blob=requests_blob,
            meta=body.metadata,
            timeout_hours=body.timeout_hours,
            status=BatchStatus.QUEUED,
            total_requests=total,
            errors=[],
            created_at=utcnow(),
        )
        await self.repo.add(row)  # first: a value the database refuses leaves no blob behind
        if requests_blob is not None:
            await self.blobs.put(requests_blob, _jsonl(body))
        job = await self.queue.enqueue(
            self.session,
            KIND,
            {"batch_id": batch_id},
            tenant=self.tenant,
            max_attempts=ATTEMPTS,
            dedupe_key=f"batch:{batch_id}",
        )
        row.job_id = job.id
        await self.session.flush()
        return row

    async def _count_input_lines(self, file_ids: list[str]) -> int:
        if len(set(file_ids)) != len(file_ids):
            raise InvalidBatch("input_files names a file twice", param="input_files")
        files = FileRepository(self.session, self.tenant, self.key_id)
        total = 0
        for file_id in file_ids:
            row = await files.get(file_id)
            if row is None:
                raise NotFound(
                    f"input file {file_id} not found", code="file_not_found", param="input_files"
                )
            if row.num_lines is None:
                raise InvalidBatch(
                    f"input file {file_id} ({row.filename}) is not a JSONL file",
                    param="input_files",
                )
            total += row.num_lines
        return total

    async def get(self, batch_id: str) -> BatchJob:
        row = await self.repo.get(batch_id)
        if row is None:
            raise BatchNotFound(f"batch job {batch_id} not found", param="job_id")
        return await self._reconcile(row)

    async def _reconcile(self, row: BatchJob) -> BatchJob:
        """A job whose worker gave up for good (attempts used up by crashes) cannot move on by
        itself any more: say so instead of showing it running forever."""
        if row.status in BatchStatus.FINAL or row.job_id is None:
            return row
        job = await self.queue.get(self.session, row.job_id)
        if job is None or job.status not in (JobStatus.FAILED, JobStatus.CANCELLED):
            return row
        cancelled = row.status == BatchStatus.CANCELLATION_REQUESTED
        status = BatchStatus.CANCELLED if cancelled else BatchStatus.FAILED
        message = f"the job stopped: {job.last_error or job.status}"
        await self.repo.set_status(
            row,
            row.status,
            status=status,
            completed_at=utcnow(),
            errors=[*row.errors, {"message": message[:2000], "count": 1}],
        )
        return row

    async def describe(self, row: BatchJob, *, inline: bool) -> BatchJobOut:
        """The wire job. `errors` holds why the job failed, if it did, and the most frequent
        reasons lines failed, with counts; with `inline`, the results instead: `outputs` holds
        the output file's lines and `errors` the error file's (each with `message` and `count`
        too), after any error of the job itself."""
        out = BatchJobOut.of(row)
        if not inline:
            return out
        if row.completed_requests > INLINE_MAX_LINES:
            raise InvalidBatch(
                f"the job has {row.completed_requests} results; inline results stop at "
                f"{INLINE_MAX_LINES}: download output_file and error_file instead",
                code="too_many_inline_results",
                param="inline",
            )
        outputs: list[dict[str, Any]] = []
        errors: list[BatchErrorOut] = []
        for result in await self.repo.results(row, INLINE_MAX_LINES):
            record = orjson.loads(result.record)
            if result.ok:
                outputs.append(record)
            else:
                errors.append(BatchErrorOut(message=result.error or "failed", count=1, **record))
        out.outputs = outputs
        out.errors = [BatchErrorOut.model_validate(e) for e in row.errors or []] + errors
        return out

    async def page(
        self,
        page: PageParams,
        *,
        model: str | None,
        agent_id: str | None,
        metadata: Mapping[str, str],
        created_after: datetime | None,
        created_by_me: bool,
        statuses: list[str],
        newest_first: bool,
    ) -> tuple[list[BatchJob], int]:
        unknown = sorted(set(statuses) - BatchStatus.ALL)
        if unknown:
            raise BadRequest(
                f"unknown status {unknown[0]!r} (known: {', '.join(sorted(BatchStatus.ALL))})",
                code="invalid_status",
                param="status",
            )
        return await self.repo.page(
            page,
            model=model,
            agent_id=agent_id,
            metadata=metadata,
            created_after=created_after,
            statuses=statuses,
            newest_first=newest_first,
            creator=self.repo.created_by(self.key_id) if created_by_me else None,
        )

    async def cancel(self, batch_id: str) -> BatchJob:
        """QUEUED → CANCELLED at once; RUNNING → CANCELLATION_REQUESTED (no new line starts,
        lines in flight finish, then CANCELLED); any other status is left as it is."""
        row = await self.get(batch_id)
        now = utcnow()
        if row.status == BatchStatus.QUEUED:
            await self.repo.set_status(
                row, BatchStatus.QUEUED, status=BatchStatus.CANCELLED, completed_at=now
            )
        if row.status == BatchStatus.RUNNING:
            await self.repo.set_status(
                row, BatchStatus.RUNNING, status=BatchStatus.CANCELLATION_REQUESTED
            )
        return row

    async def delete(self, batch_id: str, on_commit: Callable[[AfterCommit], None]) -> None:
        """Delete the job and its results (its output and error files stay); a running job
        stops. The blob of its inline requests goes once the deletion has committed."""
        row = await self.get(batch_id)
        if row.job_id is not None:
            await self.queue.request_cancel(self.session, row.job_id)
        await self.repo.delete(row)
        if row.requests_blob:
            on_commit(partial(self._drop_blob, row.requests_blob))

    async def _drop_blob(self, key: str) -> None:
        await self.blobs.delete(key)


async def _jsonl(body: BatchJobCreate) -> AsyncIterator[bytes]:
    for request in body.requests or []:
        doc: dict[str, Any] = {"body": request.body}
        if request.custom_id is not None:
            doc["custom_id"] = request.custom_id
        yield orjson.dumps(doc) + b"\n"
