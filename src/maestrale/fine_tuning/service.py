"""Fine-tuning jobs: creation (everything checked in the request: body, base model, training
extra, data files; nothing written on a 4xx), dry runs (nothing written at all), reads (with a
job whose worker gave up for good shown as failed), start and cancel. Training runs in the
worker (`fine_tuning.tasks`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.core.blobs import BlobStore
from maestrale.core.clock import as_utc, unix, utcnow
from maestrale.core.errors import BadRequest, Conflict, NotFound
from maestrale.core.ids import new_id
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.jobs.tables import JobStatus
from maestrale.core.pagination import PageParams
from maestrale.engines.registry import EngineRegistry
from maestrale.engines.specs import ModelSpec
from maestrale.files.repository import FileRepository
from maestrale.fine_tuning import extra, states
from maestrale.fine_tuning.data import data_files, read_examples
from maestrale.fine_tuning.estimates import (
    MAX_TRAINING_STEPS,
    SPEED_SAMPLES,
    STARTUP_SECONDS,
    Speed,
    TokenCounter,
    estimate,
    estimate_tokens,
    plan_steps,
)
from maestrale.fine_tuning.formats import (
    LineCheck,
    TargetCollector,
    classifier_line,
    completion_line,
)
from maestrale.fine_tuning.queueing import enqueue_training
from maestrale.fine_tuning.repository import FineTuningRepository
from maestrale.fine_tuning.rules import (
    InvalidJob,
    base_model,
    check_body,
    check_inferred_targets,
    check_seq_len,
    hyperparameters,
    job_type_of,
    notices,
    targets_out,
)
from maestrale.fine_tuning.schemas import (
    MAX_LABELS,
    MAX_TARGETS,
    ClassifierDetailedJobOut,
    CompletionDetailedJobOut,
    DryRunOut,
    JobIn,
    detailed_out,
)
from maestrale.fine_tuning.tables import FineTuningJob


def default_counter(spec: ModelSpec) -> TokenCounter:
    """Tokens estimated from characters, whatever the model."""
    return estimate_tokens


@dataclass(frozen=True, slots=True)
class Training:
    """What the service needs of the process: the catalog, the files' blobs (a request's
    `ReleasingBlobStore`: no transaction stays open while the data files are read), the queue,
    the training speed until jobs measure it, the billing currency and the token counter of a
    base model."""

    registry: EngineRegistry
    blobs: BlobStore
    queue: JobQueue
    tokens_per_second: float
    currency: str
    counter: Callable[[ModelSpec], TokenCounter] = field(default=default_counter)
    startup_seconds: float = STARTUP_SECONDS


def _utc(value: datetime | None, param: str) -> datetime | None:
    """`value` in UTC; 400 for a time that is not one in UTC (year 1 at +14:00)."""
    try:
        return None if value is None else as_utc(value)
    except OverflowError as exc:
        raise BadRequest(
            f"{param} is out of the range of dates", code="invalid_date", param=param
        ) from exc


class JobNotFound(NotFound):
    code = "fine_tuning_job_not_found"

    def __init__(self, job_id: str) -> None:
        super().__init__(f"fine-tuning job {job_id[:200]!r} not found", param="job_id")


class JobNotStartable(Conflict):
    code = "job_not_startable"


class FineTuningService:
    def __init__(
        self,
        session: AsyncSession,
        tenant: Tenant,
        key_id: str | None,
        training: Training,
    ) -> None:
        self.session, self.tenant, self.key_id = session, tenant, key_id
        self.training = training
        self.repo = FineTuningRepository(session, tenant)

    async def create(self, body: JobIn, *, dry_run: bool) -> FineTuningJob | DryRunOut:
        """The job, validated and written with its events (QUEUED, VALIDATING, VALIDATED, then
        QUEUED again with its queue job if it starts at once); or, for a dry run, its figures."""
        job_type = job_type_of(body)
        check_body(body, job_type)
        spec = await base_model(
            self.session, self.tenant, self.training.registry, body.model, job_type
        )
        extra.require(job_type)
        hyper = body.hyperparameters
        check_seq_len(spec, hyper.seq_len)
        files = await data_files(
            FileRepository(self.session, self.tenant, self.key_id),
            [f.file_id for f in body.training_files],
            body.validation_files or [],
        )
        targets = targets_out(body)
        collector = TargetCollector(MAX_TARGETS, MAX_LABELS)
        check: LineCheck = completion_line
        if job_type == "classifier":
            check = classifier_line(targets) if targets else collector
        examples = await read_examples(
            self.training.blobs, files, check, body.invalid_sample_skip_percentage
        )
        if job_type == "classifier" and not targets:
            targets = collector.targets()
            check_inferred_targets(targets)
        data_tokens = await self.training.counter(spec)(examples.texts)
        plan = plan_steps(job_type, examples.training, hyper.epochs, hyper.training_steps)
        if plan.training_steps > MAX_TRAINING_STEPS:
            raise InvalidJob(
                f"{plan.epochs:g} epochs of {examples.training} examples take "
                f"{plan.training_steps} training steps, more than the {MAX_TRAINING_STEPS} "
                "allowed: give fewer epochs",
                param="hyperparameters.epochs",
            )
        default = Speed(self.training.tokens_per_second, self.training.startup_seconds)
        speed = Speed.measured(await self.repo.speed_samples(spec.id, SPEED_SAMPLES), default)
        figures = estimate(
            examples=examples.training,
            data_tokens=data_tokens,
            steps=plan.training_steps,
            speed=speed,
            price_per_million=spec.price.training_per_million,
            currency=self.training.currency,
        )
        hyper_used = hyperparameters(body, job_type, spec, plan)
        notes = notices(body.model, spec, hyper_used)
        if dry_run:
            return DryRunOut.model_validate(
                {
                    **figures.metadata(None),
                    "job_type": job_type,
                    "epochs": plan.epochs,
                    "training_steps": plan.training_steps,
                    "details": " ".join(
                        [*(note["message"] + "." for note in notes.values()), speed.describe()]
                    ),
                }
            )
        auto_start = True if body.auto_start is None else body.auto_start
        now = utcnow()
        row = FineTuningJob(
            id=new_id(),
            created_by=self.tenant.user_id,
            key_id=self.key_id,
            model=body.model,
            root=spec.id,
            job_type=job_type,
            status=states.QUEUED,
            auto_start=auto_start,
            hyperparameters=hyper_used,
            training_files=[
                {"file_id": f.file_id, "weight": f.weight} for f in body.training_files
            ],
            validation_files=list(body.validation_files or []),
            suffix=body.suffix,
            integrations=[],
            classifier_targets=targets,
            invalid_sample_skip_percentage=body.invalid_sample_skip_percentage,
            meta=figures.metadata(unix(now) if auto_start else None),
            created_at=now,
            modified_at=now,
        )
        await self.repo.add(row)
        await self.repo.record_status(row, states.QUEUED)
        await self.repo.record_status(row, states.VALIDATING)
        await self.repo.record_status(
            row,
            states.VALIDATED,
            training_examples=examples.training,
            validation_examples=examples.validation,
            skipped_examples=examples.skipped,
        )
        for name, note in notes.items():
            await self.repo.record_event(row, name, note)
        if auto_start:
            await enqueue_training(self.session, self.training.queue, row)
            await self.repo.record_status(row, states.QUEUED)
        return row

    async def get(self, job_id: str) -> FineTuningJob:
        row = await self.repo.get(job_id)
        if row is None:
            raise JobNotFound(job_id)
        await self._reconcile([row])
        return row

    async def detailed(
        self, row: FineTuningJob
    ) -> CompletionDetailedJobOut | ClassifierDetailedJobOut:
        return detailed_out(row, await self.repo.events(row), await self.repo.checkpoints(row))

    async def _reconcile(self, rows: list[FineTuningJob]) -> None:
        """A job whose queue job ended for good (its attempts used up by dying workers, or
        cancelled) cannot move on by itself any more: show it FAILED or CANCELLED, with the
        queue's last error, instead of running forever."""
        alive = [r for r in rows if r.status not in states.FINAL and r.queue_job_id is not None]
        jobs = await self.repo.queue_jobs([r.queue_job_id for r in alive if r.queue_job_id])
        for row in alive:
            job = jobs.get(row.queue_job_id or "")
            if job is None or job.status not in (JobStatus.FAILED, JobStatus.CANCELLED):
                continue
            cancelled = (
                job.status == JobStatus.CANCELLED or row.status == states.CANCELLATION_REQUESTED
            )
            status = states.CANCELLED if cancelled else states.FAILED
            error = (job.last_error or f"the training job {job.status}")[:2000]
            await self.repo.move(row, [row.status], status, error=error)

    async def page(
        self,
        page: PageParams,
        *,
        model: str | None,
        created_after: datetime | None,
        created_before: datetime | None,
        created_by_me: bool,
        status: str | None,
        wandb_project: str | None,
        wandb_name: str | None,
        suffix: str | None,
    ) -> tuple[list[FineTuningJob], int]:
        if status is not None and status not in states.ALL:
            raise BadRequest(
                f"unknown status {status[:100]!r} (known: {', '.join(states.ALL)})",
                code="invalid_status",
                param="status",
            )
        rows, total = await self.repo.page(
            page,
            model=model,
            created_after=_utc(created_after, "created_after"),
            created_before=_utc(created_before, "created_before"),
            creator=self.repo.created_by(self.key_id) if created_by_me else None,
            status=status,
            suffix=suffix,
            # No job has a W&B integration (they are refused): such a filter matches none.
            nothing=wandb_project is not None or wandb_name is not None,
        )
        await self._reconcile(rows)
        return rows, total

    async def start(self, job_id: str) -> FineTuningJob:
        """VALIDATED (a job created with auto_start false) → QUEUED, with its queue job."""
        row = await self.get(job_id)
        if not await self.repo.move(row, [states.VALIDATED], states.QUEUED):
            raise JobNotStartable(
                f"fine-tuning job {row.id} is {row.status}: only a VALIDATED job (created with "
                "auto_start false) can be started",
                param="job_id",
            )
        await enqueue_training(self.session, self.training.queue, row)
        return row

    async def cancel(self, job_id: str) -> FineTuningJob:
        """A job that no worker holds (VALIDATED, or QUEUED and not claimed yet) is CANCELLED at
        once; a running one is CANCELLATION_REQUESTED (its worker stops the training and records
        CANCELLED); a finished one is left as it is."""
        row = await self.get(job_id)
        for _ in range(3):  # a worker moving the job meanwhile: decide again on its new status
            if row.status in states.FINAL or row.status == states.CANCELLATION_REQUESTED:
                return row
            claimed = False
            if row.queue_job_id is not None:
                job = await self.training.queue.request_cancel(
                    self.session, row.queue_job_id, tenant=self.tenant
                )
                claimed = job is not None and job.status == JobStatus.RUNNING
            at_once = row.status in (states.VALIDATED, states.VALIDATING, states.QUEUED)
            status = states.CANCELLED if at_once and not claimed else states.CANCELLATION_REQUESTED
            if await self.repo.move(row, [row.status], status):
                return row
        return row
