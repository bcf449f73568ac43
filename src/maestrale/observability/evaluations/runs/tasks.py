"""The `observability.evaluation_run` job: score a run's records one by one with each evaluator.

A record's scores are committed together with its `scored_at` before the next record starts, and
only records without `scored_at` are scored: a worker killed mid-run resumes with the records not
yet scored and never scores one twice. A judge call that fails (an invalid answer after its
retries, an engine error) is a `failed` score with its error. No session is open while a judge's
model runs: each record is read in a short transaction, judged with nothing open, and its scores
written in another. Each judge call goes through the gateway (accounted, recorded as an event)."""

from __future__ import annotations

from typing import Any

from maestrale.core.auth.principal import Tenant
from maestrale.core.errors import AppError
from maestrale.core.ids import new_id
from maestrale.core.jobs.worker import JobContext, JobRegistry
from maestrale.gateway.hooks import Caller
from maestrale.gateway.platform_calls import PlatformCalls
from maestrale.observability.evaluations.runs.repository import RunRepository, run_tenant
from maestrale.observability.judges import judging
from maestrale.observability.judges.schemas import JudgeDefinition

KIND = "observability.evaluation_run"


def conversation(input_: Any) -> tuple[list[dict[str, Any]] | None, dict[str, Any] | None]:
    """The messages (and properties) a record's input gives the judges, None if it has none."""
    if not isinstance(input_, dict):
        return None, None
    messages = input_.get("messages")
    properties = input_.get("properties")
    if not isinstance(messages, list) or not messages:
        return None, None
    return messages, properties if isinstance(properties, dict) else None


class EvaluationRunTasks:
    def __init__(self, calls: PlatformCalls) -> None:
        self.calls = calls

    async def run(self, ctx: JobContext) -> dict[str, Any]:
        run_id = str(ctx.payload["run_id"])
        try:
            return await self._run(ctx, run_id)
        except Exception:
            if ctx.attempt >= ctx.max_attempts:
                await self._set_status(ctx, run_id, "failed")
            raise

    async def _tenant(self, ctx: JobContext, run_id: str) -> Tenant | None:
        async with ctx.db.transaction() as work:
            return await run_tenant(work.session, run_id)

    async def _set_status(self, ctx: JobContext, run_id: str, status: str) -> None:
        tenant = await self._tenant(ctx, run_id)
        if tenant is not None:
            async with ctx.db.transaction() as work:
                await RunRepository(work.session, tenant).set_status(run_id, status)

    async def _run(self, ctx: JobContext, run_id: str) -> dict[str, Any]:
        scored = 0
        tenant = await self._tenant(ctx, run_id)
        if tenant is None:
            return {"status": "deleted", "scored": scored}
        while True:
            ctx.check()
            async with ctx.db.transaction() as work:
                runs = RunRepository(work.session, tenant)
                run = await runs.alive_by_id(run_id)
                if run is None:
                    return {"status": "deleted", "scored": scored}
                record = await runs.next_unscored(run_id)
                if record is None:
                    break
                record_id, input_ = record.id, record.input
                caller = Caller(run.organization_id, run.workspace_id, run.key_id, run.user_id)
                evaluators = list(run.evaluators)
            scores = [await self._score(caller, snap, input_) for snap in evaluators]
            async with ctx.db.transaction() as work:
                await RunRepository(work.session, tenant).save_scores(run_id, record_id, scores)
            scored += 1
        await self._set_status(ctx, run_id, "completed")
        return {"status": "completed", "scored": scored}

    async def _score(self, caller: Caller, snap: dict[str, Any], input_: Any) -> dict[str, Any]:
        """One evaluator's score of an input; called with no session open."""
        definition = JudgeDefinition.model_validate(snap["definition"])
        score: dict[str, Any] = {
            "id": new_id(),
            "evaluator_name": definition.name,
            "value": None,
            "number": None,
            "label": None,
            "rationale": None,
            "error": None,
        }
        messages, properties = conversation(input_)
        if messages is None:
            return {**score, "status": "failed", "error": "the input has no messages to judge"}
        try:
            verdict = await judging.run_judge(self.calls, caller, definition, messages, properties)
        except AppError as exc:
            return {**score, "status": "failed", "error": exc.message}
        answer = verdict.answer
        return {
            **score,
            "status": "completed",
            "value": answer,
            "number": answer if isinstance(answer, float) else None,
            "label": answer if isinstance(answer, str) else None,
            "rationale": verdict.analysis,
        }


def register(registry: JobRegistry, calls: PlatformCalls) -> None:
    registry.register(KIND, EvaluationRunTasks(calls).run)
