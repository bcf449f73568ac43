"""The /v1/conversations group (beta): start, append and restart (plain, or streamed as
server-sent events with `stream: true`), read and delete conversations."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, Request, Response

from maestrale.agents.router import metadata_filter
from maestrale.completions.dependencies import CallerDep, GatewayDep
from maestrale.conversations.schemas import (
    ConversationAppend,
    ConversationHistory,
    ConversationMessages,
    ConversationResponse,
    ConversationRestart,
    ConversationStart,
)
from maestrale.conversations.service import ConversationService
from maestrale.conversations.streaming import stream_operation
from maestrale.core.auth.dependencies import CurrentTenant
from maestrale.core.pagination import PageParams
from maestrale.core.responses import json_bytes, json_model
from maestrale.core.routing import DbSession, domain_router
from maestrale.engines.dependencies import Engines

router = domain_router(prefix="/conversations", tags=["conversations"])


STREAMED: dict[int | str, dict[str, Any]] = {
    200: {
        "model": ConversationResponse,
        "description": "JSON, or with `stream: true` server-sent conversation events",
    }
}


async def _service(
    request: Request, session: DbSession, tenant: CurrentTenant, engines: Engines,
    gateway: GatewayDep, caller: CallerDep,
) -> ConversationService:  # fmt: skip
    return ConversationService(
        session, tenant, engines, gateway, caller, request.app.state.histories
    )


Service = Annotated[ConversationService, Depends(_service)]


@router.post("", response_model=None, responses=STREAMED)
async def start_conversation(
    body: ConversationStart,
    request: Request,
    service: Service,
) -> Response:
    """Start a conversation on a model (`model`, with optional `instructions`, `tools`,
    `completion_args`) or on an agent (`agent_id`, optional `agent_version` number or alias),
    and answer `inputs`. Function calls end the response as `function.call` entries; append
    their `function.result` entries to go on. `store: false` answers and keeps nothing."""
    if body.stream:
        await service.check_start(body)
        return stream_operation(request, service, lambda s, emit: s.start(body, emit))
    return json_model(await service.start(body))


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
    if body.stream:
        await service.check_append(conversation_id, body)
        return stream_operation(
            request, service,
            lambda s, emit: s.append(conversation_id, body, emit),
        )  # fmt: skip
    return json_model(await service.append(conversation_id, body))


@router.delete("/{conversation_id}", status_code=204)
async def delete_conversation(
    conversation_id: str,
    service: Service,
) -> Response:
    """Delete a conversation and its entries."""
    await service.delete(conversation_id)
    return Response(status_code=204)


@router.get(
    "/{conversation_id}/history", response_model=None,
    responses={200: {"model": ConversationHistory, "description": "Successful Response"}},
)  # fmt: skip
async def conversation_history(
    conversation_id: str,
    service: Service,
) -> Response:
    """Every entry of the conversation, in order."""
    return json_bytes(await service.history_json(conversation_id))


@router.get(
    "/{conversation_id}/messages", response_model=None,
    responses={200: {"model": ConversationMessages, "description": "Successful Response"}},
)  # fmt: skip
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
    if body.stream:
        await service.check_restart(conversation_id, body)
        return stream_operation(
            request, service,
            lambda s, emit: s.restart(conversation_id, body, emit),
        )  # fmt: skip
    return json_model(await service.restart(conversation_id, body))
