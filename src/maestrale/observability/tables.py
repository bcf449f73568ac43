"""Chat completion events: every chat completion that passes through Maestrale, by construction."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Float, ForeignKey, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime
from maestrale.core.ids import new_id
from maestrale.core.repository import WorkspaceScoped


class ChatCompletionEvent(Base):
    __tablename__ = "chat_completion_events"
    __table_args__ = (
        Index("ix_cce_ws_created", "workspace_id", "created_at", "id"),
        Index("ix_cce_ws_correlation", "workspace_id", "correlation_id"),
        # Model / status filters newest first: seek, then walk created_at (migration 0009).
        Index("ix_cce_ws_model_created", "workspace_id", "model", "created_at", "id"),
        Index("ix_cce_ws_status_created", "workspace_id", "status_code", "created_at", "id"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True, default=new_id)
    organization_id: Mapped[str] = mapped_column(String(36))
    workspace_id: Mapped[str] = mapped_column(String(36))
    key_id: Mapped[str | None] = mapped_column(String(36), default=None)
    correlation_id: Mapped[str] = mapped_column(String(200))
    source: Mapped[str] = mapped_column(String(50), default="api")
    model: Mapped[str] = mapped_column(String(200))
    status_code: Mapped[int] = mapped_column(Integer, default=200)
    latency_ms: Mapped[float] = mapped_column(Float, default=0.0)
    request_messages: Mapped[list[dict[str, Any]]] = mapped_column(JSONDoc, default=list)
    response_messages: Mapped[list[dict[str, Any]]] = mapped_column(JSONDoc, default=list)
    enabled_tools: Mapped[list[dict[str, Any]]] = mapped_column(JSONDoc, default=list)
    nb_input_tokens: Mapped[int] = mapped_column(Integer, default=0)
    nb_output_tokens: Mapped[int] = mapped_column(Integer, default=0)
    nb_messages: Mapped[int] = mapped_column(Integer, default=0)
    extra_fields: Mapped[dict[str, Any]] = mapped_column(JSONDoc, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class Dataset(WorkspaceScoped, Base):
    """A named collection of conversations; deleting it only sets `deleted_at`."""

    __tablename__ = "observability_datasets"
    __table_args__ = (Index("ix_obs_datasets_ws_created", "workspace_id", "created_at", "id"),)

    name: Mapped[str] = mapped_column(String(500))
    description: Mapped[str] = mapped_column(Text, default="")
    owner_id: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)


class DatasetRecord(WorkspaceScoped, Base):
    """One conversation of a dataset: its payload (`messages`) and free properties."""

    __tablename__ = "observability_dataset_records"
    __table_args__ = (Index("ix_obs_records_dataset_created", "dataset_id", "created_at", "id"),)

    dataset_id: Mapped[str] = mapped_column(
        ForeignKey("observability_datasets.id", ondelete="CASCADE")
    )
    payload: Mapped[dict[str, Any]] = mapped_column(JSONDoc, default=dict)
    properties: Mapped[dict[str, Any]] = mapped_column(JSONDoc, default=dict)
    source: Mapped[str] = mapped_column(String(30), default="DIRECT_INPUT")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)


class Judge(WorkspaceScoped, Base):
    """An automatic evaluator: a model, instructions and an output (CLASSIFICATION options or a
    REGRESSION range). Deleting it only sets `deleted_at`."""

    __tablename__ = "observability_judges"
    __table_args__ = (Index("ix_obs_judges_ws_created", "workspace_id", "created_at", "id"),)

    name: Mapped[str] = mapped_column(String(500))
    description: Mapped[str] = mapped_column(Text, default="")
    model_name: Mapped[str] = mapped_column(String(200))
    output: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    output_type: Mapped[str] = mapped_column(String(20))
    instructions: Mapped[str] = mapped_column(Text, default="")
    tools: Mapped[list[str]] = mapped_column(JSONDoc, default=list)
    owner_id: Mapped[str] = mapped_column(String(200))
    # Revisions (judges_service.update): the judge's id always holds its latest definition;
    # each earlier one is kept in a row of its own, linked both ways and to the first one.
    up_revision: Mapped[str | None] = mapped_column(String(200), default=None)
    down_revision: Mapped[str | None] = mapped_column(String(200), default=None)
    base_revision: Mapped[str | None] = mapped_column(String(200), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)


class Campaign(WorkspaceScoped, Base):
    """A judge run over the events selected by `search_params` at creation (at most
    `max_nb_events`), judged one by one in a durable job. Deleting it only sets `deleted_at`
    (its job stops before the next event)."""

    __tablename__ = "observability_campaigns"
    __table_args__ = (Index("ix_obs_campaigns_ws_created", "workspace_id", "created_at", "id"),)

    name: Mapped[str] = mapped_column(String(500))
    description: Mapped[str] = mapped_column(Text, default="")
    owner_id: Mapped[str] = mapped_column(String(200))
    key_id: Mapped[str | None] = mapped_column(String(36), default=None)
    user_id: Mapped[str | None] = mapped_column(String(36), default=None)
    judge_id: Mapped[str] = mapped_column(ForeignKey("observability_judges.id", ondelete="CASCADE"))
    # The judge's definition when the campaign started: later edits do not change the run.
    judge_definition: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    max_nb_events: Mapped[int] = mapped_column(Integer)
    search_params: Mapped[dict[str, Any]] = mapped_column(JSONDoc)
    status: Mapped[str] = mapped_column(String(20), default="RUNNING")
    job_id: Mapped[str | None] = mapped_column(String(36), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)


class CampaignEvent(Base):
    """An event selected by a campaign, in selection order, with its verdict once judged."""

    __tablename__ = "observability_campaign_events"
    __table_args__ = (Index("ix_obs_campaign_events_order", "campaign_id", "position"),)

    campaign_id: Mapped[str] = mapped_column(
        ForeignKey("observability_campaigns.id", ondelete="CASCADE"), primary_key=True
    )
    event_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    position: Mapped[int] = mapped_column(Integer)
    analysis: Mapped[str | None] = mapped_column(Text, default=None)
    answer: Mapped[Any] = mapped_column(JSONDoc, nullable=True, default=None)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    judged_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)


class DatasetImportTask(WorkspaceScoped, Base):
    """An import into a dataset (events, records, conversations, a file, a campaign), run by the
    durable `observability.dataset_import` job: RUNNING, then COMPLETED, FAILED or CANCELED."""

    __tablename__ = "observability_dataset_tasks"

    dataset_id: Mapped[str] = mapped_column(
        ForeignKey("observability_datasets.id", ondelete="CASCADE"), index=True
    )
    creator_id: Mapped[str] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(20))
    progress: Mapped[int | None] = mapped_column(Integer, default=None)
    message: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)


class EventEmbedding(Base):
    """The embedding of an event's conversation (float32 bytes), computed lazily by the first
    similar-events request that needs it."""

    __tablename__ = "observability_event_embeddings"
    __table_args__ = (
        # The similar-events scan: a workspace's vectors of one model, in event_id chunks.
        Index("ix_obs_event_embeddings_scan", "workspace_id", "model", "event_id"),
    )

    event_id: Mapped[str] = mapped_column(String(36), primary_key=True)
    model: Mapped[str] = mapped_column(String(200), primary_key=True)
    workspace_id: Mapped[str] = mapped_column(String(36), index=True)
    vector: Mapped[bytes] = mapped_column(LargeBinary)
