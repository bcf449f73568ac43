"""registries: prompts and skills, their immutable versions and their aliases

Revision ID: 0028_registries
Revises: 0027_eval_runs
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import maestrale.core.db

revision: str = "0028_registries"
down_revision: str | None = "0027_eval_runs"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "registry_objects",
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("description", sa.Text(), nullable=True),
        sa.Column("sharing_scope", sa.String(length=16), nullable=False),
        sa.Column("workspace_relation", sa.String(length=16), nullable=False),
        sa.Column("latest_version", sa.Integer(), nullable=False),
        sa.Column("created_by", sa.String(length=200), nullable=True),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f("fk_registry_objects_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f("fk_registry_objects_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_registry_objects")),
        sa.UniqueConstraint(
            "workspace_id", "kind", "name", name="uq_registry_objects_ws_kind_name"
        ),
    )
    with op.batch_alter_table("registry_objects", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_registry_objects_workspace_id"), ["workspace_id"], unique=False
        )
        batch_op.create_index(
            "ix_registry_objects_ws_kind_created",
            ["workspace_id", "kind", "created_at", "id"],
            unique=False,
        )
        batch_op.create_index(
            "ix_registry_objects_ws_kind_updated",
            ["workspace_id", "kind", "updated_at", "id"],
            unique=False,
        )
    op.create_table(
        "registry_versions",
        sa.Column("object_id", sa.String(length=200), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("definition", JSON, nullable=False),
        sa.Column("definition_hash", sa.String(length=64), nullable=False),
        sa.Column("notes", sa.Text(), nullable=True),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["object_id"],
            ["registry_objects.id"],
            name=op.f("fk_registry_versions_object_id_registry_objects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("object_id", "version", name=op.f("pk_registry_versions")),
    )
    op.create_table(
        "registry_aliases",
        sa.Column("object_id", sa.String(length=200), nullable=False),
        sa.Column("alias", sa.String(length=128), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["object_id"],
            ["registry_objects.id"],
            name=op.f("fk_registry_aliases_object_id_registry_objects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("object_id", "alias", name=op.f("pk_registry_aliases")),
    )


def downgrade() -> None:
    op.drop_table("registry_aliases")
    op.drop_table("registry_versions")
    with op.batch_alter_table("registry_objects", schema=None) as batch_op:
        batch_op.drop_index("ix_registry_objects_ws_kind_updated")
        batch_op.drop_index("ix_registry_objects_ws_kind_created")
        batch_op.drop_index(batch_op.f("ix_registry_objects_workspace_id"))
    op.drop_table("registry_objects")
