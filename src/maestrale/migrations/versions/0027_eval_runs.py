"""evaluations v2, offline half: projects, evaluations, runs with their records and scores,
optimizations and their trials

Revision ID: 0027_eval_runs
Revises: 0026_eval_pipelines
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy import Text
from sqlalchemy.dialects import postgresql

import maestrale.core.db

revision: str = "0027_eval_runs"
down_revision: str | None = "0026_eval_pipelines"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "observability_eval_projects",
        sa.Column("creator_id", sa.String(length=200), nullable=False),
        sa.Column("name", sa.String(length=500), nullable=False),
        sa.Column("slug", sa.String(length=120), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("is_favorite", sa.Boolean(), nullable=False),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("deleted_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_observability_eval_projects_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_observability_eval_projects_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_observability_eval_projects")),
        sa.UniqueConstraint("workspace_id", "slug", name="uq_obs_eval_projects_ws_slug"),
    )
    op.create_index(
        "ix_obs_eval_projects_ws_created",
        "observability_eval_projects",
        ["workspace_id", "created_at", "id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_observability_eval_projects_workspace_id"),
        "observability_eval_projects",
        ["workspace_id"],
        unique=False,
    )
    op.create_table(
        "observability_evaluations_v2",
        sa.Column("project_id", sa.String(length=200), nullable=False),
        sa.Column("creator_id", sa.String(length=200), nullable=False),
        sa.Column("name", sa.String(length=500), nullable=False),
        sa.Column("slug", sa.String(length=120), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column(
            "tags",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "metadata",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "judge_ids",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("deleted_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_observability_evaluations_v2_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["observability_eval_projects.id"],
            name=op.f("fk_observability_evaluations_v2_project_id_observability_eval_projects"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_observability_evaluations_v2_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_observability_evaluations_v2")),
        sa.UniqueConstraint("workspace_id", "slug", name="uq_obs_evaluations_v2_ws_slug"),
    )
    op.create_index(
        "ix_obs_evaluations_v2_project",
        "observability_evaluations_v2",
        ["project_id", "created_at", "id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_observability_evaluations_v2_workspace_id"),
        "observability_evaluations_v2",
        ["workspace_id"],
        unique=False,
    )
    op.create_table(
        "observability_eval_optimizations",
        sa.Column("project_id", sa.String(length=200), nullable=False),
        sa.Column("evaluation_id", sa.String(length=200), nullable=False),
        sa.Column("creator_id", sa.String(length=200), nullable=False),
        sa.Column("name", sa.String(length=500), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("algorithm", sa.String(length=100), nullable=False),
        sa.Column(
            "tags",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("steer", sa.Text(), nullable=True),
        sa.Column(
            "objective_spec",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column(
            "outcome",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("deleted_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["evaluation_id"],
            ["observability_evaluations_v2.id"],
            name=op.f(
                "fk_observability_eval_optimizations_evaluation_id_observability_evaluations_v2"
            ),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_observability_eval_optimizations_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["observability_eval_projects.id"],
            name=op.f("fk_observability_eval_optimizations_project_id_observability_eval_projects"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_observability_eval_optimizations_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_observability_eval_optimizations")),
    )
    op.create_index(
        "ix_obs_eval_opts_ws_created",
        "observability_eval_optimizations",
        ["workspace_id", "created_at", "id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_observability_eval_optimizations_workspace_id"),
        "observability_eval_optimizations",
        ["workspace_id"],
        unique=False,
    )
    op.create_table(
        "observability_eval_runs",
        sa.Column("evaluation_id", sa.String(length=200), nullable=False),
        sa.Column("project_id", sa.String(length=200), nullable=False),
        sa.Column("creator_id", sa.String(length=200), nullable=False),
        sa.Column("key_id", sa.String(length=36), nullable=True),
        sa.Column("user_id", sa.String(length=36), nullable=True),
        sa.Column("name", sa.String(length=500), nullable=False),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column(
            "tags",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "metadata",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("dataset_id", sa.String(length=200), nullable=True),
        sa.Column(
            "source",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "evaluators",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("job_id", sa.String(length=36), nullable=True),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("deleted_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["evaluation_id"],
            ["observability_evaluations_v2.id"],
            name=op.f("fk_observability_eval_runs_evaluation_id_observability_evaluations_v2"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_observability_eval_runs_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_observability_eval_runs_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_observability_eval_runs")),
    )
    op.create_index(
        "ix_obs_eval_runs_ws_created",
        "observability_eval_runs",
        ["workspace_id", "created_at", "id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_observability_eval_runs_evaluation_id"),
        "observability_eval_runs",
        ["evaluation_id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_observability_eval_runs_project_id"),
        "observability_eval_runs",
        ["project_id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_observability_eval_runs_workspace_id"),
        "observability_eval_runs",
        ["workspace_id"],
        unique=False,
    )
    op.create_table(
        "observability_eval_records",
        sa.Column("run_id", sa.String(length=200), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("dataset_record_id", sa.String(length=200), nullable=True),
        sa.Column(
            "input",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("scored_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("deleted_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_observability_eval_records_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["observability_eval_runs.id"],
            name=op.f("fk_observability_eval_records_run_id_observability_eval_runs"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_observability_eval_records_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_observability_eval_records")),
    )
    op.create_index(
        "ix_obs_eval_records_run",
        "observability_eval_records",
        ["run_id", "position"],
        unique=False,
    )
    op.create_index(
        op.f("ix_observability_eval_records_workspace_id"),
        "observability_eval_records",
        ["workspace_id"],
        unique=False,
    )
    op.create_table(
        "observability_eval_run_tags",
        sa.Column("run_id", sa.String(length=200), nullable=False),
        sa.Column("tag", sa.String(length=200), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["observability_eval_runs.id"],
            name=op.f("fk_observability_eval_run_tags_run_id_observability_eval_runs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("run_id", "tag", name=op.f("pk_observability_eval_run_tags")),
    )
    op.create_index(
        "ix_obs_eval_run_tags_tag", "observability_eval_run_tags", ["tag", "run_id"], unique=False
    )
    op.create_table(
        "observability_eval_trials",
        sa.Column("optimization_id", sa.String(length=200), nullable=False),
        sa.Column("run_id", sa.String(length=200), nullable=False),
        sa.Column("algorithm_trial_key", sa.String(length=200), nullable=False),
        sa.Column(
            "metadata",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("parent_trial_id", sa.String(length=200), nullable=True),
        sa.Column("hypothesis", sa.Text(), nullable=True),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("deleted_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["optimization_id"],
            ["observability_eval_optimizations.id"],
            name=op.f(
                "fk_observability_eval_trials_optimization_id_observability_eval_optimizations"
            ),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_observability_eval_trials_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["observability_eval_runs.id"],
            name=op.f("fk_observability_eval_trials_run_id_observability_eval_runs"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_observability_eval_trials_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_observability_eval_trials")),
    )
    op.create_index(
        "ix_obs_eval_trials_opt",
        "observability_eval_trials",
        ["optimization_id", "created_at", "id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_observability_eval_trials_workspace_id"),
        "observability_eval_trials",
        ["workspace_id"],
        unique=False,
    )
    op.create_table(
        "observability_eval_scores",
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("run_id", sa.String(length=200), nullable=False),
        sa.Column("record_id", sa.String(length=200), nullable=False),
        sa.Column("evaluator_name", sa.String(length=500), nullable=False),
        sa.Column(
            "value",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("number", sa.Float(), nullable=True),
        sa.Column("label", sa.String(length=500), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("rationale", sa.Text(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["record_id"],
            ["observability_eval_records.id"],
            name=op.f("fk_observability_eval_scores_record_id_observability_eval_records"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["observability_eval_runs.id"],
            name=op.f("fk_observability_eval_scores_run_id_observability_eval_runs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_observability_eval_scores")),
    )
    op.create_index(
        "ix_obs_eval_scores_run",
        "observability_eval_scores",
        ["run_id", "evaluator_name", "record_id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_observability_eval_scores_record_id"),
        "observability_eval_scores",
        ["record_id"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index(
        op.f("ix_observability_eval_scores_record_id"), table_name="observability_eval_scores"
    )
    op.drop_index("ix_obs_eval_scores_run", table_name="observability_eval_scores")
    op.drop_table("observability_eval_scores")
    op.drop_index(
        op.f("ix_observability_eval_trials_workspace_id"), table_name="observability_eval_trials"
    )
    op.drop_index("ix_obs_eval_trials_opt", table_name="observability_eval_trials")
    op.drop_table("observability_eval_trials")
    op.drop_index("ix_obs_eval_run_tags_tag", table_name="observability_eval_run_tags")
    op.drop_table("observability_eval_run_tags")
    op.drop_index(
        op.f("ix_observability_eval_records_workspace_id"), table_name="observability_eval_records"
    )
    op.drop_index("ix_obs_eval_records_run", table_name="observability_eval_records")
    op.drop_table("observability_eval_records")
    op.drop_index(
        op.f("ix_observability_eval_runs_workspace_id"), table_name="observability_eval_runs"
    )
    op.drop_index(
        op.f("ix_observability_eval_runs_project_id"), table_name="observability_eval_runs"
    )
    op.drop_index(
        op.f("ix_observability_eval_runs_evaluation_id"), table_name="observability_eval_runs"
    )
    op.drop_index("ix_obs_eval_runs_ws_created", table_name="observability_eval_runs")
    op.drop_table("observability_eval_runs")
    op.drop_index(
        op.f("ix_observability_eval_optimizations_workspace_id"),
        table_name="observability_eval_optimizations",
    )
    op.drop_index("ix_obs_eval_opts_ws_created", table_name="observability_eval_optimizations")
    op.drop_table("observability_eval_optimizations")
    op.drop_index(
        op.f("ix_observability_evaluations_v2_workspace_id"),
        table_name="observability_evaluations_v2",
    )
    op.drop_index("ix_obs_evaluations_v2_project", table_name="observability_evaluations_v2")
    op.drop_table("observability_evaluations_v2")
    op.drop_index(
        op.f("ix_observability_eval_projects_workspace_id"),
        table_name="observability_eval_projects",
    )
    op.drop_index("ix_obs_eval_projects_ws_created", table_name="observability_eval_projects")
    op.drop_table("observability_eval_projects")
