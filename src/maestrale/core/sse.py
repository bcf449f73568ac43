"""Server-sent events: `data: {json}` frames, optionally with an `event:` line."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
from fastapi.responses import StreamingResponse

DONE = b"data: [DONE]\n\n"
SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}

# One event of a stream, as `/openapi.json` declares it (OpenAPI's reading of an event stream:
# each event an object of its fields); `data` is a JSON document, or `[DONE]` at the end.
SSE_EVENT: dict[str, Any] = {
    "type": "object",
    "required": ["data"],
    "properties": {"event": {"type": "string"}, "data": {"type": "string"}},
}


def streamed(model: type[Any], description: str) -> dict[str, Any]:
    """The `responses[200]` of a route that answers `model` as JSON, or server-sent events."""
    return {
        "model": model,
        "description": description,
        "content": {"text/event-stream": {"schema": SSE_EVENT}},
    }


def sse_event(data: Any, event: str | None = None) -> bytes:
    payload = orjson.dumps(data)
    if event is None:
        return b"data: " + payload + b"\n\n"
    return b"event: " + event.encode() + b"\ndata: " + payload + b"\n\n"


def sse_response(frames: AsyncIterator[bytes], status_code: int = 200) -> StreamingResponse:
    return StreamingResponse(
        frames, status_code=status_code, media_type="text/event-stream", headers=SSE_HEADERS
    )


Put = Callable[[bytes], Awaitable[None]]


def produced_response(produce: Callable[[Put], Awaitable[None]]) -> StreamingResponse:
    """An event stream of the frames `produce(put)` puts, sent as they come: `produce` runs in a
    task of its own, so that a slow client never holds up the run; a client that goes away
    cancels it."""
    queue: asyncio.Queue[bytes | None] = asyncio.Queue()

    async def run() -> None:
        try:
            await produce(queue.put)
        finally:
            await queue.put(None)

    async def frames() -> AsyncIterator[bytes]:
        task = asyncio.create_task(run())
        try:
            while (frame := await queue.get()) is not None:
                yield frame
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    return sse_response(frames())
