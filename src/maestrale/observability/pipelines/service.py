"""Pipelines: create (its judges found by slug, its selectors checked), list, get, update,
delete, and the start of its chain of runs (pipelines.tasks)."""

from __future__ import annotations

from typing import Any

from maestrale.core.auth.principal import Principal, Tenant
from maestrale.core.clock import utcnow
from maestrale.core.ids import new_id
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.jobs.tables import JobStatus
from maestrale.core.pagination import PageParams
from maestrale.observability.datasets.slugs import free_slug, slug_of
from maestrale.observability.errors import ObservabilityError
from maestrale.observability.judges.repository import JudgeRepository
from maestrale.observability.judges.service import definition_of
from maestrale.observability.judges.tables import Judge
from maestrale.observability.pages import page_links
from maestrale.observability.pipelines.repository import PipelineRepository
from maestrale.observability.pipelines.schemas import (
    MAPPING_KEYS,
    JudgeReference,
    PipelineCreate,
    PipelineUpdate,
    SelectorIn,
)
from maestrale.observability.pipelines.tables import Pipeline, PipelineConfig
from maestrale.observability.pipelines.tasks import ATTEMPTS, KIND
from maestrale.telemetry.search import compile as search
from maestrale.telemetry.search.entities import SPANS
from maestrale.telemetry.search.errors import SearchError

SOURCE_KINDS = ("span",)


def not_found(pipeline_id: str) -> ObservabilityError:
    return ObservabilityError(
        f"pipeline {pipeline_id!r} not found", "PIPELINE_NOT_FOUND", status_code=404
    )


def checked_filter(expression: str | None, dialect: str) -> None:
    """Refuse a selector filter the search language refuses (400, naming the problem)."""
    try:
        search.where(SPANS, expression, dialect)
    except SearchError as exc:
        raise ObservabilityError(f"selector filter: {exc.message}", exc.error_code) from exc


def pipeline_slug(name: str) -> str:
    """The name made a slug (`pipeline` for a name with no letter or digit)."""
    slug = slug_of(name)
    return "pipeline" if slug == "dataset" and "dataset" not in name.lower() else slug


