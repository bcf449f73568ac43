"""Speaking an answer: its text, as it streams from the model, cut into sentences; each sentence
synthesized through the gateway (one accounted speech call each) and sent as `output_audio.delta`
messages at the pace it plays (a little ahead), so that the answer is live while the user hears
it and a barge-in stops it where the user is. What was spoken of an answer cut short is read
from its timeline: the sentences played whole, and of the one playing, the share of its words
that its audio played so far."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from maestrale.audio.speech.service import SpeechTally
from maestrale.audio.speech.voice import ChosenVoice, choose_voice
from maestrale.audio_agents.realtime.context import SessionContext
from maestrale.audio_agents.realtime.messages import audio_event, transcript_event
from maestrale.core.ids import new_id
from maestrale.engines.protocols import SpeechEngine
from maestrale.engines.speech_text import sentences
from maestrale.engines.speech_types import SpeechChunk, SpeechRequest
from maestrale.gateway.call import Call
from maestrale.gateway.capabilities import SPEECH
from maestrale.voices.service import WorkspaceVoices

# How far ahead of the listener the audio is sent (seconds).
LEAD_SECONDS = 0.3
_LAST_END = re.compile(r"[.!?…]['\")\]]*\s+(?=\S)|\n")

Send = Callable[[dict[str, Any]], Awaitable[None]]


class Answer:
    """One assistant answer: the sentences to speak (None ends them) and what was spoken."""

    def __init__(self) -> None:
        self.id = "msg_" + new_id().replace("-", "")
        self.pending: asyncio.Queue[str | None] = asyncio.Queue()
        self.buffer = ""
        self.spoken: list[str] = []  # the sentences whose audio started
        # When each of them started playing and how long its audio is (monotonic seconds).
        self.timeline: list[tuple[float, float]] = []
        self.interrupted = False
        # Set with `interrupted`: the model's answer ends where it is (see Prepared.stop).
        self.stop = asyncio.Event()
        self.cut_at: float | None = None
        self.speaker: asyncio.Task[None] | None = None

    def feed(self, piece: str) -> None:
        """Text from the model: the sentences it completes are queued."""
        self.buffer += piece
        ends = [match.end() for match in _LAST_END.finditer(self.buffer)]
        if ends:
            done, self.buffer = self.buffer[: ends[-1]], self.buffer[ends[-1] :]
            for sentence in sentences(done):
                self.pending.put_nowait(sentence)

    def say(self, text: str) -> None:
        """Speak `text` now, after what the model said so far (a tool's filler)."""
        for sentence in sentences(f"{self.buffer} {text}"):
            self.pending.put_nowait(sentence)
        self.buffer = ""

    def finish(self) -> None:
        for sentence in sentences(self.buffer):
            self.pending.put_nowait(sentence)
        self.buffer = ""
        self.pending.put_nowait(None)

    @property
    def text(self) -> str:
        """What was spoken: everything sent, or up to the barge-in."""
        if self.cut_at is None:
            return " ".join(self.spoken)
        heard: list[str] = []
        for sentence, (start, seconds) in zip(self.spoken, self.timeline, strict=True):
            played = self.cut_at - start
            if played >= seconds:
                heard.append(sentence)
                continue
            words = sentence.split()
            if played > 0 and seconds > 0:
                heard.extend(words[: int(len(words) * played / seconds)])
            break
        return " ".join(heard)

    def cut(self) -> None:
        self.interrupted = True
        self.stop.set()
        self.cut_at = time.monotonic()


def _synthesis(request: SpeechRequest) -> Callable[[SpeechEngine], AsyncIterator[SpeechChunk]]:
    return lambda engine: engine.synthesize(request)


class Speaker:
    def __init__(self, ctx: SessionContext, send: Send, on_audio: Callable[[], Awaitable[None]]):
        self.ctx = ctx
        self.send = send
        # Called before an answer's first audio (the state turns to speaking).
        self.on_audio = on_audio
        # The session's voice: a preset of the speech model or a custom voice's sample, chosen
        # at the first sentence (400 `unknown_voice` as an error event otherwise).
        self.voice: ChosenVoice | None = None

    async def _voice(self, call: Call[SpeechEngine], voice_id: str | None) -> ChosenVoice:
        if self.voice is None:
            self.voice = await choose_voice(
                call.engine,
                call.model,
                call.upstream,
                voice_id,
                None,
                WorkspaceVoices(self.ctx.services.db, self.ctx.services.blobs, self.ctx.tenant),
                self.ctx.services.settings,
                voice_param="tts.voice_id",
            )
        return self.voice

    async def speak(self, answer: Answer) -> None:
        """Speak the answer's sentences as they come, then its final transcript."""
        tts = self.ctx.part("tts")
        gateway = self.ctx.services.gateway
        played_until = 0.0
        started = False
        while (sentence := await answer.pending.get()) is not None:
            call = await gateway.open(
                self.ctx.caller,
                str(tts.get("model")),
                SPEECH,
                correlation_id=self.ctx.session_id,
                source="audio_session",
            )
            await gateway.admit(call, 0)
            voice = await self._voice(call, tts.get("voice_id"))
            request = SpeechRequest(
                model=call.upstream, text=sentence, voice=voice.preset, reference=voice.reference
            )
            first, rest = await gateway.stream(
                call, _synthesis(request), SpeechTally(len(sentence))
            )
            try:
                chunk, counted = first, False
                while chunk is not None:
                    if not started:
                        started = True
                        await self.on_audio()
                    now = time.monotonic()
                    if not counted:
                        counted = True
                        answer.spoken.append(sentence)
                        answer.timeline.append((max(played_until, now), 0.0))
                        await self.send(
                            transcript_event(answer.id, "assistant", answer.text, False)
                        )
                    await self.send(audio_event(answer.id, chunk.pcm, chunk.sample_rate))
                    start, seconds = answer.timeline[-1]
                    answer.timeline[-1] = (start, seconds + chunk.seconds)
                    # Paced: sent at most LEAD_SECONDS ahead of what the listener hears.
                    played_until = max(played_until, now) + chunk.seconds
                    await asyncio.sleep(max(0.0, played_until - LEAD_SECONDS - now))
                    chunk = await anext(rest, None)
            finally:
                await rest.aclose()
        # Until the last audio has played: a barge-in meanwhile still interrupts it.
        await asyncio.sleep(max(0.0, played_until - time.monotonic()))
        await self.send(transcript_event(answer.id, "assistant", answer.text, True))
        await self.send({"type": "output_audio.done", "id": answer.id})
