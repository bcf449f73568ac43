"""Conversation responses, plain or streamed. A streamed request was prepared (checked) before
its stream opens; it runs in its own unit of work (the request's has ended when the stream
starts) and its events are sent as they happen, each with an `event:` line; a failure after the
stream opened ends it with a `conversation.response.error` event."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import Request, Response

from maestrale.conversations.entries import now_text
from maestrale.conversations.prepared import Prepared
from maestrale.conversations.service import ConversationService
from maestrale.core.app_services import app_services
from maestrale.core.db import Database
from maestrale.core.disconnect import cancel_on_disconnect
from maestrale.core.errors import AppError
from maestrale.core.responses import json_model
from maestrale.core.sse import Put, produced_response, sse_event

log = logging.getLogger("maestrale.conversations")


def _frame(event: dict[str, Any]) -> bytes:
    return sse_event(event, str(event["type"]))


def _error(message: str, status: int) -> bytes:
    return _frame(
        {
            "type": "conversation.response.error",
            "created_at": now_text(),
            "message": message,
            "code": status,
        }
    )


async def respond(
    request: Request, service: ConversationService, prepared: Prepared, stream: bool
) -> Response:
    """Run a prepared request: as JSON, or as a stream of conversation events. Either way a
    client that goes away cancels the run (its model and tool calls), and nothing is stored."""
    if not stream:
        return json_model(await cancel_on_disconnect(request, service.execute(prepared)))
    db: Database = app_services(request).db

    async def produce(put: Put) -> None:
        async def emit(event: dict[str, Any]) -> None:
            await put(_frame(event))

        try:
            async with db.transaction() as work:
                response = await service.in_work(work).execute(prepared, emit)
            done = {
                "type": "conversation.response.done",
                "created_at": now_text(),
                "usage": response.usage.model_dump(),
            }
            await put(_frame(done))
        except AppError as exc:
            await put(_error(exc.message, exc.status_code))
        except Exception:
            log.exception("streamed conversation failed")
            await put(_error("internal server error", 500))

    return produced_response(produce)
