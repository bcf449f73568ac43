"""Optimizations of an evaluation: created by the extension, their trials are runs of the
evaluation (added by the extension), each observed by the objective (an evaluator's numeric
statistic over the run). The outcome is the best trial so far; the optimization is `running`
until one of its trials' runs is still running, `completed` otherwise."""

from __future__ import annotations

from maestrale.core.auth.principal import Principal
from maestrale.core.clock import utcnow
from maestrale.core.ids import new_id
from maestrale.core.pagination import PageParams
from maestrale.observability.errors import ObservabilityError
from maestrale.observability.evaluations.optimizations.repository import (
    OptimizationRepository,
    TrialRepository,
)
from maestrale.observability.evaluations.optimizations.schemas import (
    Observation,
    OptimizationCreate,
    OptimizationDetailOut,
    OptimizationOut,
    Reference,
    TrialCreate,
    TrialOut,
)
from maestrale.observability.evaluations.projects.service import BASE, creator_of
from maestrale.observability.evaluations.runs.schemas import NumericStatistics
from maestrale.observability.evaluations.runs.service import RunService
from maestrale.observability.evaluations.tables import EvalOptimization, EvalTrial
from maestrale.observability.pages import page_links

MAX_FILTERED = 10_000


class OptimizationService:
    def __init__(self, repo: OptimizationRepository, runs: RunService) -> None:
        self.repo = repo
        self.runs = runs
        self.trials = TrialRepository(repo.session, repo.tenant)

    async def create(self, body: OptimizationCreate, principal: Principal) -> EvalOptimization:
        evaluation = await self.runs.evaluation(body.evaluation)
        return await self.repo.add(
            EvalOptimization(
                id=new_id(),
                project_id=evaluation.project_id,
                evaluation_id=evaluation.id,
                creator_id=creator_of(principal),
                name=body.name,
                description=body.description,
                algorithm=body.algorithm,
                tags=list(dict.fromkeys(body.tags)),
                steer=body.steer,
                objective_spec=body.objective_spec.model_dump(),
            )
        )

    async def get(self, optimization_id: str) -> EvalOptimization:
        found = await self.repo.alive_by_id(optimization_id)
        if found is None:
            raise ObservabilityError(
                f"optimization {optimization_id!r} not found",
                "OPTIMIZATION_NOT_FOUND",
                status_code=404,
            )
        return found

    async def add_trial(self, optimization_id: str, body: TrialCreate) -> EvalTrial:
        optimization = await self.get(optimization_id)
        run = await self.runs.get(body.run_id)
        if run.evaluation_id != optimization.evaluation_id:
            raise ObservabilityError(
                "the run is not a run of the optimization's evaluation", "VALIDATION_ERROR"
            )
        trials = await self.trials.all_of(optimization.id)
        if body.parent_trial_id and body.parent_trial_id not in {t.id for t in trials}:
            raise ObservabilityError(
                f"parent trial {body.parent_trial_id!r} is not a trial of this optimization",
                "VALIDATION_ERROR",
            )
        trial = await self.trials.add(
            EvalTrial(
                id=new_id(),
                optimization_id=optimization.id,
                run_id=run.id,
                algorithm_trial_key=body.algorithm_trial_key or f"trial-{len(trials) + 1}",
                meta=body.metadata,
                parent_trial_id=body.parent_trial_id,
                hypothesis=body.hypothesis,
            )
        )
        optimization.updated_at = utcnow()
        await self.repo.flush()
        return trial

    async def list_optimizations(
        self,
        page: PageParams,
        project: str | None,
        evaluation: str | None,
        status: str | None,
        algorithm: str | None,
        tags: list[str],
    ) -> tuple[list[OptimizationOut], int, str | None, str | None]:
        url = f"{BASE}/optimizations"
        if not status:
            rows, count = await self.repo.page(
                project, evaluation, algorithm, tags, page.offset, page.limit
            )
            return [await self.out(r) for r in rows], count, *page_links(url, page, count)
        # The status derives from the trials' runs: it filters the rows the others kept.
        rows, _ = await self.repo.page(project, evaluation, algorithm, tags, 0, MAX_FILTERED)
        outs = [o for o in [await self.out(r) for r in rows] if o.status == status]
        page_rows = outs[page.offset : page.offset + page.limit]
        return page_rows, len(outs), *page_links(url, page, len(outs))

    async def trial_outs(
        self, optimization: EvalOptimization, trials: list[EvalTrial]
    ) -> list[TrialOut]:
        objective = optimization.objective_spec or {}
        outs = []
        for trial in trials:
            run = await self.runs.repo.alive_by_id(trial.run_id)
            observations = []
            if run is not None:
                run_out = await self.runs.out(run)
                stat = run_out.statistics.get(objective.get("evaluator", ""))
                score = None
                if isinstance(stat, NumericStatistics):
                    score = getattr(stat, objective.get("metric", "avg"))
                observations.append(Observation(run=run_out, score=score))
            outs.append(
                TrialOut(
                    id=trial.id,
                    created_at=trial.created_at,
                    updated_at=trial.updated_at,
                    deleted_at=trial.deleted_at,
                    optimization_id=trial.optimization_id,
                    algorithm_trial_key=trial.algorithm_trial_key,
                    status=run.status if run is not None else "deleted",
                    metadata=trial.meta,
                    parent_trial_id=trial.parent_trial_id,
                    hypothesis=trial.hypothesis,
                    observations=observations,
                )
            )
        return outs

    async def out(self, o: EvalOptimization) -> OptimizationOut:
        trials = await self.trial_outs(o, await self.trials.all_of(o.id))
        scored = [(t.observations[0].score, t.id) for t in trials if t.observations]
        scored = [(s, i) for s, i in scored if s is not None]
        maximize = (o.objective_spec or {}).get("direction", "maximize") == "maximize"
        best = (max if maximize else min)(scored, default=None)
        running = any(t.status == "running" for t in trials)
        return OptimizationOut(
            id=o.id,
            created_at=o.created_at,
            updated_at=o.updated_at,
            deleted_at=o.deleted_at,
            creator_id=o.creator_id,
            project_id=o.project_id,
            name=o.name,
            algorithm=o.algorithm,
            status="running" if running or not trials else "completed",
            evaluation_id=o.evaluation_id,
            description=o.description,
            steer=o.steer,
            tags=o.tags,
            objective_spec=o.objective_spec,
            outcome=None
            if best is None
            else {"best_trial_id": best[1], "best_score": best[0], "trials": len(trials)},
        )

    async def detail(self, o: EvalOptimization) -> OptimizationDetailOut:
        evaluations = await self.runs.evaluations.by_ids([o.evaluation_id])
        projects = await self.runs.projects.by_ids([o.project_id])
        evaluation = evaluations[0] if evaluations else None
        project = projects[0] if projects else None
        return OptimizationDetailOut(
            **(await self.out(o)).model_dump(),
            evaluation=Reference(id=evaluation.id, slug=evaluation.slug, name=evaluation.name)
            if evaluation
            else None,
            project=Reference(id=project.id, slug=project.slug, name=project.name)
            if project
            else None,
        )

    async def list_trials(
        self, optimization_id: str, page: PageParams
    ) -> tuple[list[TrialOut], int, str | None, str | None]:
        optimization = await self.get(optimization_id)
        rows, count = await self.trials.page(optimization.id, page.offset, page.limit)
        url = f"{BASE}/optimizations/{optimization.id}/trials"
        return await self.trial_outs(optimization, rows), count, *page_links(url, page, count)
