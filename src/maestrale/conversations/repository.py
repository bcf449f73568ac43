"""SQL of conversations and their entries, scoped to the caller's workspace (entries are reached
only through a conversation read from that workspace)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, NamedTuple, cast

import orjson
import sqlalchemy as sa
from sqlalchemy.engine import CursorResult

from maestrale.conversations.tables import Conversation, ConversationEntry
from maestrale.core.pagination import PageParams
from maestrale.core.repository import WorkspaceRepository

ENTRIES = cast(sa.Table, ConversationEntry.__table__)
CONVERSATIONS = cast(sa.Table, Conversation.__table__)


class TurnRow(NamedTuple):
    """What an append needs of its conversation once it holds the turn."""

    id: str
    entry_count: int
    agent_id: str | None


class ConversationRepository(WorkspaceRepository[Conversation]):
    model = Conversation

    async def claim_turn(
        self, conversation_id: str, owner: str, now: datetime, expires_at: datetime
    ) -> TurnRow | None:
        """Take the conversation's turn for `owner` until `expires_at`, if no other append holds
        it (or its lease ran out): the conversation's entry count and agent as they are now,
        else None (busy, or not found). One short statement: nothing stays locked once it has
        committed."""
        c = CONVERSATIONS.c
        stmt = (
            sa.update(CONVERSATIONS)
            .where(
                c.id == conversation_id,
                c.workspace_id == self.tenant.workspace_id,
                sa.or_(c.turn_owner.is_(None), c.turn_expires_at < now),
            )
            .values(turn_owner=owner, turn_expires_at=expires_at)
            .returning(c.id, c.entry_count, c.agent_id)
        )
        row = (await self.session.execute(stmt)).first()
        return None if row is None else TurnRow(*row)

    async def renew_turn(self, conversation_id: str, owner: str, expires_at: datetime) -> bool:
        """Extend the turn `owner` holds; False once it has lost it."""
        result = await self.session.execute(
            sa.update(CONVERSATIONS)
            .where(CONVERSATIONS.c.id == conversation_id, CONVERSATIONS.c.turn_owner == owner)
            .values(turn_expires_at=expires_at)
        )
        return bool(cast(CursorResult[Any], result).rowcount)

    async def release_turn(self, conversation_id: str, owner: str) -> None:
        await self.session.execute(
            sa.update(CONVERSATIONS)
            .where(CONVERSATIONS.c.id == conversation_id, CONVERSATIONS.c.turn_owner == owner)
            .values(turn_owner=None, turn_expires_at=None)
        )

    async def page(self, page: PageParams, metadata: Mapping[str, str]) -> list[Conversation]:
        stmt = self.select()
        for key, value in metadata.items():
            stmt = stmt.where(Conversation.meta[key].as_string() == value)
        stmt = stmt.order_by(Conversation.created_at.desc(), Conversation.id.desc())
        return await self.list(stmt.offset(page.offset).limit(page.limit))

    async def entries(
        self,
        conversation: Conversation | TurnRow,
        *,
        from_seq: int = 0,
        upto_seq: int | None = None,
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
        self,
        conversation_id: str,
        first: int,
        bodies: list[dict[str, Any]],
        *,
        owner: str | None = None,
        **changes: Any,
    ) -> bool:
        """Write the entries numbered from `first`, with the conversation's new `entry_count`
        and the other column `changes`, if the conversation still has `first` entries and (with
        `owner`) that turn still holds, which it then gives back. False, and nothing written,
        when either moved: the conditional update runs first, so no entry is ever numbered
        twice. Core statements, no unit of work."""
        stmt = sa.update(CONVERSATIONS).where(
            CONVERSATIONS.c.id == conversation_id, CONVERSATIONS.c.entry_count == first
        )
        values: dict[str, Any] = {"entry_count": first + len(bodies), **changes}
        if owner is not None:
            stmt = stmt.where(CONVERSATIONS.c.turn_owner == owner)
            values.update(turn_owner=None, turn_expires_at=None)
        result = await self.session.execute(stmt.values(values))
        if not cast(CursorResult[Any], result).rowcount:
            return False
        await self._insert_entries(conversation_id, first, bodies)
        return True

    async def create(self, row: Conversation, bodies: list[dict[str, Any]], **changes: Any) -> None:
        """A new conversation (`row`, with the column `changes`) holding `bodies` as its first
        entries. Core statements: the ORM's unit of work and the conditional update of an
        append cost as much again."""
        columns = {
            a.columns[0].name: getattr(row, a.key) for a in sa.inspect(Conversation).column_attrs
        }
        values = {name: value for name, value in columns.items() if value is not None}
        values.update(
            organization_id=self.tenant.organization_id,
            workspace_id=self.tenant.workspace_id,
            entry_count=len(bodies),
            **changes,
        )
        await self.session.execute(sa.insert(CONVERSATIONS).values(values))
        await self._insert_entries(row.id, 0, bodies)

    async def _insert_entries(
        self, conversation_id: str, first: int, bodies: list[dict[str, Any]]
    ) -> None:
        if bodies:
            rows = [
                {
                    "id": body["id"],
                    "conversation_id": conversation_id,
                    "seq": first + position,
                    "type": body["type"],
                    "body": body,
                }
                for position, body in enumerate(bodies)
            ]
            await self.session.execute(sa.insert(ENTRIES), rows)

    async def rewrite_entries(self, conversation_id: str, bodies: list[dict[str, Any]]) -> None:
        """Store new bodies of entries of the conversation (a call's confirmation status, once
        answered), by id."""
        for body in bodies:
            await self.session.execute(
                sa.update(ENTRIES)
                .where(ENTRIES.c.conversation_id == conversation_id, ENTRIES.c.id == body["id"])
                .values(body=body)
            )

    async def delete_conversation(self, conversation: Conversation) -> None:
        await self.session.execute(
            sa.delete(ConversationEntry).where(ConversationEntry.conversation_id == conversation.id)
        )
        await self.delete(conversation)
