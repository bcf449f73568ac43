"""observability indexes for search at scale and the similar-events vector scan

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26 04:20:00

Driven by EXPLAIN on bench/observability queries: a model filter with a created_at range, newest
first, seeks (workspace_id, model) and walks created_at backwards, stopping after one page
(the former (workspace_id, model) index had to sort every row of the model); the same for a
status code. The similar-events scan reads a workspace's vectors of one model in event_id order.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("chat_completion_events", schema=None) as batch_op:
        batch_op.drop_index("ix_cce_ws_model")
        batch_op.create_index(
            "ix_cce_ws_model_created", ["workspace_id", "model", "created_at", "id"], unique=False
        )
        batch_op.create_index(
            "ix_cce_ws_status_created",
            ["workspace_id", "status_code", "created_at", "id"],
            unique=False,
        )
    with op.batch_alter_table("observability_event_embeddings", schema=None) as batch_op:
        batch_op.create_index(
            "ix_obs_event_embeddings_scan", ["workspace_id", "model", "event_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("observability_event_embeddings", schema=None) as batch_op:
        batch_op.drop_index("ix_obs_event_embeddings_scan")
    with op.batch_alter_table("chat_completion_events", schema=None) as batch_op:
        batch_op.drop_index("ix_cce_ws_status_created")
        batch_op.drop_index("ix_cce_ws_model_created")
        batch_op.create_index("ix_cce_ws_model", ["workspace_id", "model"], unique=False)
