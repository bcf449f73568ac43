"""service accounts: non-human principals of a workspace, their keys and their usage

A service account holds workspace roles and API keys of its own (`api_keys.service_account_id`);
the usage rows and chat completion events of its keys name it.

Revision ID: 0019_service_accounts
Revises: 0018_fine_tuned_artifact_format
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import maestrale.core.db

revision: str = "0019_service_accounts"
down_revision: str | None = "0018_fine_tuned_artifact_format"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "service_accounts",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("description", sa.String(length=2000), nullable=True),
        sa.Column(
            "roles",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("created_by", sa.String(length=36), nullable=True),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("deleted_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_service_accounts_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_service_accounts_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_service_accounts")),
    )
    with op.batch_alter_table("service_accounts", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_service_accounts_organization_id"), ["organization_id"], unique=False
        )
        batch_op.create_index(
            "ix_service_accounts_ws_created", ["workspace_id", "created_at"], unique=False
        )
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.add_column(sa.Column("service_account_id", sa.String(length=36), nullable=True))
        batch_op.create_index(
            batch_op.f("ix_api_keys_service_account_id"), ["service_account_id"], unique=False
        )
        batch_op.create_foreign_key(
            batch_op.f("fk_api_keys_service_account_id_service_accounts"),
            "service_accounts",
            ["service_account_id"],
            ["id"],
            ondelete="CASCADE",
        )
    for table in ("usage_records", "chat_completion_events"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(
                sa.Column("service_account_id", sa.String(length=36), nullable=True)
            )


def downgrade() -> None:
    for table in ("chat_completion_events", "usage_records"):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column("service_account_id")
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.drop_constraint(
            batch_op.f("fk_api_keys_service_account_id_service_accounts"), type_="foreignkey"
        )
        batch_op.drop_index(batch_op.f("ix_api_keys_service_account_id"))
        batch_op.drop_column("service_account_id")
    with op.batch_alter_table("service_accounts", schema=None) as batch_op:
        batch_op.drop_index("ix_service_accounts_ws_created")
        batch_op.drop_index(batch_op.f("ix_service_accounts_organization_id"))
    op.drop_table("service_accounts")
