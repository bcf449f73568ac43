"""the text of chat completion events' messages, full-text indexed for search

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-27 09:00:00

chat_completion_event_texts holds the text of each event's request and response messages (the
string contents and text chunks, one line apart; '' when there is none), written by triggers on
chat_completion_events so that every writer (the accounting recorder's batches, imports, the
bench generator's COPY) keeps it in sync. Its index: an FTS5 trigram table over it on SQLite
(external content, rowid = id), pg_trgm GIN indexes on Postgres; both answer substring, prefix,
suffix and case-insensitive matches (and regular expressions, on Postgres) from the index.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "chat_completion_event_texts"
FTS = "chat_completion_event_texts_fts"


def _sqlite_text(messages: str) -> str:
    """The message text of a JSON array column, in SQLite's JSON functions (the same text as
    Postgres' maestrale_messages_text); malformed JSON or non-objects give no text."""
    return f"""coalesce((
        SELECT group_concat(part, char(10)) FROM (
            SELECT CASE json_type(m.value, '$.content')
                WHEN 'text' THEN json_extract(m.value, '$.content')
                WHEN 'array' THEN (
                    SELECT group_concat(json_extract(c.value, '$.text'), char(10))
                    FROM json_each(m.value, '$.content') AS c
                    WHERE c.type = 'object' AND json_type(c.value, '$.text') = 'text'
                )
            END AS part
            FROM json_each(
                CASE WHEN json_valid({messages}) AND json_type({messages}) = 'array'
                THEN {messages} ELSE '[]' END
            ) AS m
            WHERE m.type = 'object'
        )
    ), '')"""


PG_TEXT_FUNCTION = r"""
CREATE OR REPLACE FUNCTION maestrale_messages_text(messages jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
SELECT coalesce(string_agg(part, E'\n' ORDER BY ord), '')
FROM (
    SELECT m.ord, CASE jsonb_typeof(m.msg -> 'content')
        WHEN 'string' THEN m.msg ->> 'content'
        WHEN 'array' THEN (
            SELECT string_agg(c.chunk ->> 'text', E'\n' ORDER BY c.ord)
            FROM jsonb_array_elements(m.msg -> 'content') WITH ORDINALITY AS c(chunk, ord)
            WHERE jsonb_typeof(c.chunk) = 'object' AND jsonb_typeof(c.chunk -> 'text') = 'string'
        )
    END AS part
    FROM jsonb_array_elements(
        CASE WHEN jsonb_typeof(messages) = 'array' THEN messages ELSE '[]'::jsonb END
    ) WITH ORDINALITY AS m(msg, ord)
    WHERE jsonb_typeof(m.msg) = 'object'
) AS parts
$$
"""

PG_TRIGGERS = [
    f"""CREATE FUNCTION maestrale_cce_texts_insert() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        INSERT INTO {TABLE} (event_id, request_text, response_text)
        SELECT id, maestrale_messages_text(request_messages),
               maestrale_messages_text(response_messages)
        FROM new_events;
        RETURN NULL;
    END $$""",
    # One statement-level trigger per batch: the recorder's multi-row inserts, COPY.
    """CREATE TRIGGER cce_texts_insert AFTER INSERT ON chat_completion_events
        REFERENCING NEW TABLE AS new_events
        FOR EACH STATEMENT EXECUTE FUNCTION maestrale_cce_texts_insert()""",
    f"""CREATE FUNCTION maestrale_cce_texts_update() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE {TABLE} SET request_text = maestrale_messages_text(NEW.request_messages),
                           response_text = maestrale_messages_text(NEW.response_messages)
        WHERE event_id = NEW.id;
        RETURN NULL;
    END $$""",
    """CREATE TRIGGER cce_texts_update AFTER UPDATE OF request_messages, response_messages
        ON chat_completion_events
        FOR EACH ROW EXECUTE FUNCTION maestrale_cce_texts_update()""",
]


