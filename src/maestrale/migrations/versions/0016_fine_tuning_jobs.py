"""fine-tuning jobs, their events and their checkpoints

Revision ID: 0016_fine_tuning_jobs
Revises: 0015_library_index
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import maestrale.core.db

revision: str = "0016_fine_tuning_jobs"
down_revision: str | None = "0015_library_index"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "fine_tuning_jobs",
        sa.Column("created_by", sa.String(length=36), nullable=True),
        sa.Column("key_id", sa.String(length=36), nullable=True),
        sa.Column("model", sa.String(length=256), nullable=False),
        sa.Column("root", sa.String(length=200), nullable=False),
        sa.Column("job_type", sa.String(length=16), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("auto_start", sa.Boolean(), nullable=False),
        sa.Column(
            "hyperparameters",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "training_files",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "validation_files",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("suffix", sa.String(length=32), nullable=True),
        sa.Column(
            "integrations",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "classifier_targets",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("invalid_sample_skip_percentage", sa.Float(), nullable=False),
        sa.Column("fine_tuned_model", sa.String(length=300), nullable=True),
        sa.Column("trained_tokens", sa.BigInteger(), nullable=True),
        sa.Column(
            "metadata",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("queue_job_id", sa.String(length=36), nullable=True),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("modified_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_fine_tuning_jobs_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_fine_tuning_jobs_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_fine_tuning_jobs")),
    )
    with op.batch_alter_table("fine_tuning_jobs", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_fine_tuning_jobs_workspace_id"), ["workspace_id"], unique=False
        )
        batch_op.create_index(
            "ix_fine_tuning_jobs_ws_created", ["workspace_id", "created_at"], unique=False
        )

    op.create_table(
        "fine_tuning_checkpoints",
        sa.Column("job_id", sa.String(length=200), nullable=False),
        sa.Column("step_number", sa.Integer(), nullable=False),
        sa.Column("train_loss", sa.Float(), nullable=True),
        sa.Column("valid_loss", sa.Float(), nullable=True),
        sa.Column("valid_mean_token_accuracy", sa.Float(), nullable=True),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["job_id"],
            ["fine_tuning_jobs.id"],
            name=op.f("fk_fine_tuning_checkpoints_job_id_fine_tuning_jobs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("job_id", "step_number", name=op.f("pk_fine_tuning_checkpoints")),
    )
    op.create_table(
        "fine_tuning_events",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("job_id", sa.String(length=200), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column(
            "data",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["job_id"],
            ["fine_tuning_jobs.id"],
            name=op.f("fk_fine_tuning_events_job_id_fine_tuning_jobs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_fine_tuning_events")),
    )
    with op.batch_alter_table("fine_tuning_events", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_fine_tuning_events_job_id"), ["job_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("fine_tuning_events", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_fine_tuning_events_job_id"))

    op.drop_table("fine_tuning_events")
    op.drop_table("fine_tuning_checkpoints")
    with op.batch_alter_table("fine_tuning_jobs", schema=None) as batch_op:
        batch_op.drop_index("ix_fine_tuning_jobs_ws_created")
        batch_op.drop_index(batch_op.f("ix_fine_tuning_jobs_workspace_id"))

    op.drop_table("fine_tuning_jobs")
