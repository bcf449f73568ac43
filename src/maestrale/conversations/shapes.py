"""Wire shapes of conversation reads: a conversation, and the history bodies spliced from the
entries as stored."""

from __future__ import annotations

from typing import Any

import orjson

from maestrale.conversations.tables import Conversation


def describe(row: Conversation) -> dict[str, Any]:
    """The AgentConversation or ModelConversation shape (told apart by `agent_id` / `model`)."""
    common = {
        "object": "conversation",
        "id": row.id,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
        "name": row.name,
        "description": row.description,
        "metadata": row.meta,
    }
    if row.agent_id is not None:
        return {**common, "agent_id": row.agent_id, "agent_version": row.agent_version}
    return {
        **common,
        "model": row.model,
        "instructions": row.instructions,
        "tools": row.tools,
        "completion_args": row.completion_args,
        "guardrails": row.guardrails,
    }


def listing_json(kind: str, conversation_id: str, field: str, texts: list[str]) -> bytes:
    """A history body, its entries spliced in as stored (each a JSON object written by this
    server): parsing and re-encoding thousands of entries was most of the cost of a read."""
    head = orjson.dumps({"object": kind, "conversation_id": conversation_id})
    return b"".join((head[:-1], b',"', field.encode(), b'":[', ",".join(texts).encode(), b"]}"))