def _sqlite_triggers() -> list[str]:
    values = f"{_sqlite_text('new.request_messages')}, {_sqlite_text('new.response_messages')}"
    return [
        f"""CREATE TRIGGER cce_texts_insert AFTER INSERT ON chat_completion_events BEGIN
            INSERT INTO {TABLE} (event_id, request_text, response_text)
            VALUES (new.id, {values});
        END""",
        f"""CREATE TRIGGER cce_texts_update
            AFTER UPDATE OF request_messages, response_messages ON chat_completion_events BEGIN
            UPDATE {TABLE} SET (request_text, response_text) = ({values})
            WHERE event_id = new.id;
        END""",
        # The FTS5 index of the texts (external content: the index only, no second copy).
        f"""CREATE TRIGGER cce_texts_fts_insert AFTER INSERT ON {TABLE} BEGIN
            INSERT INTO {FTS} (rowid, request_text, response_text)
            VALUES (new.id, new.request_text, new.response_text);
        END""",
        f"""CREATE TRIGGER cce_texts_fts_delete AFTER DELETE ON {TABLE} BEGIN
            INSERT INTO {FTS} ({FTS}, rowid, request_text, response_text)
            VALUES ('delete', old.id, old.request_text, old.response_text);
        END""",
        f"""CREATE TRIGGER cce_texts_fts_update AFTER UPDATE ON {TABLE} BEGIN
            INSERT INTO {FTS} ({FTS}, rowid, request_text, response_text)
            VALUES ('delete', old.id, old.request_text, old.response_text);
            INSERT INTO {FTS} (rowid, request_text, response_text)
            VALUES (new.id, new.request_text, new.response_text);
        END""",
    ]


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
        sa.Column("event_id", sa.String(length=36), nullable=False),
        sa.Column("request_text", sa.Text(), nullable=False),
        sa.Column("response_text", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["event_id"],
            ["chat_completion_events.id"],
            name=op.f("fk_chat_completion_event_texts_event_id_chat_completion_events"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_chat_completion_event_texts")),
        sa.UniqueConstraint("event_id", name=op.f("uq_chat_completion_event_texts_event_id")),
    )
    if sqlite:
        backfill = _sqlite_text("request_messages"), _sqlite_text("response_messages")
    else:
        op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        op.execute(PG_TEXT_FUNCTION)
        backfill = (
            "maestrale_messages_text(request_messages)",
            "maestrale_messages_text(response_messages)",
        )
    # Existing events, before the index is built (faster than maintaining it row by row).
    op.execute(
        f"INSERT INTO {TABLE} (event_id, request_text, response_text) "
        f"SELECT id, {backfill[0]}, {backfill[1]} FROM chat_completion_events "
        "ORDER BY created_at, id"
    )
    if sqlite:
        op.execute(
            f"CREATE VIRTUAL TABLE {FTS} USING fts5(request_text, response_text, "
            f"content='{TABLE}', content_rowid='id', tokenize='trigram')"
        )
        op.execute(f"INSERT INTO {FTS} ({FTS}) VALUES ('rebuild')")
        for trigger in _sqlite_triggers():
            op.execute(trigger)
    else:
        for column in ("request", "response"):
            op.execute(
                f"CREATE INDEX ix_cce_texts_{column}_trgm ON {TABLE} "
                f"USING gin ({column}_text gin_trgm_ops)"
            )
        for statement in PG_TRIGGERS:
            op.execute(statement)
        # The planner weighs the index against walking the newest events by these statistics.
        op.execute(f"ANALYZE {TABLE}")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for trigger in ("insert", "update", "fts_insert", "fts_delete", "fts_update"):
            op.execute(f"DROP TRIGGER IF EXISTS cce_texts_{trigger}")
        op.execute(f"DROP TABLE IF EXISTS {FTS}")
    else:
        op.execute("DROP TRIGGER IF EXISTS cce_texts_insert ON chat_completion_events")
        op.execute("DROP TRIGGER IF EXISTS cce_texts_update ON chat_completion_events")
        op.execute("DROP FUNCTION IF EXISTS maestrale_cce_texts_insert()")
        op.execute("DROP FUNCTION IF EXISTS maestrale_cce_texts_update()")
    op.drop_table(TABLE)
    if op.get_bind().dialect.name != "sqlite":
        op.execute("DROP FUNCTION IF EXISTS maestrale_messages_text(jsonb)")
