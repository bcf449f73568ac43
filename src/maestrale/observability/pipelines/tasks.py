"""The `observability.pipeline` job: evaluate the spans that arrived past a pipeline's
watermark, then schedule the pipeline's next run.

Each run reads a batch of matching spans past the watermark in a short transaction, runs every
config's judge on each sampled span with no session open, then, in one transaction, moves the
watermark (only if it is still where the batch began: a run that lost its lease writes nothing)
and stores the verdicts (once per config and span, whatever happens). A worker killed
mid-batch leaves the watermark and the verdicts as they were before the batch: the batch is
judged again by the retry, and nothing is stored twice.

A run ends when it has caught up (or after `max_batches`: the next run then follows at once);
its completion enqueues the next run (one chain of runs per pipeline, recorded in
`Pipeline.job_id`): `interval` seconds later after a run that judged something, twice as long
after each idle run, up to `idle_cap`. A disabled or deleted pipeline's chain stops; enabling it
again starts another (pipelines.service).

A judge call that fails as a model call fails (an invalid answer after its retries, an engine
error) is stored as a verdict with its `error` (never shown by searches) and not retried; any
other failure fails the run, which the queue retries."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import false, or_, true
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.core.errors import AppError
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.jobs.worker import JobContext, JobRegistry
from maestrale.gateway.hooks import Caller
from maestrale.gateway.platform_calls import PlatformCalls
from maestrale.observability.judges import judging
from maestrale.observability.judges.schemas import ClassificationOutput, JudgeDefinition
from maestrale.observability.pipelines.inputs import conversation, sampled
from maestrale.observability.pipelines.repository import (
    PipelineRepository,
    pipeline_tenant,
    span_values,
)
from maestrale.observability.span_evaluations.repository import SpanEvaluationRepository
from maestrale.telemetry.search import compile as search
from maestrale.telemetry.search.entities import SPANS

KIND = "observability.pipeline"
ATTEMPTS = 20
BATCH = 16
# Judge calls of a batch under way at once (no session is open meanwhile).
CONCURRENCY = 4
# Batches of one run: a pipeline far behind ends its run and queues the next at once, so that
# no job runs for ever and the workspaces' jobs take turns.
MAX_BATCHES = 50


@dataclass(frozen=True, slots=True)
class Config:
    id: str
    slug: str
    judge_id: str
    definition: JudgeDefinition
    mapping: dict[str, str]
    sampling: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Batch:
    caller: Caller
    configs: list[Config]
    spans: list[dict[str, Any]]
    seen: int
    to: int


def selectors_where(selectors: list[dict[str, Any]], dialect: str) -> Any:
    """The spans any of the selectors matches (a selector without a filter matches all)."""
    spans = [s for s in selectors if s.get("source_kind") == "span"]
    if not spans:
        return false()
    if any(not s.get("filter") for s in spans):
        return true()
    return or_(*(search.where(SPANS, s["filter"], dialect) for s in spans))


def verdict_values(definition: JudgeDefinition, answer: str | float) -> tuple[float, str]:
    """(score_value, score_label): a classification's label and its option's position; a
    regression's number."""
    if isinstance(definition.output, ClassificationOutput):
        values = [o.value for o in definition.output.options]
        return float(values.index(str(answer))), str(answer)
    return float(answer), ""


