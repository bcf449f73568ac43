"""Wire models of workflows, registrations and deployments (`mistralai==2.8.0`'s shapes)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from maestrale.workflows.registry.tables import Deployment, DeploymentWorker, Registration, Workflow


class WorkflowOut(BaseModel):
    id: str
    name: str
    display_name: str
    type: Literal["code"] = "code"
    description: str | None = None
    customer_id: str
    workspace_id: str
    shared_namespace: str | None = None
    available_in_chat_assistant: bool = False
    is_technical: bool = False
    archived: bool = False
    tags: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, row: Workflow) -> WorkflowOut:
        return cls(
            id=row.id,
            name=row.name,
            display_name=row.display_name,
            description=row.description,
            customer_id=row.organization_id,
            workspace_id=row.workspace_id,
            available_in_chat_assistant=row.available_in_chat_assistant,
            is_technical=row.is_technical,
            archived=row.archived,
            tags=list(row.tags or []),
        )


class WorkflowWithStatus(WorkflowOut):
    active: bool


class WorkflowMetadata(BaseModel):
    shared_namespace: str | None = None


class WorkflowBasic(BaseModel):
    id: str
    name: str
    display_name: str
    description: str | None = None
    metadata: WorkflowMetadata = Field(default_factory=WorkflowMetadata)
    archived: bool
    tags: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, row: Workflow) -> WorkflowBasic:
        return cls(
            id=row.id,
            name=row.name,
            display_name=row.display_name,
            description=row.description,
            archived=row.archived,
            tags=list(row.tags or []),
        )


class WorkflowList(BaseModel):
    workflows: list[WorkflowBasic]
    next_cursor: str | None


class WorkflowGet(BaseModel):
    workflow: WorkflowWithStatus


MAX_TAGS = 100


def clean_tags(tags: list[str]) -> list[str]:
    """Tags stripped, each once in their first order; a blank or over-long one is refused."""
    cleaned = list(dict.fromkeys(t.strip() for t in tags))
    if any(not t or len(t) > 100 for t in cleaned):
        raise ValueError("tags must be 1 to 100 characters, not blank")
    return cleaned


class WorkflowUpdate(BaseModel):
    """The editable fields of a workflow; unknown fields are ignored."""

    display_name: str | None = Field(default=None, min_length=1, max_length=256)
    description: str | None = Field(default=None, max_length=4000)
    available_in_chat_assistant: bool | None = None
    tags: list[str] | None = Field(default=None, max_length=MAX_TAGS)

    @field_validator("tags")
    @classmethod
    def _clean_tags(cls, tags: list[str] | None) -> list[str] | None:
        return None if tags is None else clean_tags(tags)


class WorkflowTagsAdd(BaseModel):
    """`WorkflowTagsAddRequest`: tags added to a workflow's (the existing ones are kept)."""

    tags: list[str] = Field(min_length=1, max_length=MAX_TAGS)

    @field_validator("tags")
    @classmethod
    def _clean_tags(cls, tags: list[str]) -> list[str]:
        return clean_tags(tags)


class WorkflowOne(BaseModel):
    """The update, archive and unarchive responses."""

    workflow: WorkflowOut


class BulkArchive(BaseModel):
    workflow_ids: list[str] = Field(min_length=1, max_length=100)


class BulkError(BaseModel):
    workflow_id: str
    message: str


class BulkArchived(BaseModel):
    archived: list[WorkflowOut]
    errored: list[BulkError] = Field(default_factory=list)


class BulkUnarchived(BaseModel):
    unarchived: list[WorkflowOut]
    errored: list[BulkError] = Field(default_factory=list)


class CodeDefinition(BaseModel):
    """A registration's definition as clients read it (`execution_timeout` in seconds)."""

    model_config = ConfigDict(extra="allow")

    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    signals: list[dict[str, Any]] = Field(default_factory=list)
    queries: list[dict[str, Any]] = Field(default_factory=list)
    updates: list[dict[str, Any]] = Field(default_factory=list)
    enforce_determinism: bool = False
    on_behalf_of: bool = False
    execution_timeout: float = 3600.0
    plugin_metadata: dict[str, Any] | None = None


