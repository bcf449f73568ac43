"""Streamed transcription: server-sent events with the SDK's event types, each with its
`event:` line — `transcription.language`, then per segment a `transcription.text.delta` and a
`transcription.segment`, and `transcription.done` with the whole response last. No `[DONE]`.

Failures before the first event (undecodable audio, unsupported language, a refused upstream)
are plain HTTP errors; a failure after it ends the stream with a `transcription.error` event
(the SDK tolerates unknown event types). The call is accounted when the stream ends, fails or
is abandoned by the client (status 499)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

from fastapi import Request, Response

from maestrale.audio.service import response_body, segment_chunks
from maestrale.completions.gateway import CLIENT_CLOSED, Call, Gateway, engine_failure
from maestrale.completions.responses import OVERHEAD_HEADER, overhead_ms
from maestrale.core.sse import sse_event, sse_response
from maestrale.engines.transcription_types import (
    LanguageDetected,
    Segment,
    TranscriptionEvent,
    TranscriptionRequest,
    TranscriptionResult,
)
from maestrale.engines.types import EngineError, Usage


def _frame(data: dict[str, Any]) -> bytes:
    return sse_event(data, str(data["type"]))


class _Frames:
    """Turns engine events into SSE frames, remembering what the accounting needs."""

    def __init__(self, model: str, granularities: Sequence[str]) -> None:
        self.model = model
        self.granularities = granularities
        self.texts = 0
        self.result: TranscriptionResult | None = None

    def of(self, event: TranscriptionEvent) -> list[bytes]:
        if isinstance(event, LanguageDetected):
            return [_frame({"type": "transcription.language", "audio_language": event.language})]
        if isinstance(event, Segment):
            # Deltas joined are the final text: segments are separated by one space.
            text = event.text if self.texts == 0 else " " + event.text
            self.texts += 1
            frames = [_frame({"type": "transcription.text.delta", "text": text})]
            for chunk in segment_chunks(event, self.granularities):
                chunk = {**chunk, "type": "transcription.segment"}
                chunk.pop("score", None)
                frames.append(_frame(chunk))
            return frames
        self.result = event
        body = response_body(self.model, event, self.granularities)
        return [_frame({**body, "type": "transcription.done"})]


async def stream_transcription(
    request: Request,
    gateway: Gateway,
    call: Call,
    engine_request: TranscriptionRequest,
    granularities: Sequence[str],
) -> Response:
    events: AsyncIterator[TranscriptionEvent] = call.engine.transcribe_stream(engine_request)
    started = time.perf_counter()
    try:
        first = await anext(events)
    except StopAsyncIteration:
        first = None
    except EngineError as exc:
        call.engine_seconds = time.perf_counter() - started
        await gateway.finish(call, None, None, None, None, exc.status)
        raise engine_failure(exc, call.model) from exc
    shaper = _Frames(call.model, granularities)

    async def frames() -> AsyncIterator[bytes]:
        status = CLIENT_CLOSED  # unless the stream reaches its end or fails
        try:
            if first is not None:
                for frame in shaper.of(first):
                    yield frame
                async for event in events:
                    for frame in shaper.of(event):
                        yield frame
            status = 200
        except EngineError as exc:
            status = exc.status
            error = engine_failure(exc, call.model)
            yield _frame(
                {"type": "transcription.error", "message": error.message,
                 "code": error.code, "status": error.status_code}
            )  # fmt: skip
        finally:
            call.engine_seconds = time.perf_counter() - started
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()
            result = shaper.result
            await gateway.finish(
                call, None, None, None,
                result.usage if result else Usage(), status,
                audio_seconds=result.audio_seconds if result else 0.0,
            )  # fmt: skip

    response = sse_response(frames())
    response.headers[OVERHEAD_HEADER] = overhead_ms(request, call)
    return response