class PipelineService:
    def __init__(self, repo: PipelineRepository, queue: JobQueue) -> None:
        self.repo = repo
        self.queue = queue
        self.session = repo.session
        self.tenant: Tenant = repo.tenant
        self.judges = JudgeRepository(self.session, self.tenant)

    @property
    def dialect(self) -> str:
        return self.session.get_bind().dialect.name

    def _selectors(self, selectors: list[SelectorIn]) -> list[dict[str, Any]]:
        for selector in selectors:
            if selector.source_kind not in SOURCE_KINDS:
                raise ObservabilityError(
                    f"source_kind {selector.source_kind!r} is not supported: pipelines "
                    f"evaluate {', '.join(SOURCE_KINDS)}",
                    "VALIDATION_ERROR",
                )
            checked_filter(selector.filter, self.dialect)
        return [{"source_kind": s.source_kind, "filter": s.filter} for s in selectors]

    async def _judge(self, slug: str, judges: list[Judge]) -> Judge:
        """The live judge (latest revision) whose id, name or name made a slug is `slug`."""
        for judge in judges:
            if slug in (judge.id, judge.name) or slug == slug_of(judge.name):
                return judge
        found = await self.judges.alive_by_id(slug)  # an earlier revision, by its id
        if found is None:
            raise ObservabilityError(
                f"judge {slug!r} not found", "JUDGE_NOT_FOUND", status_code=404
            )
        return found

    async def _configs(
        self,
        pipeline_slug: str,
        references: list[JudgeReference],
        kept: dict[str, PipelineConfig] | None = None,
    ) -> list[PipelineConfig]:
        judges = await self.judges.list(self.judges.latest())
        taken = await self.repo.config_slugs_like(pipeline_slug)
        kept = kept or {}
        configs: list[PipelineConfig] = []
        for position, ref in enumerate(references):
            unknown = sorted(set(ref.mapping) - set(MAPPING_KEYS))
            if unknown:
                raise ObservabilityError(
                    f"mapping keys {unknown} are not supported (only {list(MAPPING_KEYS)})",
                    "VALIDATION_ERROR",
                )
            judge = await self._judge(ref.slug, judges)
            if any(c.judge_id == judge.id for c in configs):
                raise ObservabilityError(
                    f"judge {ref.slug!r} is named twice", "PIPELINE_CONFIG_ALREADY_EXISTS"
                )
            sampling = None if ref.sampling is None else ref.sampling.model_dump()
            definition = definition_of(judge).model_dump()
            config = kept.get(judge.id)
            if config is None:
                slug = free_slug(f"{pipeline_slug}-{slug_of(judge.name)}"[:200], taken)
                taken.add(slug)
                config = PipelineConfig(id=new_id(), slug=slug, judge_id=judge.id)
            config.position, config.name, config.judge_slug = position, judge.name, ref.slug
            config.judge_definition, config.mapping = definition, dict(ref.mapping)
            config.sampling, config.updated_at = sampling, utcnow()
            configs.append(config)
        return configs

    async def create(self, body: PipelineCreate, principal: Principal) -> Pipeline:
        selectors = self._selectors(body.selectors)
        slug = pipeline_slug(body.name)
        if await self.repo.slug_taken(slug):
            raise ObservabilityError(
                f"a pipeline with slug {slug!r} already exists",
                "PIPELINE_ALREADY_EXISTS",
                status_code=409,
            )
        configs = await self._configs(slug, body.definitions)
        pipeline = await self.repo.add(
            Pipeline(
                id=new_id(),
                name=body.name,
                slug=slug,
                description=body.description,
                selectors=selectors,
                enabled=body.enabled,
                creator_id=principal.user_id or principal.key_id,
                key_id=principal.key_id,
                user_id=principal.user_id,
                # Online evaluation: the spans that arrive from now on.
                last_span_row_id=await self.repo.latest_span_row_id(),
            )
        )
        await self.repo.set_configs(pipeline.id, configs, [])
        await self._start(pipeline)
        return pipeline

    async def get(self, pipeline_id: str) -> Pipeline:
        pipeline = await self.repo.get(pipeline_id)
        if pipeline is None:
            raise not_found(pipeline_id)
        return pipeline

    async def update(
        self, pipeline_id: str, body: PipelineUpdate, principal: Principal
    ) -> Pipeline:
        pipeline = await self.get(pipeline_id)
        sent = body.model_fields_set
        if body.name is not None:
            pipeline.name = body.name
        if "description" in sent:
            pipeline.description = body.description
        if body.selectors is not None:
            pipeline.selectors = self._selectors(body.selectors)
        if body.definitions is not None:
            # A judge the pipeline keeps keeps its config's id and slug (its verdicts' key).
            current = (await self.repo.configs_of([pipeline.id]))[pipeline.id]
            configs = await self._configs(
                pipeline.slug, body.definitions, {c.judge_id: c for c in current}
            )
            await self.repo.set_configs(pipeline.id, configs, current)
        # Enabled again: a new chain of runs (one still finishing sees it is not the pipeline's
        # and stops; the watermark's fence lets only one of them store a batch).
        restart = body.enabled is True and not pipeline.enabled
        if body.enabled is not None:
            pipeline.enabled = body.enabled
        pipeline.key_id, pipeline.user_id = principal.key_id, principal.user_id
        pipeline.updated_at = utcnow()
        await self.repo.flush()
        await self._start(pipeline, restart=restart)
        return pipeline

    async def delete(self, pipeline_id: str) -> None:
        pipeline = await self.get(pipeline_id)
        if pipeline.job_id is not None:
            await self.queue.request_cancel(self.session, pipeline.job_id, tenant=self.tenant)
        await self.repo.remove(pipeline)

    async def _start(self, pipeline: Pipeline, *, restart: bool = False) -> None:
        """Start the pipeline's chain of runs now, unless it is disabled or (but on `restart`)
        a run is pending."""
        if not pipeline.enabled:
            return
        if pipeline.job_id is not None and not restart:
            job = await self.queue.get(self.session, pipeline.job_id, tenant=self.tenant)
            if job is not None and job.status not in JobStatus.FINAL:
                return
        job = await self.queue.enqueue(
            self.session,
            KIND,
            {"pipeline_id": pipeline.id, "idle": 0},
            tenant=self.tenant,
            max_attempts=ATTEMPTS,
        )
        pipeline.job_id = job.id
        await self.repo.flush()

    async def list_pipelines(
        self, page: PageParams, enabled: bool | None, q: str | None
    ) -> tuple[list[Pipeline], int, str | None, str | None]:
        rows, count = await self.repo.page(enabled, q, page.offset, page.limit)
        return rows, count, *page_links("/v1/observability/pipelines", page, count)

    async def configs_of(self, pipelines: list[Pipeline]) -> dict[str, list[PipelineConfig]]:
        return await self.repo.configs_of([p.id for p in pipelines])
