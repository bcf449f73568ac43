"""SQL of conversations and their entries, scoped to the caller's workspace (entries are reached
only through a conversation read from that workspace)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import orjson
import sqlalchemy as sa
from sqlalchemy.orm.attributes import set_committed_value

from maestrale.conversations.tables import Conversation, ConversationEntry
from maestrale.core.pagination import PageParams
from maestrale.core.repository import WorkspaceRepository

ENTRIES = cast(sa.Table, ConversationEntry.__table__)
CONVERSATIONS = cast(sa.Table, Conversation.__table__)


class ConversationRepository(WorkspaceRepository[Conversation]):
    model = Conversation

    async def locked(self, conversation_id: str) -> Conversation | None:
        """The conversation, with its row write-locked until the transaction ends, so that two
        appends to it run one after the other (a no-op update takes the lock on every backend:
        a row lock on Postgres, the database write lock on SQLite). The update returns the row
        (one round trip), overwriting any copy the session already holds."""
        stmt = (
            sa.update(Conversation)
            .where(
                Conversation.id == conversation_id,
                Conversation.workspace_id == self.tenant.workspace_id,
            )
            .values(entry_count=Conversation.entry_count)
            .returning(Conversation)
            .execution_options(synchronize_session=False, populate_existing=True)
        )
        row: Conversation | None = (await self.session.execute(stmt)).scalar_one_or_none()
        return row

    async def page(self, page: PageParams, metadata: Mapping[str, str]) -> list[Conversation]:
        stmt = self.select()
        for key, value in metadata.items():
            stmt = stmt.where(Conversation.meta[key].as_string() == value)
        stmt = stmt.order_by(Conversation.created_at.desc(), Conversation.id.desc())
        return await self.list(stmt.offset(page.offset).limit(page.limit))

    async def entries(
        self, conversation: Conversation, *, from_seq: int = 0, upto_seq: int | None = None
    ) -> list[dict[str, Any]]:
        # A Core read of the bodies as text, parsed with orjson: the JSON type's per-row
        # decoding and the ORM's row handling were the bulk of the cost of a long history.
        stmt = sa.select(sa.cast(ENTRIES.c.body, sa.Text)).where(
            ENTRIES.c.conversation_id == conversation.id
        )
        if from_seq:
            stmt = stmt.where(ENTRIES.c.seq >= from_seq)
        if upto_seq is not None:
            stmt = stmt.where(ENTRIES.c.seq <= upto_seq)
        connection = await self.session.connection()
        rows = await connection.execute(stmt.order_by(ENTRIES.c.seq))
        loads = orjson.loads
        return [loads(text) for text in rows.scalars().all()]

    async def entry_texts(
        self, conversation: Conversation, types: frozenset[str] | None = None
    ) -> list[str]:
        """The entries' stored JSON texts, in order (of the given `types` only), unparsed: the
        history routes splice them into their response as they are."""
        stmt = sa.select(sa.cast(ENTRIES.c.body, sa.Text)).where(
            ENTRIES.c.conversation_id == conversation.id
        )
        if types is not None:
            stmt = stmt.where(ENTRIES.c.type.in_(sorted(types)))
        connection = await self.session.connection()
        rows = await connection.execute(stmt.order_by(ENTRIES.c.seq))
        return list(rows.scalars().all())

    async def entry(self, conversation: Conversation, entry_id: str) -> ConversationEntry | None:
        row = await self.session.get(ConversationEntry, entry_id)
        if row is None or row.conversation_id != conversation.id:
            return None
        return row

    async def add_entries(
        self, conversation: Conversation, bodies: list[dict[str, Any]], **changes: Any
    ) -> None:
        """Insert the entries, numbered after the conversation's last, then write the
        conversation's new `entry_count` and the other column `changes`: two Core statements, no
        unit of work (the values are set on the object as loaded, so nothing is written twice).
        The caller holds the conversation's lock, or has just created it."""
        first = conversation.entry_count
        if bodies:
            rows = [
                {
                    "id": body["id"], "conversation_id": conversation.id,
                    "seq": first + position, "type": body["type"], "body": body,
                }
                for position, body in enumerate(bodies)
            ]  # fmt: skip
            await self.session.execute(sa.insert(ENTRIES), rows)
        values = {"entry_count": first + len(bodies), **changes}
        await self.session.execute(
            sa.update(CONVERSATIONS).where(CONVERSATIONS.c.id == conversation.id).values(values)
        )
        for key, value in values.items():
            set_committed_value(conversation, key, value)

    async def delete_conversation(self, conversation: Conversation) -> None:
        await self.session.execute(
            sa.delete(ConversationEntry).where(ConversationEntry.conversation_id == conversation.id)
        )
        await self.delete(conversation)
