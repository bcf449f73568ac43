"""The statuses of a fine-tuning job (the reference's enum), and the name of the event every
status change records. The API and the worker share them; the writes are
`FineTuningRepository`'s (`record_status`, `move`, `add_checkpoint`).
"""

from __future__ import annotations

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
