"""The reads of conversations: one, a page, its history and messages (as stored, not decoded),
and deleting one. `ConversationService` adds the requests that run turns."""

from __future__ import annotations

from typing import Any

from maestrale.conversations import entries as E
from maestrale.conversations.histories import Histories
from maestrale.conversations.repository import ConversationRepository
from maestrale.conversations.shapes import describe, listing_json
from maestrale.conversations.tables import Conversation
from maestrale.conversations.turns import ConversationNotFound
from maestrale.core.auth.principal import Tenant
from maestrale.core.pagination import PageParams


class ConversationReads:
    repo: ConversationRepository
    histories: Histories
    tenant: Tenant

    async def get_row(self, conversation_id: str) -> Conversation:
        row = await self.repo.get(conversation_id)
        if row is None:
            raise ConversationNotFound(
                f"conversation {conversation_id!r} not found", param="conversation_id"
            )
        return row

    async def get(self, conversation_id: str) -> dict[str, Any]:
        return describe(await self.get_row(conversation_id))

    async def list_page(self, page: PageParams, metadata: dict[str, str]) -> list[dict[str, Any]]:
        return [describe(row) for row in await self.repo.page(page, metadata)]

    async def history_json(self, conversation_id: str) -> bytes:
        """The ConversationHistory body: every entry, in order."""
        row = await self.get_row(conversation_id)
        texts = await self.repo.entry_texts(row)
        return listing_json("conversation.history", row.id, "entries", texts)

    async def messages_json(self, conversation_id: str) -> bytes:
        """The ConversationMessages body: the message entries, in order."""
        row = await self.get_row(conversation_id)
        texts = await self.repo.entry_texts(row, E.MESSAGE_TYPES)
        return listing_json("conversation.messages", row.id, "messages", texts)

    async def delete(self, conversation_id: str) -> None:
        row = await self.get_row(conversation_id)
        await self.repo.delete_conversation(row)
        # Its copy would otherwise hold memory until it ages out of the cache (a deletion that
        # rolls back only costs the next append one read of the whole history).
        self.histories.drop((self.tenant.workspace_id, row.id))
