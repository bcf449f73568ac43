"""Wire models of the worker-facing endpoints, as the official `mistralai-workflows` worker sends
and reads them (its `protocol.v1` models)."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

WORKFLOW_NAME = r"^[a-zA-Z0-9_-]+$"
DEPLOYMENT_NAME = r"^[a-zA-Z0-9_\-.]+$"
_ISO_DURATION = re.compile(
    r"^P(?:(?P<d>\d+(?:\.\d+)?)D)?(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?"
    r"(?:(?P<s>\d+(?:\.\d+)?)S)?)?$"
)
_MAX_TIMEOUT = timedelta(days=3650).total_seconds()


def duration_seconds(value: Any) -> float:
    """An `execution_timeout` as seconds: a number, or an ISO-8601 duration (`"PT1H"`), which is
    how the worker sends it."""
    if isinstance(value, bool):
        raise ValueError("execution_timeout must be a duration")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and (match := _ISO_DURATION.match(value)) and value != "P":
        parts = {k: float(v) for k, v in match.groupdict().items() if v}
        seconds = (
            parts.get("d", 0) * 86400
            + parts.get("h", 0) * 3600
            + parts.get("m", 0) * 60
            + parts.get("s", 0)
        )
    else:
        raise ValueError("execution_timeout must be seconds or an ISO-8601 duration")
    if not 0 <= seconds <= _MAX_TIMEOUT:  # NaN and inf included
        raise ValueError("execution_timeout is out of range")
    return seconds


class HandlerSpec(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1, max_length=256)
    input_schema: dict[str, Any] = Field(default_factory=dict)


class WorkflowSpec(BaseModel):
    """One definition of a register call (`WorkflowSpecWithTaskQueue`)."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1, max_length=128, pattern=WORKFLOW_NAME)
    task_queue: str = Field(min_length=1, max_length=200)
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    signals: list[HandlerSpec] = Field(default_factory=list, max_length=1000)
    queries: list[HandlerSpec] = Field(default_factory=list, max_length=1000)
    updates: list[HandlerSpec] = Field(default_factory=list, max_length=1000)
    enforce_determinism: bool = False
    on_behalf_of: bool = False
    execution_timeout: float = 3600.0
    plugin_metadata: dict[str, Any] | None = None
    display_name: str | None = Field(default=None, max_length=256)
    description: str | None = Field(default=None, max_length=4000)
    is_technical: bool = False
    schedules: list[dict[str, Any]] = Field(default_factory=list, max_length=100)

    @field_validator("execution_timeout", mode="before")
    @classmethod
    def _timeout(cls, value: Any) -> float:
        return duration_seconds(value)

    def definition(self) -> dict[str, Any]:
        """What a registration stores: the code definition, as clients read it."""
        return self.model_dump(
            mode="json",
            include={
                "input_schema",
                "output_schema",
                "signals",
                "queries",
                "updates",
                "enforce_determinism",
                "on_behalf_of",
                "execution_timeout",
                "plugin_metadata",
            },
        )


class Location(BaseModel):
    model_config = ConfigDict(extra="ignore")

    location_type: Literal["local", "k8s", "managed"] = "local"
    k8s_cluster: str | None = Field(default=None, max_length=256)
    k8s_namespace: str | None = Field(default=None, max_length=256)


class RegisterRequest(BaseModel):
    definitions: list[WorkflowSpec] = Field(min_length=1, max_length=500)
    deployment_name: str = Field(min_length=1, max_length=200, pattern=DEPLOYMENT_NAME)
    worker_name: str = Field(min_length=1, max_length=256)
    deployment_location: Location | None = None


class RegistrationRef(BaseModel):
    workflow_id: str
    workflow_registration_id: str
    workflow_version_id: str


class RegisterResponse(BaseModel):
    has_conflicts: bool
    workflow_registration_ids: list[str]
    workflow_registration_refs: list[RegistrationRef]
    warnings: list[str] = Field(default_factory=list)


class HeartbeatRef(BaseModel):
    workflow_id: str = Field(max_length=64)
    workflow_registration_id: str | None = Field(default=None, max_length=64)

    @model_validator(mode="before")
    @classmethod
    def _version_alias(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("workflow_registration_id"):
            return {**data, "workflow_registration_id": data.get("workflow_version_id")}
        return data


class HeartbeatRequest(BaseModel):
    deployment_name: str = Field(min_length=1, max_length=200, pattern=DEPLOYMENT_NAME)
    worker_name: str = Field(min_length=1, max_length=256)
    workflow_registration_refs: list[HeartbeatRef] = Field(default_factory=list, max_length=1000)


class HeartbeatResponse(BaseModel):
    all_active: bool


class WorkerFeatures(BaseModel):
    upload_graph: bool | None = False
    events_api_version: str | None = "v1"


class WorkerInfo(BaseModel):
    scheduler_url: str
    namespace: str
    tls: bool
    features: WorkerFeatures = Field(default_factory=WorkerFeatures)


class ExecutionRegisterRequest(BaseModel):
    temporal_workflow_id: str = Field(min_length=1, max_length=256)
    temporal_run_id: str = Field(min_length=1, max_length=64)
    workflow_name: str = Field(min_length=1, max_length=128)
    task_queue: str = Field(min_length=1, max_length=200)
    execution_token_hash: str = Field(min_length=1, max_length=128)
    temporal_parent_workflow_id: str | None = Field(default=None, max_length=256)
    temporal_root_workflow_id: str | None = Field(default=None, max_length=256)
    search_key_metadata: dict[str, str | None] | None = None


class ExecutionRegisterResponse(BaseModel):
    execution_id: str
    created: bool
    metadata_status: Literal["ok", "partial"] = "ok"
