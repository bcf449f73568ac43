"""The answers of /v1/audio/speech, from the engine's PCM chunks encoded as they come:

- JSON `{"audio_data": base64}` (the platform's plain answer);
- server-sent events (`stream` true): per encoded piece `speech.audio.delta` {audio_data}, then
  `speech.audio.done` {usage}; a failure after the first event ends the stream with an `error`
  event (the SDK tolerates unknown event types). OpenAI's `stream_format: "sse"` gets its own
  field names (`audio`; usage as input/output tokens);
- raw audio bytes (OpenAI's `audio.speech.create`), streamed as they are encoded.

Failures before the first chunk are plain HTTP errors. The call is accounted when the stream
ends, fails or is abandoned by the client (499)."""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from fastapi import Request, Response
from fastapi.responses import StreamingResponse

from maestrale.audio.speech.formats import CONTENT_TYPES, Encoder
from maestrale.audio.speech.service import SpeechTally
from maestrale.core.errors import AppError
from maestrale.core.sse import SSE_HEADERS, sse_event, sse_response
from maestrale.engines.speech_types import SpeechChunk
from maestrale.gateway.call import Call
from maestrale.gateway.responses import OVERHEAD_HEADER, json_response, overhead_ms

log = logging.getLogger("maestrale.audio.speech")


async def encoded(
    first: SpeechChunk | None, rest: AsyncGenerator[SpeechChunk, None], encoder: Encoder
) -> AsyncGenerator[bytes, None]:
    """The encoded bytes, a piece per chunk that produced any, then the encoder's tail. The
    engine's stream is closed (and the call accounted) however this ends."""
    try:
        if first is not None and (data := await asyncio.to_thread(encoder.feed, first)):
            yield data
        async for chunk in rest:
            if data := await asyncio.to_thread(encoder.feed, chunk):
                yield data
        if tail := await asyncio.to_thread(encoder.finish):
            yield tail
    finally:
        try:
            await rest.aclose()
        finally:
            encoder.close()


async def json_answer(
    request: Request, call: Call[object], pieces: AsyncGenerator[bytes, None]
) -> Response:
    audio = b"".join([piece async for piece in pieces])
    return json_response(request, call, {"audio_data": base64.b64encode(audio).decode()})


def raw_answer(
    request: Request, call: Call[object], pieces: AsyncGenerator[bytes, None], format_name: str
) -> Response:
    async def body() -> AsyncIterator[bytes]:
        try:
            async for piece in pieces:
                yield piece
        except AppError as exc:  # after the first bytes: the status is sent, the audio stops
            log.warning("speech stream of %s failed: %s", call.model, exc.message)
        finally:
            await pieces.aclose()  # accounted now, also when the client went away (499)

    return StreamingResponse(
        body(),
        media_type=CONTENT_TYPES[format_name],
        headers={**SSE_HEADERS, OVERHEAD_HEADER: overhead_ms(request, call)},
    )


def _frame(data: dict[str, Any]) -> bytes:
    return sse_event(data, str(data["type"]))


def sse_answer(
    request: Request,
    call: Call[object],
    pieces: AsyncGenerator[bytes, None],
    tally: SpeechTally,
    *,
    openai: bool = False,
) -> Response:
    field = "audio" if openai else "audio_data"

    async def frames() -> AsyncIterator[bytes]:
        try:
            async for piece in pieces:
                data = base64.b64encode(piece).decode()
                yield _frame({"type": "speech.audio.delta", field: data})
        except AppError as exc:  # the engine failed after the first event (mapped, accounted)
            yield _frame(
                {
                    "type": "error",
                    "error": {
                        "message": exc.message,
                        "code": exc.status_code,
                        "error_code": exc.code,
                    },
                }
            )
            return
        finally:
            await pieces.aclose()  # accounted now, also when the client went away (499)
        usage = tally.usage_body()
        if openai:
            usage = {
                "input_tokens": tally.characters,
                "output_tokens": 0,
                "total_tokens": tally.characters,
            }
        yield _frame({"type": "speech.audio.done", "usage": usage})

    response = sse_response(frames())
    response.headers[OVERHEAD_HEADER] = overhead_ms(request, call)
    return response
