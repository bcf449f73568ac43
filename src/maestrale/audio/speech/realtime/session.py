"""One realtime speech session on an accepted WebSocket: `session.created`, then two tasks — a
reader that parses the client's messages and queues the text's complete sentences (the queue is
bounded: a client that writes faster than the engine speaks stops being read), and a writer
that runs the engine through the gateway, one synthesis per sentence, and sends the encoded
audio — until `speech.audio.done`, a fatal error, or the client going away.

A client that stops reading cannot make the server buffer without bound: each send waits at
most SEND_TIMEOUT_SECONDS, then the session ends (the sentences queued are bounded too). The
call is accounted once, when the session's stream ends (200), fails (its status) or is
abandoned (499), with the characters spoken and the audio's seconds. No database connection is
held while the engine runs: a custom voice's sample is read in a short unit of work of its own.

Errors the session survives (a malformed or unknown message, text over the size limit, an
unknown voice, a `session.update` after the text started) are answered with an `error` event
and the message is ignored; an engine failure or a silent client (no message for IDLE_SECONDS
before `input_text.end`) end the session after their `error` event, closing with 1008 (the
client's fault) or 1011.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from dataclasses import dataclass

from starlette.websockets import WebSocket

from maestrale.audio.realtime.duplex import IDLE_SECONDS, DuplexSession, IdleClient, receive_frame
from maestrale.audio.realtime.messages import error_body
from maestrale.audio.speech.formats import Encoder, encoder
from maestrale.audio.speech.realtime.messages import (
    AppendText,
    ClientMessage,
    EndText,
    FlushText,
    SessionState,
    UpdateSession,
    parse,
)
from maestrale.audio.speech.realtime.text import TextBuffer
from maestrale.audio.speech.service import SpeechTally
from maestrale.audio.speech.voice import ChosenVoice, VoiceSamples, choose_voice
from maestrale.config import Settings
from maestrale.core.errors import AppError, BadRequest, PayloadTooLarge
from maestrale.engines.protocols import SpeechEngine
from maestrale.engines.speech_types import SpeechChunk, SpeechRequest
from maestrale.gateway.call import Call
from maestrale.gateway.gateway import Gateway

# Sentences queued ahead of the engine: past this the reader waits.
QUEUE_PIECES = 16


@dataclass(frozen=True, slots=True)
class SessionContext:
    gateway: Gateway
    call: Call[SpeechEngine]
    settings: Settings
    voices: VoiceSamples


class RealtimeSpeechSession(DuplexSession):
    def __init__(self, websocket: WebSocket, context: SessionContext, request_id: str) -> None:
        super().__init__(websocket)
        self.context = context
        self.call = context.call
        self.state = SessionState(request_id, context.call.model)
        self.voice = ChosenVoice()
        self.text = TextBuffer(context.settings.speech_max_characters)
        self.pieces: asyncio.Queue[str | None] = asyncio.Queue(maxsize=QUEUE_PIECES)
        self.tally = SpeechTally()
        self.encoder: Encoder | None = None
        self.text_started = False
        self.ended = False
        # A session.update carries a voice sample; anything else is small.
        limit = context.settings.voice_sample_max_bytes
        self.max_frame = (limit + 2) // 3 * 4 + 65_536

    def _finished(self) -> None:
        if self.encoder is not None:
            self.encoder.close()

    async def _speak(self, engine: SpeechEngine) -> AsyncIterator[SpeechChunk]:
        """The engine's chunks, sentence after sentence, until the text ends."""
        while (piece := await self.pieces.get()) is not None:
            request = SpeechRequest(
                model=self.call.upstream,
                text=piece,
                voice=self.voice.preset,
                reference=self.voice.reference,
            )
            async for chunk in engine.synthesize(request):
                yield chunk

    async def _write(self) -> None:
        gateway = self.context.gateway
        try:
            first, rest = await gateway.stream(self.call, self._speak, self.tally)
            try:
                if first is not None:
                    await self._deliver(first)
                async for chunk in rest:
                    await self._deliver(chunk)
            finally:
                await rest.aclose()
            if self.encoder is not None:
                tail = await asyncio.to_thread(self.encoder.finish)
                if tail:
                    await self._delta(tail)
            await self._send({"type": "speech.audio.done", "usage": self.tally.usage_body()})
            await self._close(1000)
        except AppError as exc:  # mapped and accounted by the gateway
            await self._fail(exc)

    async def _deliver(self, chunk: SpeechChunk) -> None:
        if self.encoder is None:
            self.encoder = encoder(self.state.response_format)
        data = await asyncio.to_thread(self.encoder.feed, chunk)
        if data:
            await self._delta(data)

    async def _delta(self, data: bytes) -> None:
        audio = base64.b64encode(data).decode()
        await self._send({"type": "speech.audio.delta", "audio_data": audio})

    async def _read(self) -> None:
        # First: the writer sends nothing before text, which only this task receives.
        await self._send({"type": "session.created", "session": self.state.body()})
        while True:
            timeout = None if self.ended else IDLE_SECONDS
            try:
                frame = await receive_frame(self.websocket, timeout)
            except TimeoutError:
                await self._fail(
                    IdleClient(f"no message for {IDLE_SECONDS:g} seconds before input_text.end")
                )
                return
            if frame is None:
                return
            try:
                if len(frame) > self.max_frame:
                    raise PayloadTooLarge(
                        f"a message is at most {self.max_frame} bytes", code="message_too_large"
                    )
                await self._handle(parse(frame, self.context.settings.speech_max_characters))
            except AppError as exc:  # the message is ignored; the session goes on
                await self._send(error_body(exc))

    async def _queue(self, pieces: list[str]) -> None:
        for piece in pieces:
            self.tally.characters += len(piece)
            await self.pieces.put(piece)

    async def _handle(self, message: ClientMessage) -> None:
        if isinstance(message, UpdateSession):
            await self._update(message)
            return
        if self.ended:
            raise BadRequest("the text has ended (input_text.end)", code="text_ended")
        if isinstance(message, AppendText):
            if message.text:
                self.text_started = True
                await self._queue(self.text.append(message.text))
        elif isinstance(message, FlushText):
            if message.text:
                self.text_started = True
                self.text.append(message.text)
            await self._queue(self.text.flush())
        elif isinstance(message, EndText):
            self.ended = True
            await self._queue(self.text.flush())
            await self.pieces.put(None)

    async def _update(self, message: UpdateSession) -> None:
        if self.text_started:
            raise BadRequest("the session cannot change once text was sent", code="session_locked")
        update = message.update
        sent = update.model_fields_set
        if "voice" in sent or "ref_audio" in sent:
            settings = self.context.settings
            self.voice = await choose_voice(
                self.call.engine,
                self.call.model,
                self.call.upstream,
                update.voice,
                update.ref_audio,
                self.context.voices,
                settings,
                voice_param="voice",
            )
            self.state.voice = self.voice.label
            self.state.is_ref_audio = update.ref_audio is not None
        if update.response_format is not None:
            self.state.response_format = update.response_format
        if update.streaming_mode is not None:
            self.state.streaming_mode = update.streaming_mode
        if update.expressiveness is not None:
            self.state.expressiveness = update.expressiveness
        await self._send({"type": "session.updated", "session": self.state.body()})
