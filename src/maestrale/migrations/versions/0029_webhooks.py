"""inbound webhooks: webhooks, their deliveries and replay keys

Revision ID: 0029_webhooks
Revises: 0028_registries
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy import Text
from sqlalchemy.dialects import postgresql

import maestrale.core.db

revision: str = "0029_webhooks"
down_revision: str | None = "0028_registries"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "webhooks",
        sa.Column("creator_id", sa.String(length=200), nullable=False),
        sa.Column("owner_type", sa.String(length=16), nullable=False),
        sa.Column("provider", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=256), nullable=False),
        sa.Column("secret_sealed", sa.Text(), nullable=True),
        sa.Column("encryption_key_sealed", sa.Text(), nullable=True),
        sa.Column("secret_read_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("url_verified", sa.Boolean(), nullable=True),
        sa.Column("signature_hash_algorithm", sa.String(length=16), nullable=True),
        sa.Column("signature_header_name", sa.String(length=128), nullable=True),
        sa.Column("validity_period_second", sa.Integer(), nullable=True),
        sa.Column("signature_extractor_regex", sa.Text(), nullable=True),
        sa.Column("timestamp_extractor_regex", sa.Text(), nullable=True),
        sa.Column("signature_payload_pattern", sa.Text(), nullable=True),
        sa.Column("signature_encoding", sa.String(length=16), nullable=True),
        sa.Column("success_status_code", sa.Integer(), nullable=True),
        sa.Column("event_type_path", sa.Text(), nullable=True),
        sa.Column("timestamp_header_name", sa.String(length=128), nullable=True),
        sa.Column("event_id_header_name", sa.String(length=128), nullable=True),
        sa.Column("expires_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_webhooks_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_webhooks_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhooks")),
    )
    op.create_index(op.f("ix_webhooks_workspace_id"), "webhooks", ["workspace_id"], unique=False)
    op.create_index(
        "ix_webhooks_ws_created", "webhooks", ["workspace_id", "created_at", "id"], unique=False
    )
    op.create_table(
        "webhook_deliveries",
        sa.Column("webhook_id", sa.String(length=200), nullable=False),
        sa.Column("received_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("verified", sa.Boolean(), nullable=False),
        sa.Column("event_type", sa.String(length=256), nullable=True),
        sa.Column("event_id", sa.String(length=256), nullable=True),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("body", sa.Text(), nullable=True),
        sa.Column("headers", JSON, nullable=False),
        sa.Column("started", JSON, nullable=False),
        sa.Column("dispatched_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_webhook_deliveries_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["webhook_id"],
            ["webhooks.id"],
            name=op.f("fk_webhook_deliveries_webhook_id_webhooks"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_webhook_deliveries_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_deliveries")),
    )
    op.create_index(
        "ix_webhook_deliveries_hook_received",
        "webhook_deliveries",
        ["webhook_id", "received_at", "id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_webhook_deliveries_workspace_id"),
        "webhook_deliveries",
        ["workspace_id"],
        unique=False,
    )
    op.create_table(
        "webhook_replay_keys",
        sa.Column("webhook_id", sa.String(length=200), nullable=False),
        sa.Column("key", sa.String(length=80), nullable=False),
        sa.Column("expires_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["webhook_id"],
            ["webhooks.id"],
            name=op.f("fk_webhook_replay_keys_webhook_id_webhooks"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("webhook_id", "key", name=op.f("pk_webhook_replay_keys")),
    )
    op.create_index(
        "ix_webhook_replay_keys_expires", "webhook_replay_keys", ["expires_at"], unique=False
    )


def downgrade() -> None:
    op.drop_index("ix_webhook_replay_keys_expires", table_name="webhook_replay_keys")
    op.drop_table("webhook_replay_keys")
    op.drop_index(op.f("ix_webhook_deliveries_workspace_id"), table_name="webhook_deliveries")
    op.drop_index("ix_webhook_deliveries_hook_received", table_name="webhook_deliveries")
    op.drop_table("webhook_deliveries")
    op.drop_index("ix_webhooks_ws_created", table_name="webhooks")
    op.drop_index(op.f("ix_webhooks_workspace_id"), table_name="webhooks")
    op.drop_table("webhooks")
