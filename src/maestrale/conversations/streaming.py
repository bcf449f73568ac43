"""Conversation responses, plain or streamed. A streamed request was prepared (checked) before
its stream opens; it runs in its own unit of work (the request's has ended when the stream
starts) and its events are sent as they happen, each with an `event:` line; a failure after the
stream opened ends it with a `conversation.response.error` event."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi import Request, Response

from maestrale.conversations.entries import now_text
from maestrale.conversations.service import ConversationService, Prepared
from maestrale.core.app_services import app_services
from maestrale.core.db import Database
from maestrale.core.disconnect import cancel_on_disconnect
from maestrale.core.errors import AppError
from maestrale.core.responses import json_model
from maestrale.core.sse import sse_event, sse_response

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
    queue: asyncio.Queue[bytes | None] = asyncio.Queue()

    async def emit(event: dict[str, Any]) -> None:
        await queue.put(_frame(event))

    async def produce() -> None:
        try:
            async with db.transaction() as work:
                response = await service.in_work(work).execute(prepared, emit)
            done = {
                "type": "conversation.response.done",
                "created_at": now_text(),
                "usage": response.usage.model_dump(),
            }
            await queue.put(_frame(done))
        except AppError as exc:
            await queue.put(_error(exc.message, exc.status_code))
        except Exception:
            log.exception("streamed conversation failed")
            await queue.put(_error("internal server error", 500))
        finally:
            await queue.put(None)

    async def frames() -> AsyncIterator[bytes]:
        task = asyncio.create_task(produce())
        try:
            while (frame := await queue.get()) is not None:
                yield frame
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    return sse_response(frames())
