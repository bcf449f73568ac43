"""registry references in their own column: the prompt and skills an agent version or a
conversation runs with

Revision ID: 0031_registry_refs
Revises: 0030_triggers
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0031_registry_refs"
down_revision: str | None = "0030_triggers"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("agent_versions", "conversations")


def upgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(
                sa.Column(
                    "registry_refs",
                    sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
                    nullable=True,
                )
            )


def downgrade() -> None:
    for table in reversed(TABLES):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column("registry_refs")
