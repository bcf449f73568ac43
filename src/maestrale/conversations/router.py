"""The /v1/conversations group (beta): start, append and restart (plain, or streamed as
server-sent events with `stream: true`), read and delete conversations."""

from __future__ import annotations

from typing import Any

from fastapi import Request, Response

from maestrale.conversations.dependencies import Service
from maestrale.conversations.schemas import (
    ConversationAppend,
    ConversationHistory,
    ConversationMessages,
    ConversationResponse,
    ConversationRestart,
    ConversationStart,
)
from maestrale.conversations.streaming import respond
from maestrale.core.errors import MODEL_ERRORS, error_responses
from maestrale.core.metadata import metadata_filter
from maestrale.core.pagination import PageParams
from maestrale.core.responses import json_bytes
from maestrale.core.routing import domain_router
from maestrale.core.sse import streamed

router = domain_router(prefix="/conversations", tags=["conversations"])


# A turn calls the model; 409 is a conversation another turn holds or changed meanwhile.
STREAMED: dict[int | str, dict[str, Any]] = {
    200: streamed(
        ConversationResponse, "JSON, or with `stream: true` server-sent conversation events"
    ),
    **error_responses((*MODEL_ERRORS, 409)),
}


@router.post("", response_model=None, responses=STREAMED)
async def start_conversation(
    body: ConversationStart,
    request: Request,
    service: Service,
) -> Response:
    """Start a conversation on a model (`model`, with optional `instructions`, `tools`,
    `completion_args`, and beyond the SDK a stored `prompt` and `skills`) or on an agent
    (`agent_id`, optional `agent_version` number or alias; `prompt.variables` fill its prompt),
    and answer `inputs`. Function calls end the response as `function.call` entries; append
    their `function.result` entries to go on. `store: false` answers and keeps nothing."""
    return await respond(request, service, await service.prepare_start(body), body.stream)


@router.get("", response_model=list[dict[str, Any]])
async def list_conversations(
    service: Service,
    page: int = 0,
    page_size: int = 100,
    metadata: str | None = None,
) -> list[dict[str, Any]]:
    """The workspace's conversations, newest first, by page (counted from 0), optionally
    those whose metadata has the given string values (`metadata` as a JSON object)."""
    return await service.list_page(PageParams(page, page_size), metadata_filter(metadata))


@router.get("/{conversation_id}", response_model=dict[str, Any])
async def get_conversation(
    conversation_id: str,
    service: Service,
) -> dict[str, Any]:
    """A conversation: an agent conversation (`agent_id`, `agent_version`) or a model
    conversation (`model`, `instructions`, `tools`, `completion_args`)."""
    return await service.get(conversation_id)


@router.post("/{conversation_id}", response_model=None, responses=STREAMED)
async def append_to_conversation(
    conversation_id: str,
    body: ConversationAppend,
    request: Request,
    service: Service,
) -> Response:
    """Append `inputs` (a user message, or entries such as `function.result`) and run the model
    on the whole history; returns the new entries. Appends to one conversation run one at a
    time."""
    prepared = await service.prepare_append(conversation_id, body)
    return await respond(request, service, prepared, body.stream)


@router.delete("/{conversation_id}", status_code=204)
async def delete_conversation(
    conversation_id: str,
    service: Service,
) -> Response:
    """Delete a conversation and its entries."""
    await service.delete(conversation_id)
    return Response(status_code=204)


@router.get(
    "/{conversation_id}/history",
    response_model=None,
    responses={200: {"model": ConversationHistory, "description": "Successful Response"}},
)
async def conversation_history(
    conversation_id: str,
    service: Service,
) -> Response:
    """Every entry of the conversation, in order."""
    return json_bytes(await service.history_json(conversation_id))


@router.get(
    "/{conversation_id}/messages",
    response_model=None,
    responses={200: {"model": ConversationMessages, "description": "Successful Response"}},
)
async def conversation_messages(
    conversation_id: str,
    service: Service,
) -> Response:
    """The message entries of the conversation (`message.input`, `message.output`), in order."""
    return json_bytes(await service.messages_json(conversation_id))


@router.post("/{conversation_id}/restart", response_model=None, responses=STREAMED)
async def restart_conversation(
    conversation_id: str,
    body: ConversationRestart,
    request: Request,
    service: Service,
) -> Response:
    """A new conversation holding this one's entries up to `from_entry_id` (included), then
    `inputs`, answered by the same model or agent (at `agent_version` if given)."""
    prepared = await service.prepare_restart(conversation_id, body)
    return await respond(request, service, prepared, body.stream)
