"""workflows control plane: workflows, deployments and their workers, registrations, the
execution index, worker events, schedule owners (Temporal runs the executions)

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26 17:30:24.201388
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import maestrale.core.db

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:

    op.create_table(
        "workflow_deployments",
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column(
            "location",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_workflow_deployments_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_workflow_deployments_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_deployments")),
        sa.UniqueConstraint("workspace_id", "name", name="uq_workflow_deployments_ws_name"),
    )
    with op.batch_alter_table("workflow_deployments", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_workflow_deployments_workspace_id"), ["workspace_id"], unique=False
        )

    op.create_table(
        "workflow_events",
        sa.Column(
            "seq",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("event_id", sa.String(length=200), nullable=False),
        sa.Column("execution_id", sa.String(length=256), nullable=False),
        sa.Column("root_execution_id", sa.String(length=256), nullable=True),
        sa.Column("run_id", sa.String(length=64), nullable=True),
        sa.Column("workflow_name", sa.String(length=128), nullable=True),
        sa.Column("event_type", sa.String(length=64), nullable=False),
        sa.Column("timestamp_ns", sa.BigInteger(), nullable=False),
        sa.Column(
            "body",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("received_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_workflow_events_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_workflow_events_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_workflow_events")),
        sa.UniqueConstraint("workspace_id", "event_id", name="uq_workflow_events_ws_event"),
    )
    with op.batch_alter_table("workflow_events", schema=None) as batch_op:
        batch_op.create_index("ix_workflow_events_exec_seq", ["execution_id", "seq"], unique=False)
        batch_op.create_index(
            "ix_workflow_events_root_seq", ["root_execution_id", "seq"], unique=False
        )
        batch_op.create_index("ix_workflow_events_ws_seq", ["workspace_id", "seq"], unique=False)

    op.create_table(
        "workflows",
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("display_name", sa.String(length=256), nullable=False),
        sa.Column("description", sa.String(length=4000), nullable=True),
        sa.Column(
            "tags",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("archived", sa.Boolean(), nullable=False),
        sa.Column("is_technical", sa.Boolean(), nullable=False),
        sa.Column("available_in_chat_assistant", sa.Boolean(), nullable=False),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_workflows_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_workflows_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflows")),
        sa.UniqueConstraint("workspace_id", "name", name="uq_workflows_ws_name"),
    )
    with op.batch_alter_table("workflows", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_workflows_workspace_id"), ["workspace_id"], unique=False
        )

    op.create_table(
        "workflow_executions",
        sa.Column("workflow_id", sa.String(length=200), nullable=True),
        sa.Column("workflow_name", sa.String(length=128), nullable=False),
        sa.Column("deployment_name", sa.String(length=200), nullable=True),
        sa.Column("run_id", sa.String(length=64), nullable=True),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("start_time", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("end_time", maestrale.core.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column(
            "result",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("parent_execution_id", sa.String(length=256), nullable=True),
        sa.Column("root_execution_id", sa.String(length=256), nullable=False),
        sa.Column("user_id", sa.String(length=36), nullable=True),
        sa.Column("token_hash", sa.String(length=64), nullable=True),
        sa.Column("updated_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_workflow_executions_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workflow_id"],
            ["workflows.id"],
            name=op.f("fk_workflow_executions_workflow_id_workflows"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_workflow_executions_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_executions")),
    )
    with op.batch_alter_table("workflow_executions", schema=None) as batch_op:
        batch_op.create_index("ix_workflow_executions_root", ["root_execution_id"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_workflow_executions_workspace_id"), ["workspace_id"], unique=False
        )
        batch_op.create_index(
            "ix_workflow_executions_ws_run", ["workspace_id", "run_id"], unique=False
        )
        batch_op.create_index(
            "ix_workflow_executions_ws_start", ["workspace_id", "start_time"], unique=False
        )

    op.create_table(
        "workflow_registrations",
        sa.Column("workflow_id", sa.String(length=200), nullable=False),
        sa.Column("deployment_id", sa.String(length=200), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column(
            "definition",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["deployment_id"],
            ["workflow_deployments.id"],
            name=op.f("fk_workflow_registrations_deployment_id_workflow_deployments"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_workflow_registrations_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workflow_id"],
            ["workflows.id"],
            name=op.f("fk_workflow_registrations_workflow_id_workflows"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_workflow_registrations_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_registrations")),
        sa.UniqueConstraint(
            "workflow_id", "deployment_id", "digest", name="uq_workflow_registrations_def"
        ),
    )
    with op.batch_alter_table("workflow_registrations", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_workflow_registrations_workspace_id"), ["workspace_id"], unique=False
        )
        batch_op.create_index(
            "ix_workflow_registrations_ws_created", ["workspace_id", "created_at"], unique=False
        )

    op.create_table(
        "workflow_schedules",
        sa.Column("workflow_id", sa.String(length=200), nullable=False),
        sa.Column("deployment_name", sa.String(length=200), nullable=True),
        sa.Column("user_id", sa.String(length=36), nullable=True),
        sa.Column(
            "spec",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_workflow_schedules_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workflow_id"],
            ["workflows.id"],
            name=op.f("fk_workflow_schedules_workflow_id_workflows"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_workflow_schedules_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_schedules")),
    )
    with op.batch_alter_table("workflow_schedules", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_workflow_schedules_workspace_id"), ["workspace_id"], unique=False
        )

    op.create_table(
        "workflow_workers",
        sa.Column("deployment_id", sa.String(length=200), nullable=False),
        sa.Column("name", sa.String(length=256), nullable=False),
        sa.Column(
            "location",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("last_seen_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["deployment_id"],
            ["workflow_deployments.id"],
            name=op.f("fk_workflow_workers_deployment_id_workflow_deployments"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_workflow_workers_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_workflow_workers_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_workers")),
        sa.UniqueConstraint("deployment_id", "name", name="uq_workflow_workers_deployment_name"),
    )
    with op.batch_alter_table("workflow_workers", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_workflow_workers_workspace_id"), ["workspace_id"], unique=False
        )


def downgrade() -> None:

    with op.batch_alter_table("workflow_workers", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_workflow_workers_workspace_id"))

    op.drop_table("workflow_workers")
    with op.batch_alter_table("workflow_schedules", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_workflow_schedules_workspace_id"))

    op.drop_table("workflow_schedules")
    with op.batch_alter_table("workflow_registrations", schema=None) as batch_op:
        batch_op.drop_index("ix_workflow_registrations_ws_created")
        batch_op.drop_index(batch_op.f("ix_workflow_registrations_workspace_id"))

    op.drop_table("workflow_registrations")
    with op.batch_alter_table("workflow_executions", schema=None) as batch_op:
        batch_op.drop_index("ix_workflow_executions_ws_start")
        batch_op.drop_index("ix_workflow_executions_ws_run")
        batch_op.drop_index(batch_op.f("ix_workflow_executions_workspace_id"))
        batch_op.drop_index("ix_workflow_executions_root")

    op.drop_table("workflow_executions")
    with op.batch_alter_table("workflows", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_workflows_workspace_id"))

    op.drop_table("workflows")
    with op.batch_alter_table("workflow_events", schema=None) as batch_op:
        batch_op.drop_index("ix_workflow_events_ws_seq")
        batch_op.drop_index("ix_workflow_events_exec_seq")
        batch_op.drop_index("ix_workflow_events_root_seq")

    op.drop_table("workflow_events")
    with op.batch_alter_table("workflow_deployments", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_workflow_deployments_workspace_id"))

    op.drop_table("workflow_deployments")
