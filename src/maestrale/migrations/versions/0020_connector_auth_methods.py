"""connectors: the authentication methods their creator declared

mistralai 3.x creates and updates a connector with `auth_methods` (bearer, none, OAuth2 with
its headers); their public part is kept and listed in `supported_auth_methods`. Existing rows
have none: their methods are derived as before.

Revision ID: 0020_connector_auth_methods
Revises: 0019_service_accounts
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0020_connector_auth_methods"
down_revision: str | None = "0019_service_accounts"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("connectors", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "auth_methods",
                sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
                nullable=True,
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("connectors", schema=None) as batch_op:
        batch_op.drop_column("auth_methods")
