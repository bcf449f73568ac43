"""The statuses of a fine-tuning job (the reference's enum), and the two writes every step of its
life makes: a status change with its event, and a checkpoint. The API and the worker share them.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.clock import utcnow
from maestrale.fine_tuning.tables import FineTuningCheckpoint, FineTuningEvent, FineTuningJob

QUEUED = "QUEUED"
STARTED = "STARTED"
VALIDATING = "VALIDATING"
VALIDATED = "VALIDATED"
RUNNING = "RUNNING"
FAILED_VALIDATION = "FAILED_VALIDATION"
FAILED = "FAILED"
SUCCESS = "SUCCESS"
CANCELLED = "CANCELLED"
CANCELLATION_REQUESTED = "CANCELLATION_REQUESTED"

ALL = (
    QUEUED,
    STARTED,
    VALIDATING,
    VALIDATED,
    RUNNING,
    FAILED_VALIDATION,
    FAILED,
    SUCCESS,
    CANCELLED,
    CANCELLATION_REQUESTED,
)
FINAL = frozenset({SUCCESS, FAILED, FAILED_VALIDATION, CANCELLED})
STATUS_EVENT = "status-updated"


async def record_status(
    session: AsyncSession, job: FineTuningJob, status: str, **data: Any
) -> None:
    """Give `job` its new status and record the event `status-updated` with `{"status", **data}`
    (flushed, not committed)."""
    now = utcnow()
    job.status = status
    job.modified_at = now
    session.add(
        FineTuningEvent(
            job_id=job.id, name=STATUS_EVENT, data={"status": status, **data}, created_at=now
        )
    )
    await session.flush()


async def add_checkpoint(
    session: AsyncSession,
    job: FineTuningJob,
    step: int,
    train_loss: float | None,
    valid_loss: float | None,
    accuracy: float | None,
) -> bool:
    """Record the checkpoint of `step`; False (and nothing written) when that step was recorded
    already (a resumed worker reporting it again)."""
    postgres = session.get_bind().dialect.name == "postgresql"
    dialect = postgresql if postgres else sqlite
    table = FineTuningCheckpoint.__table__
    insert = (
        dialect.insert(table)
        .values(
            job_id=job.id,
            step_number=step,
            train_loss=train_loss,
            valid_loss=valid_loss,
            valid_mean_token_accuracy=accuracy,
            created_at=utcnow(),
        )
        .on_conflict_do_nothing(index_elements=["job_id", "step_number"])
        .returning(table.c.step_number)
    )
    inserted = (await session.execute(insert)).scalar_one_or_none()
    return inserted is not None
