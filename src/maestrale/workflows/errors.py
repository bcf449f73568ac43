"""The workflows group's error body: `{"detail": str, "code": "WF_…"}` (the platform's, which the
official worker reads: a 403 `WF_1104` on register is "registration refused"); a 422 keeps
FastAPI's `{"detail": [{"loc", "msg", "type"}]}`, which the SDK parses as HTTPValidationError.

Codes: WF_1100 not found, WF_1101 already started, WF_1102 not running, WF_1103 the engine
(Temporal) failed or is unreachable, WF_1104 registration refused, WF_1200 / WF_1201 schedule
not found / invalid; `AMBIGUOUS_WORKFLOW` when several deployments could run an execution.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from maestrale.core.errors import AppError

INVALID = "WF_1000"
CONFLICT = "WF_1009"
NOT_FOUND = "WF_1100"
ALREADY_STARTED = "WF_1101"
NOT_RUNNING = "WF_1102"
ENGINE_FAILED = "WF_1103"
REGISTRATION_REFUSED = "WF_1104"
SCHEDULE_NOT_FOUND = "WF_1200"
SCHEDULE_INVALID = "WF_1201"
AMBIGUOUS = "AMBIGUOUS_WORKFLOW"


class WorkflowErrorOut(BaseModel):
    """The body of every error of the group but 422."""

    detail: str
    code: str


class WorkflowError(AppError):
    """A domain error of the group, with its platform code and optional extra body keys."""

    def __init__(self, message: str, wf_code: str, *, status_code: int = 400, **extra: Any) -> None:
        super().__init__(message, status_code=status_code)
        self.wf_code = wf_code
        self.extra = extra


def not_found(what: str) -> WorkflowError:
    return WorkflowError(f"{what} not found", NOT_FOUND, status_code=404)


def engine_failed(message: str, *, status_code: int = 502) -> WorkflowError:
    return WorkflowError(message, ENGINE_FAILED, status_code=status_code)
