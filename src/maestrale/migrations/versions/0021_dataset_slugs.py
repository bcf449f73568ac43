"""observability datasets: slugs, and the counts of a completed import

`Dataset.slug` is required in mistralai 3.x: a dataset's name made a URL-safe key, unique in its
workspace. Existing datasets get theirs from their names, oldest first (a taken slug gets the
first free `-2`, `-3`, ... suffix). An import task keeps its counts (`DatasetImportTask.result`
in 3.x) as JSON once it completes.

Revision ID: 0021_dataset_slugs
Revises: 0020_connector_auth_methods
"""

import re
import unicodedata
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0021_dataset_slugs"
down_revision: str | None = "0020_connector_auth_methods"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DATASETS = sa.table(
    "observability_datasets",
    sa.column("id", sa.String),
    sa.column("workspace_id", sa.String),
    sa.column("name", sa.String),
    sa.column("slug", sa.String),
    sa.column("created_at", sa.DateTime),
)


def _slug(name: str) -> str:
    # The rule of observability/datasets/slugs.py when this migration was written.
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")[:100].rstrip("-")
    return slug or "dataset"


def upgrade() -> None:
    with op.batch_alter_table("observability_datasets", schema=None) as batch_op:
        batch_op.add_column(sa.Column("slug", sa.String(length=120), nullable=True))
    bind = op.get_bind()
    rows = bind.execute(
        sa.select(DATASETS.c.id, DATASETS.c.workspace_id, DATASETS.c.name).order_by(
            DATASETS.c.created_at, DATASETS.c.id
        )
    ).all()
    taken: dict[str, set[str]] = {}
    for id_, workspace_id, name in rows:
        used = taken.setdefault(workspace_id, set())
        base = slug = _slug(name)
        n = 2
        while slug in used:
            slug, n = f"{base}-{n}", n + 1
        used.add(slug)
        bind.execute(DATASETS.update().where(DATASETS.c.id == id_).values(slug=slug))
    with op.batch_alter_table("observability_datasets", schema=None) as batch_op:
        batch_op.alter_column("slug", existing_type=sa.String(length=120), nullable=False)
        batch_op.create_unique_constraint(
            "uq_observability_datasets_ws_slug", ["workspace_id", "slug"]
        )
    with op.batch_alter_table("observability_dataset_tasks", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "result",
                sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
                nullable=True,
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("observability_dataset_tasks", schema=None) as batch_op:
        batch_op.drop_column("result")
    with op.batch_alter_table("observability_datasets", schema=None) as batch_op:
        batch_op.drop_constraint("uq_observability_datasets_ws_slug", type_="unique")
        batch_op.drop_column("slug")
