"""library index: the chunks of library documents, their full-text index and embeddings

The chunk table keeps each chunk's text and its embedding (float32 bytes). Beside it, outside
the models (`maestrale.libraries.index.tables.unmodelled`): on SQLite an FTS5 table over the
text and a one-token form of the library id (a generated column, so that a search over a few
libraries intersects their chunks in the index rather than ranking every match and filtering
after), external content (the index only), kept in sync by triggers; on Postgres a generated
tsvector column with a GIN index, and pgvector enabled where the server has it (the vector
tables themselves are made per embedding dimension on first use). A later migration that
recreates the table on SQLite (Alembic's batch mode) must recreate these too.

Revision ID: 0015_library_index
Revises: 0014_libraries
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import maestrale.core.db

revision: str = "0015_library_index"
down_revision: str | None = "0014_libraries"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "library_chunks"
FTS = "library_chunks_fts"
FTS_VOCAB = "library_chunks_fts_vocab"
COLUMNS = "text, library_token"

SQLITE_TRIGGERS = [
    f"""CREATE TRIGGER library_chunks_fts_insert AFTER INSERT ON {TABLE} BEGIN
        INSERT INTO {FTS} (rowid, {COLUMNS}) VALUES (new.id, new.text, new.library_token);
    END""",
    f"""CREATE TRIGGER library_chunks_fts_delete AFTER DELETE ON {TABLE} BEGIN
        INSERT INTO {FTS} ({FTS}, rowid, {COLUMNS})
        VALUES ('delete', old.id, old.text, old.library_token);
    END""",
    f"""CREATE TRIGGER library_chunks_fts_update AFTER UPDATE OF text, library_id ON {TABLE}
    BEGIN
        INSERT INTO {FTS} ({FTS}, rowid, {COLUMNS})
        VALUES ('delete', old.id, old.text, old.library_token);
        INSERT INTO {FTS} (rowid, {COLUMNS}) VALUES (new.id, new.text, new.library_token);
    END""",
]

# pgvector where the server has it, tried once here (the index tries again on first use, in
# case it is installed later). A failure (no privilege) must not abort the migration.
PG_VECTOR = """
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector') THEN
        CREATE EXTENSION IF NOT EXISTS vector;
    END IF;
EXCEPTION WHEN OTHERS THEN
    RAISE WARNING 'pgvector could not be enabled: %', SQLERRM;
END
$$
"""


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    op.create_table(
        TABLE,
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("organization_id", sa.String(length=36), nullable=False),
        sa.Column("workspace_id", sa.String(length=36), nullable=False),
        sa.Column("library_id", sa.String(length=36), nullable=False),
        sa.Column("document_id", sa.String(length=36), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("page", sa.Integer(), nullable=False),
        sa.Column("start_offset", sa.Integer(), nullable=False),
        sa.Column("end_offset", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("dimension", sa.Integer(), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.Column("vector_indexed", sa.Boolean(), nullable=False),
        sa.Column("created_at", maestrale.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_library_chunks")),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_library_chunks_library", TABLE, ["library_id", "vector_indexed"])
    op.create_index("ix_library_chunks_document", TABLE, ["document_id"])
    if sqlite:
        # The library id as one token (a UUID's dashes would split it in five).
        op.execute(
            f"ALTER TABLE {TABLE} ADD COLUMN library_token TEXT "
            "GENERATED ALWAYS AS (replace(library_id, '-', '')) VIRTUAL"
        )
        op.execute(
            f"CREATE VIRTUAL TABLE {FTS} USING fts5({COLUMNS}, content='{TABLE}', "
            "content_rowid='id', tokenize='unicode61 remove_diacritics 2')"
        )
        # How many chunks hold each term: the search leaves out the commonest words.
        op.execute(f"CREATE VIRTUAL TABLE {FTS_VOCAB} USING fts5vocab({FTS}, col)")
        for trigger in SQLITE_TRIGGERS:
            op.execute(trigger)
        return
    op.execute(
        f"ALTER TABLE {TABLE} ADD COLUMN text_search tsvector "
        "GENERATED ALWAYS AS (to_tsvector('simple'::regconfig, text)) STORED"
    )
    op.execute(f"CREATE INDEX ix_library_chunks_text_search ON {TABLE} USING gin (text_search)")
    op.execute(PG_VECTOR)


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        for trigger in ("insert", "delete", "update"):
            op.execute(f"DROP TRIGGER IF EXISTS library_chunks_fts_{trigger}")
        op.execute(f"DROP TABLE IF EXISTS {FTS_VOCAB}")
        op.execute(f"DROP TABLE IF EXISTS {FTS}")
        names = [
            row[0]
            for row in bind.exec_driver_sql(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE "
                "'CREATE VIRTUAL TABLE%' AND name LIKE 'library\\_chunk\\_vectors\\_%' ESCAPE '\\'"
            )
        ]
    else:
        names = [
            row[0]
            for row in bind.exec_driver_sql(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
                "AND tablename LIKE 'library\\_chunk\\_vectors\\_%'"
            )
        ]
    for name in names:
        op.execute(f'DROP TABLE IF EXISTS "{name}"')
    op.drop_index("ix_library_chunks_document", table_name=TABLE)
    op.drop_index("ix_library_chunks_library", table_name=TABLE)
    op.drop_table(TABLE)
