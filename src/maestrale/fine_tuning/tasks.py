"""Training a fine-tuning job on the durable job queue (`fine_tuning.train`, one per job).

1. A short transaction moves the job to STARTED (or finds it cancelled or gone) and reads what
   the training needs.
2. With no transaction open: the data files are copied from the blob store to a work directory,
   the last checkpoint of an earlier attempt too (a worker killed mid-training: this attempt
   resumes from it, not from zero), and the trainer runs in a subprocess
   (`trainer_process.run`). Its reports move the job to RUNNING and record each checkpoint
   (its state first copied to the blob store, then its step and losses in a short transaction).
3. The trained model goes to the blob store, and the fine-tuned model row is written in the very
   transaction that completes the queue job (`JobContext.on_complete`): once, by the worker that
   holds the lease, never by one that lost it.
A cancel stops the trainer at the worker's next heartbeat and leaves no model; data the trainer
refuses fails the job at once; a crash is retried (from the last checkpoint), and the last
attempt's failure fails the job.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import shutil
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from maestrale.catalog.artifacts import ArtifactFormat
from maestrale.catalog.repository import FineTunedModelRepository
from maestrale.config import Settings
from maestrale.core.auth.principal import Tenant
from maestrale.core.blobs import BlobStore
from maestrale.core.jobs.worker import (
    JobContext,
    JobInterrupted,
    JobRegistry,
    PermanentJobError,
    describe_error,
)
from maestrale.engines.registry import EngineRegistry
from maestrale.files.repository import FileRepository
from maestrale.fine_tuning import states
from maestrale.fine_tuning.artifacts import blob_artifact, download, file_chunks
from maestrale.fine_tuning.preparation import TrainingInputs, prepare
from maestrale.fine_tuning.queueing import TRAIN_KIND
from maestrale.fine_tuning.repository import FineTuningRepository
from maestrale.fine_tuning.trainer_process import run
from maestrale.fine_tuning.training.protocol import DataFile, TrainingSpec
from maestrale.libraries.service import blob_remover

log = logging.getLogger("maestrale.fine_tuning")

CHECKPOINTS_PER_JOB = 10
LIVE = (states.QUEUED, states.STARTED, states.RUNNING)
TRAINER = {
    "completion": "maestrale.fine_tuning.training.completion",
    "classifier": "maestrale.fine_tuning.training.classifier",
}
ARTIFACT_FILE = {"completion": "model.gguf", "classifier": "classifier.json"}
# What each trainer's artifact is, recorded on the fine-tuned model for the code that serves it.
ARTIFACT_FORMAT = {"completion": ArtifactFormat.GGUF, "classifier": ArtifactFormat.CLASSIFIER}


def resume_key(job_id: str) -> str:
    return f"fine_tuning/{job_id}/resume.pt"


def model_key(job_id: str, job_type: str) -> str:
    return f"fine_tuning/{job_id}/{ARTIFACT_FILE[job_type]}"


def fine_tuned_model_id(root: str, suffix: str | None, job_id: str) -> str:
    """`ft:<base>:<suffix>:<id>` (`ft:<base>:<id>` without a suffix)."""
    short = job_id.replace("-", "")[:12]
    return f"ft:{root}:{suffix}:{short}" if suffix else f"ft:{root}:{short}"


@dataclass(slots=True)
class Started:
    """What training a job needs, read when its attempt started."""

    job_id: str
    job_type: str
    root: str
    suffix: str | None
    hyperparameters: dict[str, Any]
    targets: list[dict[str, Any]]
    training: list[tuple[str, float]]  # (blob key, weight)
    validation: list[str]  # blob keys
    steps: int
    trained_tokens: int | None = None
    reports: dict[str, Any] = field(default_factory=dict)


class FineTuningTasks:
    def __init__(self, settings: Settings, blobs: BlobStore, engines: EngineRegistry) -> None:
        self.blobs, self.engines = blobs, engines
        self.work_root = settings.data_dir / "fine_tuning" / "work"
        self.threads = settings.fine_tuning_threads or os.cpu_count() or 1

    async def train(self, ctx: JobContext) -> dict[str, Any]:
        job_id = str(ctx.payload["job_id"])
        started = await self._start(ctx, job_id)
        if started is None:
            return {"status": "gone"}
        work = self.work_root / job_id
        await anyio.to_thread.run_sync(partial(shutil.rmtree, work, ignore_errors=True))
        await anyio.to_thread.run_sync(partial(work.mkdir, parents=True))
        try:
            return await self._train(ctx, started, work)
        except asyncio.CancelledError:
            if ctx.cancel_requested:
                await asyncio.shield(self._end(ctx, started, states.CANCELLED))
            raise
        except JobInterrupted:
            if ctx.cancel_requested:
                await self._end(ctx, started, states.CANCELLED)
            raise
        except PermanentJobError as exc:
            await self._end(ctx, started, states.FAILED, error=str(exc))
            raise
        except Exception as exc:
            if ctx.attempt >= ctx.max_attempts:
                await self._end(ctx, started, states.FAILED, error=describe_error(exc, {}))
            raise
        finally:
            await anyio.to_thread.run_sync(partial(shutil.rmtree, work, ignore_errors=True))

    async def _start(self, ctx: JobContext, job_id: str) -> Started | None:
        async with ctx.db.transaction() as work:
            jobs = FineTuningRepository(work.session, ctx.tenant)
            row = await jobs.get(job_id)
            if row is None or row.status in states.FINAL:
                return None
            if row.status == states.CANCELLATION_REQUESTED:
                await jobs.move(row, [states.CANCELLATION_REQUESTED], states.CANCELLED)
                return None
            ids = [f["file_id"] for f in row.training_files] + list(row.validation_files)
            # The files are read with the rights of the job's creator.
            creator = Tenant(row.organization_id, row.workspace_id, row.created_by)
            keys = await FileRepository(work.session, creator, row.key_id).blob_keys(ids)
            gone = [file_id for file_id in ids if file_id not in keys]
            if gone:
                error = f"file {gone[0]} was deleted before the job could train on it"
                await jobs.move(row, LIVE, states.FAILED, error=error)
                return None
            # A later attempt (its worker died) starts again, and says from where when it runs.
            data = {"attempt": ctx.attempt} if ctx.attempt > 1 else {}
            await jobs.move(row, LIVE, states.STARTED, **data)
            return Started(
                job_id=row.id,
                job_type=row.job_type,
                root=row.root,
                suffix=row.suffix,
                hyperparameters=dict(row.hyperparameters),
                targets=list(row.classifier_targets),
                training=[
                    (keys[f["file_id"]], float(f.get("weight", 1.0))) for f in row.training_files
                ],
                validation=[keys[file_id] for file_id in row.validation_files],
                steps=int(row.hyperparameters["training_steps"]),
            )

    async def _train(self, ctx: JobContext, started: Started, work: Path) -> dict[str, Any]:
        blobs = self.blobs
        training = []
        for number, (key, weight) in enumerate(started.training):
            path = work / f"train-{number}.jsonl"
            await download(blobs, key, path)
            training.append(DataFile(str(path), weight))
        validation = []
        for number, key in enumerate(started.validation):
            path = work / f"valid-{number}.jsonl"
            await download(blobs, key, path)
            validation.append(str(path))
        resume: str | None = None
        if await blobs.size(resume_key(started.job_id)) is not None:
            resume = str(work / "resume.pt")
            await download(blobs, resume_key(started.job_id), Path(resume))
        prepared: TrainingInputs = await prepare(
            self.engines,
            started.job_type,
            started.root,
            started.hyperparameters,
            started.targets,
            training,
            validation,
            work,
        )
        name = fine_tuned_model_id(started.root, started.suffix, started.job_id)
        spec = TrainingSpec(
            job_type=started.job_type,
            training_files=training,
            validation_files=validation,
            hyperparameters=started.hyperparameters,
            work_dir=str(work),
            out=str(work / ARTIFACT_FILE[started.job_type]),
            steps=started.steps,
            checkpoint_every=max(1, math.ceil(started.steps / CHECKPOINTS_PER_JOB)),
            seed=_seed(started.job_id),
            threads=self.threads,
            resume=resume,
            base_model=prepared.base_model,
            model_name=name,
            targets=started.targets,
            embeddings_model=prepared.embeddings_model,
            embeddings=prepared.embeddings,
        )
        done = await run(TRAINER[started.job_type], spec, partial(self._report, ctx, started))
        key = model_key(started.job_id, started.job_type)
        await blobs.put(key, file_chunks(Path(str(done["path"]))))
        ctx.on_complete(partial(self._succeed, ctx, started, name, key, done))
        ctx.after_complete(partial(blob_remover, blobs, [resume_key(started.job_id)]))
        return {"fine_tuned_model": name, "steps": done.get("steps")}

    async def _report(self, ctx: JobContext, started: Started, event: dict[str, Any]) -> None:
        kind = event.get("event")
        if kind == "loaded":
            resumed = int(event.get("resumed_from") or 0)
            data = {"resumed_from_step": resumed} if resumed else {}
            async with ctx.db.transaction() as work:
                jobs = FineTuningRepository(work.session, ctx.tenant)
                row = await jobs.get(started.job_id)
                if row is not None:
                    await jobs.move(row, [states.QUEUED, states.STARTED], states.RUNNING, **data)
        elif kind == "checkpoint":
            path = Path(str(event["path"]))
            await self.blobs.put(resume_key(started.job_id), file_chunks(path))
            await anyio.to_thread.run_sync(lambda: path.unlink(missing_ok=True))
            async with ctx.db.transaction() as work:
                jobs = FineTuningRepository(work.session, ctx.tenant)
                row = await jobs.get(started.job_id)
                if row is None:
                    return
                await jobs.add_checkpoint(
                    row,
                    int(event["step"]),
                    _number(event.get("train_loss")),
                    _number(event.get("valid_loss")),
                    _number(event.get("valid_mean_token_accuracy")),
                )
                if event.get("trained_tokens") is not None:
                    row.trained_tokens = int(event["trained_tokens"])

    async def _succeed(
        self,
        ctx: JobContext,
        started: Started,
        name: str,
        key: str,
        done: dict[str, Any],
        session: Any,
    ) -> None:
        """In the transaction that completes the queue job: the model row and SUCCESS (or
        CANCELLED, with no model, when a cancel came in while the model was being saved)."""
        jobs = FineTuningRepository(session, ctx.tenant)
        row = await jobs.get(started.job_id)
        if row is None:
            return
        if row.status == states.CANCELLATION_REQUESTED:
            await jobs.move(row, [states.CANCELLATION_REQUESTED], states.CANCELLED)
            ctx.after_complete(partial(blob_remover, self.blobs, [key]))
            return
        base = self.engines.resolve(started.root)
        classifier = started.job_type == "classifier"
        await FineTunedModelRepository(session, ctx.tenant).register(
            name,
            root=started.root,
            job=started.job_id,
            model_type=started.job_type,
            max_context_length=base.spec.max_context_length if base else 32768,
            capabilities=_capabilities(started.job_type, base.spec.capabilities if base else []),
            classifier_targets=started.targets if classifier else [],
            artifact=blob_artifact(key),
            artifact_format=ARTIFACT_FORMAT[started.job_type],
        )
        if isinstance(done.get("trained_tokens"), int):
            row.trained_tokens = done["trained_tokens"]
        row.fine_tuned_model = name
        speed = (
            {"tokens_per_second": done["tokens_per_second"]}
            if done.get("tokens_per_second")
            else {}
        )
        await jobs.move(row, LIVE, states.SUCCESS, fine_tuned_model=name, **speed)

    async def _end(self, ctx: JobContext, started: Started, status: str, **data: Any) -> None:
        """Record how the job ended (the checkpoint state and any model blob go)."""
        try:
            async with ctx.db.transaction() as work:
                jobs = FineTuningRepository(work.session, ctx.tenant)
                row = await jobs.get(started.job_id)
                if row is not None:
                    expected = [*LIVE, states.CANCELLATION_REQUESTED]
                    await jobs.move(row, expected, status, **data)
        except Exception:
            log.warning("job %s: recording %s failed", started.job_id, status, exc_info=True)
        keys = [resume_key(started.job_id), model_key(started.job_id, started.job_type)]
        await blob_remover(self.blobs, keys)


def _capabilities(job_type: str, base: list[str]) -> dict[str, bool]:
    if job_type == "classifier":
        return {"completion_chat": False, "classification": True}
    return {
        "completion_chat": True,
        "completion_fim": "completion_fim" in base,
        "function_calling": "function_calling" in base,
    }


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def _seed(job_id: str) -> int:
    return int(job_id.replace("-", "")[:8], 16)


def register(
    registry: JobRegistry, settings: Settings, blobs: BlobStore, engines: EngineRegistry
) -> None:
    registry.register(TRAIN_KIND, FineTuningTasks(settings, blobs, engines).train)
