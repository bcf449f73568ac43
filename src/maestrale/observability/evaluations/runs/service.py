"""Evaluation runs: start (the dataset's live records become the run's inputs, then the durable
scoring job is enqueued), get, search (of one evaluation or of the workspace), statistics (all
records or those a filter keeps), and the run's records with their scores."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from maestrale.core.auth.principal import Principal
from maestrale.core.ids import new_id
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.pagination import PageParams
from maestrale.observability.datasets.repository import DatasetRepository, RecordRepository
from maestrale.observability.errors import ObservabilityError
from maestrale.observability.evaluations.evaluators import evaluator_out, snapshot
from maestrale.observability.evaluations.projects.repository import (
    EvaluationRepository,
    ProjectRepository,
)
from maestrale.observability.evaluations.projects.service import (
    BASE,
    ProjectService,
    creator_of,
)
from maestrale.observability.evaluations.runs.filters import (
    RecordFilter,
    RunFilter,
    record_conditions,
    run_conditions,
)
from maestrale.observability.evaluations.runs.records import record_outs
from maestrale.observability.evaluations.runs.repository import RunRepository
from maestrale.observability.evaluations.runs.schemas import (
    RecordOut,
    RunCreate,
    RunOut,
    RunStatisticsOut,
    RunWithRefsOut,
    Summary,
)
from maestrale.observability.evaluations.runs.statistics import run_statistics
from maestrale.observability.evaluations.runs.tasks import KIND
from maestrale.observability.evaluations.tables import EvalEvaluation, EvalRun
from maestrale.observability.pages import page_links
from maestrale.observability.pipelines.inputs import conversation
from maestrale.observability.pipelines.repository import span_values
from maestrale.telemetry.search import compile as search
from maestrale.telemetry.search.entities import SPANS

ATTEMPTS = 5


class RunService:
    def __init__(self, repo: RunRepository, queue: JobQueue) -> None:
        self.repo = repo
        self.queue = queue
        self.session = repo.session
        self.tenant = repo.tenant
        self.evaluations = EvaluationRepository(self.session, self.tenant)
        self.projects = ProjectRepository(self.session, self.tenant)

    async def evaluation(self, slug: str) -> EvalEvaluation:
        """The live evaluation of that slug (404 when there is none)."""
        return await ProjectService(self.projects, self.evaluations).evaluation(slug)

    async def start(self, evaluation_slug: str, body: RunCreate, principal: Principal) -> EvalRun:
        evaluation = await self.evaluation(evaluation_slug)
        judges = {j.id: j for j in await self.evaluations.judges_by_id(evaluation.judge_ids)}
        live = [judges[i] for i in evaluation.judge_ids if i in judges and not judges[i].deleted_at]
        if not live:
            raise ObservabilityError(
                "the evaluation has no live evaluator left", "VALIDATION_ERROR"
            )
        source, inputs = await self._inputs(body)
        tags = list(dict.fromkeys(body.tags))
        run = await self.repo.add(
            EvalRun(
                id=new_id(),
                evaluation_id=evaluation.id,
                project_id=evaluation.project_id,
                creator_id=creator_of(principal),
                key_id=principal.key_id,
                user_id=principal.user_id,
                name=body.name,
                description=body.description,
                tags=tags,
                meta=body.metadata,
                status="running",
                dataset_id=source.get("dataset_id"),
                source=source,
                evaluators=[snapshot(j) for j in live],
            )
        )
        await self.repo.flush()
        await self.repo.add_tags(run.id, tags)
        await self.repo.add_records(run, inputs)
        job = await self.queue.enqueue(
            self.session,
            KIND,
            {"run_id": run.id},
            tenant=self.tenant,
            max_attempts=ATTEMPTS,
            dedupe_key=f"evaluation-run:{run.id}",
        )
        run.job_id = job.id
        await self.repo.flush()
        return run

    async def _inputs(self, body: RunCreate) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Where the run's inputs come from, and the inputs (id, dataset_record_id, input)."""
        if body.span_search is not None:
            expression = body.span_search.expression
            condition = search.where(SPANS, expression, self.repo.dialect)
            spans = await self.repo.spans(condition, body.max_records)
            if not spans:
                raise ObservabilityError("no span matches the span search", "VALIDATION_ERROR")
            inputs: list[dict[str, Any]] = [
                {
                    "id": new_id(),
                    "dataset_record_id": None,
                    "input": {
                        "messages": conversation(span_values(s), {}),
                        "properties": {"trace_id": s.trace_id, "span_id": s.span_id},
                    },
                }
                for s in spans
            ]
            return {"span_search": expression}, inputs
        assert body.dataset_id is not None
        dataset = await DatasetRepository(self.session, self.tenant).alive_by_id(body.dataset_id)
        if dataset is None:
            raise ObservabilityError(
                f"dataset {body.dataset_id!r} not found", "DATASET_NOT_FOUND", status_code=404
            )
        records, _ = await RecordRepository(self.session, self.tenant).page(
            dataset.id, 0, body.max_records
        )
        if not records:
            raise ObservabilityError("the dataset has no record to evaluate", "VALIDATION_ERROR")
        rows: list[dict[str, Any]] = [
            {
                "id": new_id(),
                "dataset_record_id": r.id,
                "input": {"messages": r.payload.get("messages"), "properties": r.properties},
            }
            for r in records
        ]
        return {"dataset_id": dataset.id}, rows

    async def get(self, run_id: str) -> EvalRun:
        run = await self.repo.alive_by_id(run_id)
        if run is None:
            raise ObservabilityError(
                f"evaluation run {run_id!r} not found", "EVALUATION_RUN_NOT_FOUND", status_code=404
            )
        return run

    async def out(self, run: EvalRun) -> RunOut:
        evaluators = [evaluator_out(s) for s in run.evaluators]
        return RunOut(
            id=run.id,
            created_at=run.created_at,
            updated_at=run.updated_at,
            deleted_at=run.deleted_at,
            creator_id=run.creator_id,
            evaluation_id=run.evaluation_id,
            name=run.name,
            description=run.description,
            tags=run.tags,
            metadata=run.meta,
            evaluators=evaluators,
            run_info={"source": run.source},
            status=run.status,
            dataset_id=run.dataset_id,
            run_evaluators=evaluators,
            statistics=await run_statistics(self.repo, run.id, run.evaluators),
        )

    async def outs_with_refs(self, runs: Sequence[EvalRun]) -> list[RunWithRefsOut]:
        evaluations = {
            e.id: e for e in await self.evaluations.by_ids([r.evaluation_id for r in runs])
        }
        projects = {p.id: p for p in await self.projects.by_ids([r.project_id for r in runs])}
        outs = []
        for run in runs:
            e, p = evaluations.get(run.evaluation_id), projects.get(run.project_id)
            outs.append(
                RunWithRefsOut(
                    **(await self.out(run)).model_dump(),
                    evaluation=Summary(id=e.id, name=e.name, slug=e.slug) if e else None,
                    project=Summary(id=p.id, name=p.name, slug=p.slug) if p else None,
                )
            )
        return outs

    async def search(
        self, body: RunFilter, page: PageParams, evaluation_slug: str | None = None
    ) -> tuple[list[EvalRun], int, str | None, str | None]:
        conditions = run_conditions(body, self.repo.dialect)
        url = f"{BASE}/evaluation-runs_v2/search"
        if evaluation_slug is not None:
            evaluation = await self.evaluation(evaluation_slug)
            conditions.append(EvalRun.evaluation_id == evaluation.id)
            url = f"{BASE}/evaluations_v2/{evaluation.slug}/runs/search"
        rows, count = await self.repo.search(conditions, page.offset, page.limit)
        return rows, count, *page_links(url, page, count)

    async def statistics(self, run_id: str, body: RecordFilter | None = None) -> RunStatisticsOut:
        run = await self.get(run_id)
        conditions = record_conditions(body) if body is not None else []
        stats = await run_statistics(self.repo, run.id, run.evaluators, conditions)
        return RunStatisticsOut(run_id=run.id, statistics=stats)

    async def record(self, run_id: str, record_id: str) -> RecordOut:
        run = await self.get(run_id)
        record = await self.repo.record(run.id, record_id)
        if record is None:
            raise ObservabilityError(
                f"record {record_id!r} not found in run {run_id!r}",
                "EVALUATION_RECORD_NOT_FOUND",
                status_code=404,
            )
        return (await record_outs(self.repo, run.id, [record]))[0]

    async def records(
        self, run_id: str, body: RecordFilter, page: PageParams
    ) -> tuple[list[RecordOut], int, str | None, str | None]:
        run = await self.get(run_id)
        conditions = record_conditions(body)
        rows, count = await self.repo.record_page(
            run.id, conditions, body.sort, page.offset, page.limit
        )
        url = f"{BASE}/evaluation-runs_v2/{run.id}/records/search"
        return await record_outs(self.repo, run.id, rows), count, *page_links(url, page, count)
