"""Wire models of the /v1/batch/jobs group (the SDK's CreateBatchJobRequest, BatchJob,
ListBatchJobsResponse, DeleteBatchJobResponse)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from maestrale.batch.tables import BatchJob
from maestrale.core.clock import unix


class BatchRequestIn(BaseModel):
    model_config = ConfigDict(extra="ignore")

    custom_id: str | None = Field(default=None, max_length=512)
    body: dict[str, Any]


class BatchJobCreate(BaseModel):
    model_config = ConfigDict(extra="ignore")

    endpoint: str = Field(max_length=100)
    input_files: list[str] | None = Field(default=None, max_length=1000)
    requests: list[BatchRequestIn] | None = None
    model: str | None = Field(default=None, max_length=256)
    agent_id: str | None = Field(default=None, max_length=200)
    metadata: dict[str, Any] | None = None
    timeout_hours: int = 24


class BatchErrorOut(BaseModel):
    model_config = ConfigDict(extra="allow")

    message: str
    count: int = 1


class BatchJobOut(BaseModel):
    id: str
    object: Literal["batch"] = "batch"
    input_files: list[str]
    metadata: dict[str, Any] | None
    endpoint: str
    model: str | None
    agent_id: str | None
    output_file: str | None
    error_file: str | None
    errors: list[BatchErrorOut]
    outputs: list[dict[str, Any]] | None = None
    status: str
    created_at: int
    total_requests: int
    completed_requests: int
    succeeded_requests: int
    failed_requests: int
    started_at: int | None
    completed_at: int | None

    @classmethod
    def of(cls, row: BatchJob) -> BatchJobOut:
        return cls(
            id=row.id,
            input_files=list(row.input_files or []),
            metadata=row.meta,
            endpoint=row.endpoint,
            model=row.model,
            agent_id=row.agent_id,
            output_file=row.output_file,
            error_file=row.error_file,
            errors=[
                BatchErrorOut.model_validate(e)
                for e in [*(row.errors or []), *(row.failure_summary or [])]
            ],
            status=row.status,
            created_at=unix(row.created_at),
            total_requests=row.total_requests,
            completed_requests=row.completed_requests,
            succeeded_requests=row.succeeded_requests,
            failed_requests=row.failed_requests,
            started_at=None if row.started_at is None else unix(row.started_at),
            completed_at=None if row.completed_at is None else unix(row.completed_at),
        )


class BatchJobList(BaseModel):
    object: Literal["list"] = "list"
    data: list[BatchJobOut]
    total: int


class BatchJobDeleted(BaseModel):
    id: str
    object: Literal["batch"] = "batch"
    deleted: bool = True
