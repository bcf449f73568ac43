"""Server-sent events: `data: {json}` frames, optionally with an `event:` line."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
from fastapi.responses import StreamingResponse

DONE = b"data: [DONE]\n\n"
SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


def sse_event(data: Any, event: str | None = None) -> bytes:
    payload = orjson.dumps(data)
    if event is None:
        return b"data: " + payload + b"\n\n"
    return b"event: " + event.encode() + b"\ndata: " + payload + b"\n\n"


def sse_response(frames: AsyncIterator[bytes], status_code: int = 200) -> StreamingResponse:
    return StreamingResponse(
        frames, status_code=status_code, media_type="text/event-stream", headers=SSE_HEADERS
    )
