"""HTTP responses of completions: JSON with the overhead header, and SSE chunk streams."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import orjson
from fastapi import Request, Response

from maestrale.completions.gateway import Call
from maestrale.completions.shapes import chunk_body
from maestrale.core.errors import AppError
from maestrale.core.sse import DONE, sse_event, sse_response
from maestrale.engines.types import ChatChunk

OVERHEAD_HEADER = "x-maestrale-overhead-ms"


def overhead_ms(request: Request, call: Call) -> str:
    """Time Maestrale itself spent on the request so far: everything but the engine's time."""
    started = request.scope.get("state", {}).get("started", call.started)
    return f"{(time.perf_counter() - started - call.engine_seconds) * 1000:.3f}"


def json_response(request: Request, call: Call, body: dict[str, Any]) -> Response:
    payload = orjson.dumps(body)
    return Response(
        payload,
        media_type="application/json",
        headers={OVERHEAD_HEADER: overhead_ms(request, call)},
    )


async def stream_response(
    request: Request, call: Call, first: ChatChunk, rest: AsyncIterator[ChatChunk]
) -> Response:
    async def frames() -> AsyncIterator[bytes]:
        yield sse_event(chunk_body(call.completion_id, call.model, call.created, first))
        try:
            async for chunk in rest:
                yield sse_event(chunk_body(call.completion_id, call.model, call.created, chunk))
        except AppError as exc:
            # Headers are gone: the failure travels in the stream, and no [DONE] follows.
            yield sse_event(exc.body())
            return
        yield DONE

    response = sse_response(frames())
    response.headers[OVERHEAD_HEADER] = overhead_ms(request, call)
    return response
