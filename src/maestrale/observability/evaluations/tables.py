"""Evaluations v2 (offline half): projects, their evaluations (judges as evaluators), runs of an
evaluation over inputs (one record per input, one score per evaluator), and optimizations whose
trials are runs."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from maestrale.core.clock import utcnow
from maestrale.core.db import Base, JSONDoc, UTCDateTime
from maestrale.core.repository import WorkspaceScoped


class Stamped:
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)


class EvalProject(Stamped, WorkspaceScoped, Base):
    """A project groups evaluations; its slug is unique in the workspace, deleted ones included.
    Deleting it only sets `deleted_at`."""

    __tablename__ = "observability_eval_projects"
    __table_args__ = (
        UniqueConstraint("workspace_id", "slug", name="uq_obs_eval_projects_ws_slug"),
        Index("ix_obs_eval_projects_ws_created", "workspace_id", "created_at", "id"),
    )

    creator_id: Mapped[str] = mapped_column(String(200))
    name: Mapped[str] = mapped_column(String(500))
    slug: Mapped[str] = mapped_column(String(120))
    description: Mapped[str | None] = mapped_column(Text, default=None)
    is_favorite: Mapped[bool] = mapped_column(Boolean, default=False)


class EvalEvaluation(Stamped, WorkspaceScoped, Base):
    """An evaluation of a project: its evaluators are judges of the workspace (by id)."""

    __tablename__ = "observability_evaluations_v2"
    __table_args__ = (
        UniqueConstraint("workspace_id", "slug", name="uq_obs_evaluations_v2_ws_slug"),
        Index("ix_obs_evaluations_v2_project", "project_id", "created_at", "id"),
    )

    project_id: Mapped[str] = mapped_column(
        ForeignKey("observability_eval_projects.id", ondelete="CASCADE")
    )
    creator_id: Mapped[str] = mapped_column(String(200))
    name: Mapped[str] = mapped_column(String(500))
    slug: Mapped[str] = mapped_column(String(120))
    description: Mapped[str | None] = mapped_column(Text, default=None)
    tags: Mapped[list[str]] = mapped_column(JSONDoc, default=list)
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSONDoc, default=dict)
    judge_ids: Mapped[list[str]] = mapped_column(JSONDoc, default=list)


class EvalRun(Stamped, WorkspaceScoped, Base):
    """A run of an evaluation over inputs, scored by the durable `observability.evaluation_run`
    job: `running`, then `completed` (or `failed` when the job gave up)."""

    __tablename__ = "observability_eval_runs"
    __table_args__ = (Index("ix_obs_eval_runs_ws_created", "workspace_id", "created_at", "id"),)

    evaluation_id: Mapped[str] = mapped_column(
        ForeignKey("observability_evaluations_v2.id", ondelete="CASCADE"), index=True
    )
    project_id: Mapped[str] = mapped_column(String(200), index=True)
    creator_id: Mapped[str] = mapped_column(String(200))
    key_id: Mapped[str | None] = mapped_column(String(36), default=None)
    user_id: Mapped[str | None] = mapped_column(String(36), default=None)
    name: Mapped[str] = mapped_column(String(500))
    description: Mapped[str | None] = mapped_column(Text, default=None)
    tags: Mapped[list[str]] = mapped_column(JSONDoc, default=list)
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSONDoc, default=dict)
    status: Mapped[str] = mapped_column(String(20), default="running")
    dataset_id: Mapped[str | None] = mapped_column(String(200), default=None)
    # Where the inputs came from: {"dataset_id": ...} or {"span_search": expression}.
    source: Mapped[dict[str, Any]] = mapped_column(JSONDoc, default=dict)
    # The evaluators when the run started (judge id, name, timestamps, definition): later edits
    # of a judge do not change the run.
    evaluators: Mapped[list[dict[str, Any]]] = mapped_column(JSONDoc, default=list)
    job_id: Mapped[str | None] = mapped_column(String(36), default=None)


class EvalRunTag(Base):
    """A tag of a run, one row each, so that tag filters are plain SQL."""

    __tablename__ = "observability_eval_run_tags"
    __table_args__ = (Index("ix_obs_eval_run_tags_tag", "tag", "run_id"),)

    run_id: Mapped[str] = mapped_column(
        ForeignKey("observability_eval_runs.id", ondelete="CASCADE"), primary_key=True
    )
    tag: Mapped[str] = mapped_column(String(200), primary_key=True)


class EvalRecord(Stamped, WorkspaceScoped, Base):
    """One input of a run; `scored_at` is set, with its scores, once every evaluator judged it."""

    __tablename__ = "observability_eval_records"
    __table_args__ = (Index("ix_obs_eval_records_run", "run_id", "position"),)

    run_id: Mapped[str] = mapped_column(
        ForeignKey("observability_eval_runs.id", ondelete="CASCADE")
    )
    position: Mapped[int] = mapped_column(Integer)
    dataset_record_id: Mapped[str | None] = mapped_column(String(200), default=None)
    input: Mapped[Any] = mapped_column(JSONDoc, nullable=True, default=None)
    scored_at: Mapped[datetime | None] = mapped_column(UTCDateTime, default=None)


class EvalScore(Base):
    """An evaluator's score of a record: `value` as given (a label or a number), with its number
    (`number`) or label (`label`) copied out for filters and statistics."""

    __tablename__ = "observability_eval_scores"
    __table_args__ = (Index("ix_obs_eval_scores_run", "run_id", "evaluator_name", "record_id"),)

    id: Mapped[str] = mapped_column(String(200), primary_key=True)
    run_id: Mapped[str] = mapped_column(
        ForeignKey("observability_eval_runs.id", ondelete="CASCADE")
    )
    record_id: Mapped[str] = mapped_column(
        ForeignKey("observability_eval_records.id", ondelete="CASCADE"), index=True
    )
    evaluator_name: Mapped[str] = mapped_column(String(500))
    value: Mapped[Any] = mapped_column(JSONDoc, nullable=True, default=None)
    number: Mapped[float | None] = mapped_column(Float, default=None)
    label: Mapped[str | None] = mapped_column(String(500), default=None)
    status: Mapped[str] = mapped_column(String(20))
    rationale: Mapped[str | None] = mapped_column(Text, default=None)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class EvalOptimization(Stamped, WorkspaceScoped, Base):
    """An optimization of an evaluation: trials are runs of it, observed by `objective_spec`
    (`{"evaluator": name, "metric": "avg"|"min"|"max", "direction": ...}`)."""

    __tablename__ = "observability_eval_optimizations"
    __table_args__ = (Index("ix_obs_eval_opts_ws_created", "workspace_id", "created_at", "id"),)

    project_id: Mapped[str] = mapped_column(
        ForeignKey("observability_eval_projects.id", ondelete="CASCADE")
    )
    evaluation_id: Mapped[str] = mapped_column(
        ForeignKey("observability_evaluations_v2.id", ondelete="CASCADE")
    )
    creator_id: Mapped[str] = mapped_column(String(200))
    name: Mapped[str] = mapped_column(String(500))
    description: Mapped[str | None] = mapped_column(Text, default=None)
    algorithm: Mapped[str] = mapped_column(String(100))
    tags: Mapped[list[str]] = mapped_column(JSONDoc, default=list)
    steer: Mapped[str | None] = mapped_column(Text, default=None)
    objective_spec: Mapped[dict[str, Any] | None] = mapped_column(JSONDoc, default=None)
    outcome: Mapped[dict[str, Any] | None] = mapped_column(JSONDoc, default=None)


class EvalTrial(Stamped, WorkspaceScoped, Base):
    """A trial of an optimization: one run of its evaluation, with the hypothesis it tests (its
    status is its run's)."""

    __tablename__ = "observability_eval_trials"
    __table_args__ = (Index("ix_obs_eval_trials_opt", "optimization_id", "created_at", "id"),)

    optimization_id: Mapped[str] = mapped_column(
        ForeignKey("observability_eval_optimizations.id", ondelete="CASCADE")
    )
    run_id: Mapped[str] = mapped_column(
        ForeignKey("observability_eval_runs.id", ondelete="CASCADE")
    )
    algorithm_trial_key: Mapped[str] = mapped_column(String(200))
    meta: Mapped[dict[str, Any]] = mapped_column("metadata", JSONDoc, default=dict)
    parent_trial_id: Mapped[str | None] = mapped_column(String(200), default=None)
    hypothesis: Mapped[str | None] = mapped_column(Text, default=None)
