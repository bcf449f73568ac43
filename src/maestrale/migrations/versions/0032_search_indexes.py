"""context search indexes: indexes, their documents and summary fields; the attributes of a
context chunk on the libraries' chunks

Revision ID: 0032_search_indexes
Revises: 0031_registry_refs
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy import Text
from sqlalchemy.dialects import postgresql

import maestrale.core.db

revision: str = "0032_search_indexes"
down_revision: str | None = "0031_registry_refs"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> Any:
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), "postgresql")


def _tenant(table: str) -> list[Any]:
    return [
        sa.Column("id", sa.String(length=200), nullable=False),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organizations.id"],
            name=op.f(f"fk_{table}_organization_id_organizations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["workspace_id"],
            ["workspaces.id"],
            name=op.f(f"fk_{table}_workspace_id_workspaces"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{table}")),
    ]


def upgrade() -> None:
    op.create_table(
        "search_indexes",
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("creator_id", sa.String(length=200), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("status_message", sa.Text(), nullable=True),
        sa.Column("schema", _json(), nullable=False),
        sa.Column("pending_schema", _json(), nullable=True),
        sa.Column("config", _json(), nullable=False),
        sa.Column("embedding_model", sa.String(length=200), nullable=True),
        sa.Column("dimension", sa.Integer(), nullable=False),
        sa.Column("document_count", sa.Integer(), nullable=False),
        sa.Column("chunk_count", sa.Integer(), nullable=False),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("modified_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        *_tenant("search_indexes"),
        sa.UniqueConstraint("workspace_id", "name", name="uq_search_indexes_ws_name"),
    )
    op.create_index(
        "ix_search_indexes_ws_created",
        "search_indexes",
        ["workspace_id", "created_at", "id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_search_indexes_workspace_id"), "search_indexes", ["workspace_id"], unique=False
    )
    op.create_table(
        "search_index_documents",
        sa.Column("index_id", sa.String(length=200), nullable=False),
        sa.Column("source_id", sa.String(length=512), nullable=False),
        sa.Column("fields", _json(), nullable=False),
        sa.Column("chunk_count", sa.Integer(), nullable=False),
        sa.Column("length", sa.Integer(), nullable=False),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("modified_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        *_tenant("search_index_documents"),
        sa.ForeignKeyConstraint(
            ["index_id"],
            ["search_indexes.id"],
            name=op.f("fk_search_index_documents_index_id_search_indexes"),
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint("index_id", "source_id", name="uq_search_index_documents_source"),
    )
    op.create_index(
        op.f("ix_search_index_documents_workspace_id"),
        "search_index_documents",
        ["workspace_id"],
        unique=False,
    )
    op.create_table(
        "search_index_summaries",
        sa.Column("index_id", sa.String(length=200), nullable=False),
        sa.Column("language", sa.String(length=8), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=24), nullable=True),
        sa.Column("translated", sa.Boolean(), nullable=False),
        sa.Column("generation", sa.String(length=16), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("job_id", sa.String(length=64), nullable=True),
        sa.Column("updated_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["index_id"],
            ["search_indexes.id"],
            name=op.f("fk_search_index_summaries_index_id_search_indexes"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("index_id", "language", name=op.f("pk_search_index_summaries")),
    )
    with op.batch_alter_table("library_chunks", schema=None) as batch_op:
        batch_op.add_column(sa.Column("attributes", _json(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("library_chunks", schema=None) as batch_op:
        batch_op.drop_column("attributes")
    op.drop_table("search_index_summaries")
    op.drop_index(op.f("ix_search_index_documents_workspace_id"), "search_index_documents")
    op.drop_table("search_index_documents")
    op.drop_index(op.f("ix_search_indexes_workspace_id"), "search_indexes")
    op.drop_index("ix_search_indexes_ws_created", "search_indexes")
    op.drop_table("search_indexes")
