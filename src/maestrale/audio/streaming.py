"""Streamed transcription: server-sent events with the SDK's event types, each with its
`event:` line — `transcription.language`, then per segment a `transcription.text.delta` and a
`transcription.segment`, and `transcription.done` with the whole response last. No `[DONE]`.

Failures before the first event (undecodable audio, unsupported language, a refused upstream)
are plain HTTP errors; a failure after it ends the stream with a `transcription.error` event
(the SDK tolerates unknown event types). The call is accounted when the stream ends, fails or
is abandoned by the client (status 499)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from fastapi import Request, Response

from maestrale.audio.service import report, response_body, segment_chunks
from maestrale.core.errors import AppError
from maestrale.core.sse import sse_event, sse_response
from maestrale.engines.protocols import TranscriptionEngine
from maestrale.engines.transcription_types import (
    LanguageDetected,
    Segment,
    TranscriptionEvent,
    TranscriptionRequest,
    TranscriptionResult,
)
from maestrale.gateway.call import Call, Report
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.responses import OVERHEAD_HEADER, overhead_ms


def _frame(data: dict[str, Any]) -> bytes:
    return sse_event(data, str(data["type"]))


class TranscriptionTally:
    """The accounting of a transcription stream: the whole result if it came, else the audio
    its segments covered (a stream abandoned or failed mid-way)."""

    __slots__ = ("heard", "result")

    def __init__(self) -> None:
        self.result: TranscriptionResult | None = None
        self.heard = 0.0

    def add(self, item: TranscriptionEvent) -> None:
        if isinstance(item, TranscriptionResult):
            self.result = item
        elif isinstance(item, Segment):
            self.heard = max(self.heard, item.end)

    def report(self) -> Report:
        return Report(audio_seconds=self.heard) if self.result is None else report(self.result)


class EventBodies:
    """Turns engine events into the bodies of the SDK's transcription events (also sent by the
    realtime WebSocket)."""

    def __init__(self, model: str, granularities: Sequence[str]) -> None:
        self.model = model
        self.granularities = granularities
        self.texts = 0

    def of(self, event: TranscriptionEvent) -> list[dict[str, Any]]:
        if isinstance(event, LanguageDetected):
            return [{"type": "transcription.language", "audio_language": event.language}]
        if isinstance(event, Segment):
            # Deltas joined are the final text: segments are separated by one space.
            text = event.text if self.texts == 0 else " " + event.text
            self.texts += 1
            bodies = [{"type": "transcription.text.delta", "text": text}]
            for chunk in segment_chunks(event, self.granularities):
                chunk = {**chunk, "type": "transcription.segment"}
                chunk.pop("score", None)
                bodies.append(chunk)
            return bodies
        body = response_body(self.model, event, self.granularities)
        return [{**body, "type": "transcription.done"}]


async def stream_transcription(
    request: Request,
    gateway: Gateway,
    call: Call[TranscriptionEngine],
    engine_request: TranscriptionRequest,
    granularities: Sequence[str],
) -> Response:
    """The transcription of `engine_request` as server-sent events (see the module's
    docstring); the gateway accounts for the call with its audio seconds."""
    first, rest = await gateway.stream(
        call, lambda engine: engine.transcribe_stream(engine_request), TranscriptionTally()
    )
    shaper = EventBodies(call.model, granularities)

    async def frames() -> AsyncIterator[bytes]:
        try:
            if first is not None:
                for body in shaper.of(first):
                    yield _frame(body)
            async for event in rest:
                for body in shaper.of(event):
                    yield _frame(body)
        except AppError as exc:  # the engine failed after the first event (mapped, accounted)
            yield _frame(
                {
                    "type": "transcription.error",
                    "message": exc.message,
                    "code": exc.code,
                    "status": exc.status_code,
                }
            )
        finally:
            await rest.aclose()  # accounted now, also when the client went away (499)

    response = sse_response(frames())
    response.headers[OVERHEAD_HEADER] = overhead_ms(request, call)
    return response
