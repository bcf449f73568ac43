"""One realtime transcription session on an accepted WebSocket: `session.created`, then two
tasks — a reader that parses the client's messages and queues its audio (the queue is bounded:
a client that sends faster than the model transcribes stops being read), and a writer that runs
the engine's stream through the gateway and sends its events — until `transcription.done`, a
fatal error, or the client going away.

The call is accounted once, when the engine's stream ends (200), fails (its status) or is
abandoned (499), with the audio it transcribed. No database connection is held at any point.

Errors the session survives (a malformed or unknown message, an audio chunk over the size
limit, a `session.update` after the audio started) are answered with an `error` event and the
message is ignored; an engine failure, audio over the duration limit or a silent client (no
message for IDLE_SECONDS before `input_audio.end`) end the session after their `error` event,
closing with 1008 (the client's fault) or 1011.
"""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.websockets import WebSocket

from maestrale.audio.realtime.duplex import IDLE_SECONDS, DuplexSession, IdleClient, receive_frame
from maestrale.audio.realtime.messages import (
    Append,
    ClientMessage,
    EndAudio,
    FlushAudio,
    UpdateSession,
    error_body,
    parse,
    session_body,
)
from maestrale.audio.streaming import EventBodies, TranscriptionTally
from maestrale.core.errors import AppError, BadRequest
from maestrale.engines.protocols import RealtimeTranscriptionEngine
from maestrale.engines.transcription_types import (
    FLUSH,
    PcmFormat,
    RealtimeInput,
    RealtimeTranscriptionRequest,
    TranscriptionEvent,
)
from maestrale.gateway.call import Call
from maestrale.gateway.gateway import Gateway

# Chunks queued ahead of the engine (each at most 256 KiB): past this the reader waits.
QUEUE_CHUNKS = 64
DEFAULT_INTERVAL_SECONDS = 1.0


class RealtimeSession(DuplexSession):
    def __init__(
        self,
        websocket: WebSocket,
        gateway: Gateway,
        call: Call[RealtimeTranscriptionEngine],
        request_id: str,
        max_seconds: float,
    ) -> None:
        super().__init__(websocket)
        self.gateway = gateway
        self.call = call
        self.request_id = request_id
        self.delay_ms: int | None = None
        self.audio: asyncio.Queue[RealtimeInput] = asyncio.Queue(maxsize=QUEUE_CHUNKS)
        self.request = RealtimeTranscriptionRequest(
            model=call.upstream,
            audio_format=PcmFormat(),
            audio=self.audio,
            interval_seconds=DEFAULT_INTERVAL_SECONDS,
            max_seconds=max_seconds,
        )
        self.audio_started = False
        self.ended = False

    def _session(self) -> dict[str, Any]:
        return session_body(
            self.request_id, self.call.model, self.request.audio_format, self.delay_ms
        )

    async def _write(self) -> None:
        shaper = EventBodies(self.call.model, [])
        try:
            first, rest = await self.gateway.stream(
                self.call,
                lambda engine: engine.transcribe_realtime(self.request),
                TranscriptionTally(),
            )
            try:
                if first is not None:
                    await self._emit(shaper, first)
                async for event in rest:  # the result comes last
                    await self._emit(shaper, event)
            finally:
                await rest.aclose()
            await self._close(1000)
        except AppError as exc:  # mapped and accounted by the gateway
            await self._fail(exc)

    async def _emit(self, shaper: EventBodies, event: TranscriptionEvent) -> None:
        for body in shaper.of(event):
            await self._send(body)

    async def _read(self) -> None:
        # First: the writer sends nothing before audio, which only this task receives.
        await self._send({"type": "session.created", "session": self._session()})
        while True:
            timeout = None if self.ended else IDLE_SECONDS
            try:
                frame = await receive_frame(self.websocket, timeout)
            except TimeoutError:
                await self._fail(
                    IdleClient(f"no message for {IDLE_SECONDS:g} seconds before input_audio.end")
                )
                return
            if frame is None:
                return
            try:
                await self._handle(parse(frame))
            except AppError as exc:  # the message is ignored; the session goes on
                await self._send(error_body(exc))

    async def _handle(self, message: ClientMessage) -> None:
        if isinstance(message, UpdateSession):
            if self.audio_started:
                raise BadRequest(
                    "the session cannot change once audio was sent", code="session_locked"
                )
            update = message.update
            if update.audio_format is not None:
                self.request.audio_format = PcmFormat(
                    update.audio_format.encoding, update.audio_format.sample_rate
                )
            if "target_streaming_delay_ms" in update.model_fields_set:
                self.delay_ms = update.target_streaming_delay_ms
                self.request.interval_seconds = (
                    DEFAULT_INTERVAL_SECONDS if self.delay_ms is None else self.delay_ms / 1000
                )
            await self._send({"type": "session.updated", "session": self._session()})
            return
        if self.ended:
            raise BadRequest("the audio has ended (input_audio.end)", code="audio_ended")
        if isinstance(message, Append):
            if message.audio:
                self.audio_started = True
                await self.audio.put(message.audio)
        elif isinstance(message, FlushAudio):
            await self.audio.put(FLUSH)
        elif isinstance(message, EndAudio):
            self.ended = True
            await self.audio.put(None)