class RegistrationOut(BaseModel):
    id: str
    workflow_id: str
    definition: CodeDefinition
    deployment_name: str | None = None
    deployment_id: str | None = None
    task_queue: str | None = None
    workflow: WorkflowOut | None = None
    compatible_with_chat_assistant: bool = False

    @classmethod
    def of(
        cls, row: Registration, deployment: str, workflow: Workflow | None = None
    ) -> RegistrationOut:
        return cls(
            id=row.id,
            workflow_id=row.workflow_id,
            definition=CodeDefinition.model_validate(row.definition),
            deployment_name=deployment,
            deployment_id=row.deployment_id,
            task_queue=deployment,
            workflow=WorkflowOut.of(workflow) if workflow is not None else None,
        )


class RegistrationWithStatus(RegistrationOut):
    active: bool


class RegistrationList(BaseModel):
    workflow_registrations: list[RegistrationOut]
    workflow_versions: list[RegistrationOut]
    next_cursor: str | None


class RegistrationGet(BaseModel):
    workflow_registration: RegistrationWithStatus
    workflow_version: RegistrationWithStatus


class LocationOut(BaseModel):
    location_type: str = "local"
    k8s_cluster: str | None = None
    k8s_namespace: str | None = None


class WorkerOut(BaseModel):
    """`DeploymentWorkerResponse`: `last_heartbeat` (required in 3.x) is the worker's last beat
    or registration; `updated_at` its deprecated alias."""

    name: str
    created_at: datetime
    last_heartbeat: datetime
    updated_at: datetime
    is_active: bool
    location: LocationOut | None = None

    @classmethod
    def of(cls, row: DeploymentWorker, active: bool) -> WorkerOut:
        return cls(
            name=row.name,
            created_at=row.created_at,
            last_heartbeat=row.last_seen_at,
            updated_at=row.last_seen_at,
            is_active=active,
            location=LocationOut.model_validate(row.location) if row.location else None,
        )


class WorkerList(BaseModel):
    """`DeploymentWorkerListResponse`."""

    workers: list[WorkerOut]
    next_cursor: str | None


class DeploymentOut(BaseModel):
    """`DeploymentResponse`. Deployments here are self-hosted (their workers register them):
    none is hardened or managed, and none records an owner (`owner` null: administrator-managed
    in the platform's terms). `last_heartbeat` (required in 3.x) is the latest registration or
    beat of its workers; `updated_at` its deprecated alias."""

    id: str
    name: str
    is_active: bool
    created_at: datetime
    last_heartbeat: datetime
    updated_at: datetime
    is_hardened: bool = False
    owner: str | None = None
    location: LocationOut | None = None
    worker_count: int = 0
    active_worker_count: int = 0
    locations: list[str] = Field(default_factory=list)

    @classmethod
    def of(cls, row: Deployment, workers: list[WorkerOut]) -> DeploymentOut:
        active = sum(1 for w in workers if w.is_active)
        heartbeat = max([row.updated_at, *(w.last_heartbeat for w in workers)])
        return cls(
            id=row.id,
            name=row.name,
            is_active=active > 0,
            created_at=row.created_at,
            last_heartbeat=heartbeat,
            updated_at=heartbeat,
            location=LocationOut.model_validate(row.location) if row.location else None,
            worker_count=len(workers),
            active_worker_count=active,
            locations=sorted({w.location.location_type for w in workers if w.location}),
        )


class DeploymentDetail(DeploymentOut):
    workers: list[WorkerOut]


class DeploymentList(BaseModel):
    deployments: list[DeploymentOut]
    next_cursor: str | None
    workspace_id: str


class DeploymentQuery(BaseModel):
    """The filters and order of the deployments list (`ListDeploymentsV1WorkflowsDeploymentsGet`
    of 3.x; 2.x sends the first five)."""

    limit: int
    cursor: str | None = None
    active_only: bool = False
    workflow_name: str | None = None
    search: str | None = None
    is_hardened: bool | None = None
    created_by: str | None = None
    owner: str | None = None
    location_types: list[str] = Field(default_factory=list)
    order_by: Literal["updated_at", "created_at"] | None = None
    order: Literal["asc", "desc"] = "desc"
    repository_url: str | None = None
    dockerfile_path: str | None = None

    def matches_nothing(self) -> bool:
        """A filter on what no deployment here has: hardening, a creator or an owner, the
        repository or Dockerfile of a managed build."""
        return (
            self.is_hardened is True
            or self.created_by is not None
            or self.owner is not None
            or self.repository_url is not None
            or self.dockerfile_path is not None
        )


class DeploymentArchive(BaseModel):
    """`DeploymentArchiveResponse` (documented only: no deployment here builds from one)."""

    archive_id: str
    download_url: str | None = None
