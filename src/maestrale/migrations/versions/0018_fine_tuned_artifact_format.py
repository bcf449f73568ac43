"""fine-tuned models: the format of their artifact

Which engine serves a fine-tuned model's artifact, and how, was read off its path (a file
ending in `.gguf`: weights the llama.cpp engine loads in place of the base's; any other
artifact of a classifier: its head). The format is now a column, written by the job that stores
the artifact; existing rows get it from that old rule.

Revision ID: 0018_fine_tuned_artifact_format
Revises: 0017_console_sessions
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018_fine_tuned_artifact_format"
down_revision: str | None = "0017_console_sessions"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

MODELS = sa.table(
    "fine_tuned_models",
    sa.column("model_type", sa.String),
    sa.column("artifact", sa.String),
    sa.column("artifact_format", sa.String),
)


def upgrade() -> None:
    with op.batch_alter_table("fine_tuned_models", schema=None) as batch_op:
        batch_op.add_column(sa.Column("artifact_format", sa.String(length=16), nullable=True))
    artifact = MODELS.c.artifact
    # The last five characters, on both dialects (`Path.suffix` was case-sensitive: so is `=`).
    gguf = sa.func.substr(artifact, sa.func.length(artifact) - 4) == ".gguf"
    op.execute(
        MODELS.update()
        .where(artifact.is_not(None))
        .values(
            artifact_format=sa.case(
                (gguf, "gguf"), (MODELS.c.model_type == "classifier", "classifier"), else_=None
            )
        )
    )


def downgrade() -> None:
    with op.batch_alter_table("fine_tuned_models", schema=None) as batch_op:
        batch_op.drop_column("artifact_format")