class PipelineTasks:
    def __init__(
        self,
        calls: PlatformCalls,
        *,
        interval: float = 5.0,
        idle_cap: float = 60.0,
        batch: int = BATCH,
        concurrency: int = CONCURRENCY,
        max_batches: int = MAX_BATCHES,
    ) -> None:
        self.calls = calls
        self.interval = interval
        self.idle_cap = idle_cap
        self.batch = batch
        self.concurrency = concurrency
        self.max_batches = max_batches

    async def run(self, ctx: JobContext) -> dict[str, Any]:
        pipeline_id = str(ctx.payload["pipeline_id"])
        async with ctx.db.transaction() as work:
            tenant = await pipeline_tenant(work.session, pipeline_id)
            if tenant is None:
                return {"status": "deleted", "evaluated": 0}
            newest = await PipelineRepository(work.session, tenant).latest_span_row_id()
        # Read up to the newest row the previous run saw (see spans_after); the first run of a
        # chain, up to the newest now.
        horizon = int(ctx.payload.get("horizon", newest))
        evaluated = batches = 0
        behind = False
        while True:
            ctx.check()
            if batches == self.max_batches:
                behind = True  # the next run follows at once; this one ends (and commits)
                break
            batches += 1
            batch = await self._read(ctx, tenant, pipeline_id, horizon)
            if batch is None:
                await self._stop(ctx, tenant, pipeline_id)
                return {"status": "stopped", "evaluated": evaluated}
            if batch.to == batch.seen:
                break
            verdicts = await self._verdicts(batch)
            async with ctx.db.transaction() as work:
                if not await PipelineRepository(work.session, tenant).advance(
                    pipeline_id, batch.seen, batch.to
                ):
                    return {"status": "superseded", "evaluated": evaluated}
                evaluated += await self._store(work.session, tenant, pipeline_id, verdicts)
            if len(batch.spans) < self.batch:
                break
        idle = 0 if evaluated else int(ctx.payload.get("idle", 0)) + 1
        ctx.on_complete(self._next_run(ctx, tenant, pipeline_id, idle, behind, newest))
        return {"status": "behind" if behind else "caught up", "evaluated": evaluated}

    async def _read(
        self, ctx: JobContext, tenant: Tenant, pipeline_id: str, horizon: int
    ) -> Batch | None:
        """The next batch, or None if the pipeline is gone or disabled."""
        async with ctx.db.transaction() as work:
            repo = PipelineRepository(work.session, tenant)
            pipeline = await repo.get(pipeline_id)
            if pipeline is None or not pipeline.enabled:
                return None
            rows = (await repo.configs_of([pipeline_id]))[pipeline_id]
            configs = [
                Config(
                    r.id,
                    r.slug,
                    r.judge_id,
                    JudgeDefinition.model_validate(r.judge_definition),
                    dict(r.mapping or {}),
                    r.sampling,
                )
                for r in rows
            ]
            where = selectors_where(pipeline.selectors, repo.dialect)
            seen = pipeline.last_span_row_id
            spans, to = await repo.spans_after(seen, where, self.batch, horizon)
            caller = Caller(
                tenant.organization_id, tenant.workspace_id, pipeline.key_id, pipeline.user_id
            )
            return Batch(caller, configs, [span_values(s) for s in spans], seen, to)

    async def _verdicts(self, batch: Batch) -> list[dict[str, Any]]:
        """Every sampled (span, config) pair's verdict, `concurrency` judge calls at a time; the
        first unexpected failure stops them all (the batch is then judged again)."""
        limit = asyncio.Semaphore(self.concurrency)

        async def one(config: Config, span: dict[str, Any]) -> dict[str, Any]:
            async with limit:
                return await self._verdict(batch.caller, config, span)

        pairs = [(c, s) for s in batch.spans for c in batch.configs if sampled(s, c.id, c.sampling)]
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [group.create_task(one(c, s)) for c, s in pairs]
        except BaseExceptionGroup as failed:
            raise failed.exceptions[0] from None
        return [t.result() for t in tasks]

    async def _verdict(
        self, caller: Caller, config: Config, span: dict[str, Any]
    ) -> dict[str, Any]:
        """The config's verdict on the span, as a span evaluation row; no session is open."""
        definition = config.definition
        values: dict[str, Any] = {
            "user_id": span["user_id"],
            "service_account_id": span["service_account_id"],
            "trace_id": span["trace_id"],
            "span_id": span["span_id"],
            "span_row_id": span["row_id"],
            "span_name": span["name"][:1024],
            "span_duration_ns": span["duration_ns"],
            "response_id": span["response_id"],
            "conversation_id": span["conversation_id"],
            "evaluation_name": definition.name,
            "pipeline_config_id": config.id,
            "pipeline_config_slug": config.slug,
            "meta": {
                "pipeline_config_slug": config.slug,
                "judge_id": config.judge_id,
                "model": definition.model_name,
            },
        }
        try:
            verdict = await judging.run_judge(
                self.calls, caller, definition, conversation(span, config.mapping)
            )
        except AppError as exc:
            return {**values, "timestamp_ns": time.time_ns(), "error": exc.message}
        score, label = verdict_values(definition, verdict.answer)
        return {
            **values,
            "timestamp_ns": time.time_ns(),
            "score_value": score,
            "score_label": label,
            "explanation": verdict.analysis,
        }

    @staticmethod
    async def _store(
        session: AsyncSession, tenant: Tenant, pipeline_id: str, verdicts: list[dict[str, Any]]
    ) -> int:
        """Store the verdicts; count each newly judged span in its trace. How many were new."""
        evaluations = SpanEvaluationRepository(session, tenant)
        spans: dict[tuple[str, str], bool] = {}
        stored = 0
        for verdict in verdicts:
            verdict["meta"]["pipeline_id"] = pipeline_id
            if await evaluations.add({**verdict, "pipeline_id": pipeline_id}):
                stored += 1
                if verdict.get("error") is None:
                    spans[(verdict["trace_id"], verdict["span_id"])] = True
        per_trace: dict[str, int] = {}
        for trace_id, _ in spans:
            per_trace[trace_id] = per_trace.get(trace_id, 0) + 1
        await evaluations.count_in_traces(per_trace)
        return stored

    async def _stop(self, ctx: JobContext, tenant: Tenant, pipeline_id: str) -> None:
        """End the chain: the pipeline has no run pending any more."""
        async with ctx.db.transaction() as work:
            repo = PipelineRepository(work.session, tenant)
            pipeline = await repo.get(pipeline_id)
            if pipeline is not None and pipeline.job_id == ctx.job_id:
                await repo.set_job(pipeline_id, None)

    def _next_run(
        self,
        ctx: JobContext,
        tenant: Tenant,
        pipeline_id: str,
        idle: int,
        behind: bool,
        horizon: int,
    ) -> Any:
        delay = 0.0 if behind else min(self.idle_cap, self.interval * 2 ** min(idle, 20))

        async def effects(session: AsyncSession) -> None:
            repo = PipelineRepository(session, tenant)
            pipeline = await repo.get(pipeline_id)
            # Another chain took over (the pipeline was disabled then enabled again), or none
            # should run: this one ends.
            if pipeline is None or not pipeline.enabled or pipeline.job_id != ctx.job_id:
                return
            job = await JobQueue(ctx.db).enqueue(
                session,
                KIND,
                {"pipeline_id": pipeline_id, "idle": idle, "horizon": horizon},
                tenant=tenant,
                delay=delay,
                max_attempts=ATTEMPTS,
                dedupe_key=f"pipeline-run-after:{ctx.job_id}",
            )
            await repo.set_job(pipeline_id, job.id)

        return effects


def register(registry: JobRegistry, calls: PlatformCalls) -> None:
    registry.register(KIND, PipelineTasks(calls).run)
