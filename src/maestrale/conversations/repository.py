"""SQL of conversations and their entries, scoped to the caller's workspace (entries are reached
only through a conversation read from that workspace)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
import sqlalchemy as sa

from maestrale.conversations.tables import Conversation, ConversationEntry
from maestrale.core.pagination import PageParams
from maestrale.core.repository import WorkspaceRepository


class ConversationRepository(WorkspaceRepository[Conversation]):
    model = Conversation

    async def locked(self, conversation_id: str) -> Conversation | None:
        """The conversation, with its row write-locked until the transaction ends, so that two
        appends to it run one after the other (a no-op update takes the lock on every backend:
        a row lock on Postgres, the database write lock on SQLite)."""
        await self.session.execute(
            sa.update(Conversation)
            .where(
                Conversation.id == conversation_id,
                Conversation.workspace_id == self.tenant.workspace_id,
            )
            .values(entry_count=Conversation.entry_count)
            .execution_options(synchronize_session=False)
        )
        row = await self.get(conversation_id)
        if row is not None:
            await self.session.refresh(row)
        return row

    async def page(self, page: PageParams, metadata: Mapping[str, str]) -> list[Conversation]:
        stmt = self.select()
        for key, value in metadata.items():
            stmt = stmt.where(Conversation.meta[key].as_string() == value)
        stmt = stmt.order_by(Conversation.created_at.desc(), Conversation.id.desc())
        return await self.list(stmt.offset(page.offset).limit(page.limit))

    async def entries(
        self, conversation: Conversation, *, upto_seq: int | None = None
    ) -> list[dict[str, Any]]:
        # Read as text and parsed with orjson: the JSON type's per-row decoding is the bulk of
        # the cost of a long history.
        stmt = sa.select(sa.cast(ConversationEntry.body, sa.Text)).where(
            ConversationEntry.conversation_id == conversation.id
        )
        if upto_seq is not None:
            stmt = stmt.where(ConversationEntry.seq <= upto_seq)
        rows = await self.session.execute(stmt.order_by(ConversationEntry.seq))
        return [orjson.loads(text) for text in rows.scalars()]

    async def entry(self, conversation: Conversation, entry_id: str) -> ConversationEntry | None:
        row = await self.session.get(ConversationEntry, entry_id)
        if row is None or row.conversation_id != conversation.id:
            return None
        return row

    async def add_entries(self, conversation: Conversation, bodies: list[dict[str, Any]]) -> None:
        for body in bodies:
            self.session.add(
                ConversationEntry(
                    id=body["id"],
                    conversation_id=conversation.id,
                    seq=conversation.entry_count,
                    type=body["type"],
                    body=body,
                )
            )
            conversation.entry_count += 1
        await self.session.flush()

    async def delete_conversation(self, conversation: Conversation) -> None:
        await self.session.execute(
            sa.delete(ConversationEntry).where(ConversationEntry.conversation_id == conversation.id)
        )
        await self.delete(conversation)
