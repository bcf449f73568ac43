"""RAG deployments and their indexes, ingestion pipeline configurations

Revision ID: 0033_rag
Revises: 0032_search_indexes
"""

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy import Text
from sqlalchemy.dialects import postgresql

import maestrale.core.db

revision: str = "0033_rag"
down_revision: str | None = "0032_search_indexes"
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


def _times() -> list[Any]:
    return [
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("modified_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "rag_deployments",
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("type", sa.String(length=16), nullable=False),
        sa.Column("vespa_version", sa.String(length=64), nullable=False),
        sa.Column("query_url", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("creator_id", sa.String(length=200), nullable=False),
        sa.Column("document_count", sa.BigInteger(), nullable=False),
        *_times(),
        *_tenant("rag_deployments"),
        sa.UniqueConstraint("workspace_id", "name", name="uq_rag_deployments_ws_name"),
    )
    op.create_index(
        "ix_rag_deployments_ws_created",
        "rag_deployments",
        ["workspace_id", "created_at", "id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_rag_deployments_workspace_id"), "rag_deployments", ["workspace_id"], unique=False
    )
    op.create_table(
        "rag_deployment_indexes",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("deployment_id", sa.String(length=200), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("fields", _json(), nullable=False),
        sa.Column("sd", sa.Text(), nullable=False),
        sa.Column("embedding_dimensions", sa.Integer(), nullable=True),
        sa.Column("document_count", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(
            ["deployment_id"],
            ["rag_deployments.id"],
            name=op.f("fk_rag_deployment_indexes_deployment_id_rag_deployments"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rag_deployment_indexes")),
        sa.UniqueConstraint("deployment_id", "name", name="uq_rag_deployment_indexes_name"),
    )
    op.create_table(
        "rag_ingestion_pipelines",
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("author_id", sa.String(length=200), nullable=False),
        sa.Column("pipeline_composition", _json(), nullable=True),
        sa.Column("target_indexes", _json(), nullable=True),
        sa.Column("last_run_time", maestrale.core.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("last_run_chunks_count", sa.BigInteger(), nullable=False),
        sa.Column("total_chunks_count", sa.BigInteger(), nullable=False),
        *_times(),
        *_tenant("rag_ingestion_pipelines"),
        sa.UniqueConstraint("workspace_id", "name", name="uq_rag_ingestion_pipelines_ws_name"),
    )
    op.create_index(
        "ix_rag_ingestion_pipelines_ws_created",
        "rag_ingestion_pipelines",
        ["workspace_id", "created_at", "id"],
        unique=False,
    )
    op.create_index(
        op.f("ix_rag_ingestion_pipelines_workspace_id"),
        "rag_ingestion_pipelines",
        ["workspace_id"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_rag_ingestion_pipelines_workspace_id"), "rag_ingestion_pipelines")
    op.drop_index("ix_rag_ingestion_pipelines_ws_created", "rag_ingestion_pipelines")
    op.drop_table("rag_ingestion_pipelines")
    op.drop_table("rag_deployment_indexes")
    op.drop_index(op.f("ix_rag_deployments_workspace_id"), "rag_deployments")
    op.drop_index("ix_rag_deployments_ws_created", "rag_deployments")
    op.drop_table("rag_deployments")
