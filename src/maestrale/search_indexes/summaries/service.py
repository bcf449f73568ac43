"""The summary routes' work in the request's transaction: read a summary, write one by hand,
and start a generation (or find the one running, or the summary stored) for the stream to
follow. At most one generation of an index's language runs at a time: the row is taken for
update while it is decided, and a generation whose job ended without a word is not waited on."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.errors import BadRequest
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.jobs.tables import JobStatus
from maestrale.engines.registry import EngineRegistry
from maestrale.search_indexes.errors import SummaryNotFound
from maestrale.search_indexes.lookup import index_by_name
from maestrale.search_indexes.summaries.repository import IDLE, RUNNING, SummaryRepository
from maestrale.search_indexes.summaries.schemas import Language, SummaryOut, SummaryUpdate
from maestrale.search_indexes.summaries.tasks import ATTEMPTS, KIND
from maestrale.search_indexes.tables import SearchIndexSummary


class SummaryModelMissing(BadRequest):
    code = "summary_model_missing"


def summary_model(engines: EngineRegistry, configured: str | None) -> str:
    """The catalog id of the chat model that writes summaries: the setting, else the first
    chat model a real engine serves; 400 when there is none to use."""
    if configured:
        resolved = engines.resolve(configured)
        if resolved is None or not resolved.spec.has("completion_chat"):
            raise SummaryModelMissing(
                f"the summary model {configured!r} (MAESTRALE_SEARCH_INDEX_SUMMARY_MODEL) "
                "serves no chat completions"
            )
        return resolved.spec.id
    best = engines.best("completion_chat")
    if best is not None:
        return best.id
    raise SummaryModelMissing(
        "summaries need a chat model: none is served; set MAESTRALE_SEARCH_INDEX_SUMMARY_MODEL"
    )


def shown(row: SearchIndexSummary | None) -> SummaryOut:
    """The summary as the SDK reads it; 404 while none exists (a first generation running)."""
    if row is None or row.status is None:
        raise SummaryNotFound("this index has no summary in that language yet", param="language")
    return SummaryOut(content=row.content, status=row.status, translated=row.translated)


@dataclass(frozen=True, slots=True)
class Plan:
    """What a POST streams: the summary stored (`stored`), or the generation `job_id` to
    follow (`started` when this request queued it)."""

    index_id: str
    language: str
    stored: SummaryOut | None = None
    job_id: str | None = None
    started: bool = False


class SummaryService:
    def __init__(self, session: AsyncSession, tenant: Tenant, queue: JobQueue) -> None:
        self.session, self.tenant, self.queue = session, tenant, queue

    async def _repository(self, index_name: str, *, ready: bool) -> SummaryRepository:
        index = await index_by_name(self.session, self.tenant, index_name, ready=ready)
        return SummaryRepository(self.session, index.id)

    async def read(self, index_name: str, language: Language) -> SummaryOut:
        summaries = await self._repository(index_name, ready=False)
        return shown(await summaries.get(language.value))

    async def write(self, index_name: str, language: Language, body: SummaryUpdate) -> SummaryOut:
        """Store a summary written (or confirmed) by hand; a generation under way is dropped
        when it ends (what a person wrote is not overwritten by a model)."""
        summaries = await self._repository(index_name, ready=False)
        row = await summaries.ensure(language.value)
        row.content, row.status, row.translated = body.content, body.status, body.translated
        row.generation, row.error, row.job_id = IDLE, None, None
        row.updated_at = utcnow()
        await self.session.flush()
        return shown(row)

    async def generate(
        self, index_name: str, language: Language, *, force: bool, model: Callable[[], str]
    ) -> Plan:
        """The stored summary (unless `force`), else the generation to follow: the one
        running, or a new job (by the chat model `model()` names), queued in this
        transaction."""
        summaries = await self._repository(index_name, ready=True)
        row = await summaries.ensure(language.value)
        plan = Plan(summaries.index_id, language.value)
        if row.generation == RUNNING and row.job_id and await self._alive(row.job_id):
            return Plan(plan.index_id, plan.language, job_id=row.job_id)
        if row.status is not None and not force:
            return Plan(plan.index_id, plan.language, stored=shown(row))
        job = await self.queue.enqueue(
            self.session,
            KIND,
            {"index_id": plan.index_id, "language": plan.language, "model": model()},
            tenant=self.tenant,
            max_attempts=ATTEMPTS,
        )
        row.generation, row.job_id, row.error = RUNNING, job.id, None
        await self.session.flush()
        return Plan(plan.index_id, plan.language, job_id=job.id, started=True)

    async def _alive(self, job_id: str) -> bool:
        job = await self.queue.get(self.session, job_id, tenant=self.tenant)
        return job is not None and job.status not in JobStatus.FINAL
