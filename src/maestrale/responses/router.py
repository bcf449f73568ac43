"""The /v1/responses group: create a response (plain, streamed as server-sent events with
`stream: true`, or in the background with `background: true`), count a request's input tokens,
and read, list the input items of, cancel and delete stored responses."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import orjson
from fastapi import Depends, Path, Query, Request, Response

from maestrale.config.dependencies import AppSettings
from maestrale.conversations.dependencies import Service as Conversations
from maestrale.core.auth.dependencies import CurrentTenant
from maestrale.core.dependencies import Blobs, Db
from maestrale.core.errors import MODEL_ERRORS, BadRequest, error_responses
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.responses import json_bytes
from maestrale.core.routing import Work, domain_router
from maestrale.core.sse import streamed
from maestrale.responses.files import InputFiles
from maestrale.responses.schemas import ResponseCreate, ResponseInputs
from maestrale.responses.service import ResponsesService
from maestrale.responses.streaming import replay, respond
from maestrale.responses.tokens import count_input_tokens

router = domain_router(prefix="/responses", tags=["responses"])
ResponseId = Annotated[str, Path(max_length=200)]

STREAMED: dict[int | str, dict[str, Any]] = {
    200: streamed(dict, "The response as JSON, or with `stream: true` server-sent events"),
    **error_responses((*MODEL_ERRORS, 409)),
}


async def _service(
    work: Work,
    tenant: CurrentTenant,
    conversations: Conversations,
    db: Db,
    blobs: Blobs,
    settings: AppSettings,
) -> ResponsesService:
    files = InputFiles.of(settings, blobs)
    return ResponsesService(work, tenant, conversations, JobQueue(db), files)


Service = Annotated[ResponsesService, Depends(_service)]


def _json(value: Any) -> Response:
    return json_bytes(orjson.dumps(value))


@router.post("", response_model=None, responses=STREAMED)
async def create_response(
    body: ResponseCreate, request: Request, service: Service, db: Db
) -> Response:
    """Answer `input` (a string, or items: messages with text, image and file parts, function
    calls and their outputs) with `model` (or an agent, `agent_id`), its `instructions`,
    `tools` (function tools, and the tools this server runs) and settings. Function calls end
    the response as `function_call` items; send their `function_call_output` items with
    `previous_response_id` to go on. Stored unless `store` is false; `background: true` runs it
    on the job queue (poll it, or stream it, by id)."""
    if body.background:
        response = await service.enqueue(body)
        if not body.stream:
            return _json(response)
        await service.work.release()  # committed: the job and the stream may read it
        return replay(db, service, response["id"], -1)
    return await respond(request, service, await service.plan(body))


@router.post("/input_tokens", response_model=None)
async def count_response_input_tokens(body: ResponseInputs, service: Service) -> Response:
    """How many input tokens the request would use (`input`, `instructions`, `tools`, and the
    history of `previous_response_id`), counted by the model's own tokenizer."""
    count = await count_input_tokens(service, body)
    return _json({"object": "response.input_tokens", "input_tokens": count})


@router.get("/{response_id}", response_model=None)
async def get_response(
    response_id: ResponseId,
    service: Service,
    db: Db,
    stream: bool = False,
    starting_after: Annotated[int, Query(ge=-1, le=2**31 - 1)] = -1,
) -> Response:
    """A stored response. With `stream=true`, a background response's events after
    `starting_after` (its sequence numbers), then the rest as they come."""
    body = await service.get(response_id)
    if not stream:
        return _json(body)
    if not body.get("background"):
        raise BadRequest("only a background response can be streamed by id", param="stream")
    await service.work.release()
    return replay(db, service, response_id, starting_after)


@router.delete("/{response_id}", response_model=None)
async def delete_response(response_id: ResponseId, service: Service) -> Response:
    """Delete a stored response (and its conversation, unless later responses continue it)."""
    return _json(await service.delete(response_id))


@router.post("/{response_id}/cancel", response_model=None)
async def cancel_response(response_id: ResponseId, service: Service) -> Response:
    """Cancel a background response that is queued or running."""
    return _json(await service.cancel(response_id))


@router.get("/{response_id}/input_items", response_model=None)
async def list_input_items(
    response_id: ResponseId,
    service: Service,
    after: Annotated[str | None, Query(max_length=128)] = None,
    before: Annotated[str | None, Query(max_length=128)] = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    order: Literal["asc", "desc"] = "desc",
) -> Response:
    """The items the response's request added (its `input`), as a list page."""
    page = await service.input_items(
        response_id, after=after, before=before, limit=limit, order=order
    )
    return _json(page)
