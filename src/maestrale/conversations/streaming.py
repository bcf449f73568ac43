"""Streamed conversation responses: the operation runs in its own session (the request's has
ended when the stream starts) and its events are sent as they happen, each with an `event:`
line; a failure after the stream opened ends it with a `conversation.response.error` event."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from fastapi import Request
from fastapi.responses import StreamingResponse

from maestrale.conversations import entries as E
from maestrale.conversations.schemas import ConversationResponse
from maestrale.conversations.service import ConversationService
from maestrale.core.db import Database
from maestrale.core.errors import AppError
from maestrale.core.sse import sse_event, sse_response

log = logging.getLogger("maestrale.conversations")

Operation = Callable[
    [ConversationService, Callable[[dict[str, Any]], Awaitable[None]]],
    Awaitable[ConversationResponse],
]


def _frame(event: dict[str, Any]) -> bytes:
    return sse_event(event, str(event["type"]))


def _error(message: str, status: int) -> bytes:
    return _frame(
        {
            "type": "conversation.response.error", "created_at": E.now_text(),
            "message": message, "code": status,
        }
    )  # fmt: skip


def stream_operation(
    request: Request, service: ConversationService, operation: Operation
) -> StreamingResponse:
    db: Database = request.app.state.db
    queue: asyncio.Queue[bytes | None] = asyncio.Queue()

    async def emit(event: dict[str, Any]) -> None:
        await queue.put(_frame(event))

    async def produce() -> None:
        try:
            async with db.session() as session:
                response = await operation(service.in_session(session), emit)
            done = {
                "type": "conversation.response.done", "created_at": E.now_text(),
                "usage": response.usage.model_dump(),
            }  # fmt: skip
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
