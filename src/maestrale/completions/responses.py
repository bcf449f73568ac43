"""HTTP responses of completions: SSE chunk streams (JSON bodies: `gateway.responses`)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator

from fastapi import Request, Response

from maestrale.completions.shapes import chunk_body
from maestrale.core.errors import AppError
from maestrale.core.sse import DONE, sse_event, sse_response
from maestrale.engines.types import ChatChunk
from maestrale.gateway.call import Call
from maestrale.gateway.responses import OVERHEAD_HEADER, overhead_ms


async def stream_response(
    request: Request,
    call: Call[object],
    first: ChatChunk,
    rest: AsyncGenerator[ChatChunk, None],
    *,
    tier: str | None = None,
) -> Response:
    """The chunks of a started stream as server-sent events, ending with `data: [DONE]` (or with
    the error, when the stream fails after its first chunk); the usage names `tier` if given."""

    def body(chunk: ChatChunk) -> dict[str, object]:
        return chunk_body(call.completion_id, call.model, call.created, chunk, tier)

    async def frames() -> AsyncIterator[bytes]:
        try:
            yield sse_event(body(first))
            async for chunk in rest:
                yield sse_event(body(chunk))
        except AppError as exc:
            # Headers are gone: the failure travels in the stream, and no [DONE] follows.
            yield sse_event(exc.body())
            return
        finally:
            await rest.aclose()  # accounted now, also when the client went away (499)
        yield DONE

    response = sse_response(frames())
    response.headers[OVERHEAD_HEADER] = overhead_ms(request, call)
    return response
