"""One voice session on an accepted WebSocket (see `messages` for the protocol).

The reader takes the client's audio: an energy VAD (`vad`) finds where the user starts speaking
(its first audio is kept a moment, so that the turn's start is not lost) and where the turn ends
(its silence, or `input_audio.flush`). Each user turn is transcribed by the session's realtime
transcription model through the gateway as it is spoken; once it ends, its text is answered in
the session's conversation (`conversation`) and the answer spoken as it streams (`speaking`).
Speech from the user while an answer plays (barge-in, when `turn.allow_interruptions`) stops it
at once: `output_audio.interrupted`, and the stored answer is what was spoken of it.

Messages go out through a bounded queue: a client that stops reading ends the session. Bad
messages are answered with an `error` event and the session goes on; a failed model call is an
`error` event too, and the session listens again. No database session is held by the session
itself: each step that stores opens and ends its own short transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

import orjson
from starlette.websockets import WebSocket

from maestrale.audio.realtime.duplex import receive_frame
from maestrale.audio.streaming import TranscriptionTally
from maestrale.audio_agents.realtime.context import SessionContext
from maestrale.audio_agents.realtime.conversation import converse, keep_spoken
from maestrale.audio_agents.realtime.messages import (
    ClientMessage,
    error_event,
    now,
    parse,
    state_event,
    transcript_event,
)
from maestrale.audio_agents.realtime.speaking import Answer, Speaker
from maestrale.audio_agents.realtime.vad import Vad, VadSettings
from maestrale.conversations.schemas import ConversationResponse
from maestrale.core.errors import AppError, BadRequest
from maestrale.core.ids import new_id
from maestrale.engines.transcription_types import (
    PcmFormat,
    RealtimeInput,
    RealtimeTranscriptionRequest,
    Segment,
    TranscriptionResult,
)
from maestrale.gateway.capabilities import TRANSCRIPTION_REALTIME

log = logging.getLogger("maestrale.audio_agents")

SAMPLE_RATE = 16_000
OUTBOX = 256  # messages queued for a slow client before the session gives up on it
PREROLL_BYTES = SAMPLE_RATE * 2 * 400 // 1000  # the audio kept from before speech started
IDLE_SECONDS = 120.0
TURN_QUEUE = 64
DEFAULT_TOOL_TIMEOUT_MS = 30_000
DEFAULT_REMINDER = "Are you still there?"


def _cancelling() -> bool:
    """Whether the running task itself is being cancelled (not only a task it awaited)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


class UserTurn:
    """A user's turn being transcribed: its audio queue and the transcription's task."""

    def __init__(self) -> None:
        self.id = "msg_" + new_id().replace("-", "")
        self.audio: asyncio.Queue[RealtimeInput] = asyncio.Queue(maxsize=TURN_QUEUE)
        self.task: asyncio.Task[str] | None = None

    async def feed(self, item: RealtimeInput) -> None:
        """Queue audio (None: the turn's end) for its transcription, unless that has failed
        already (its error is sent when the turn is answered)."""
        if self.task is not None and not self.task.done():
            await self.audio.put(item)


class VoiceSession:
    def __init__(self, websocket: WebSocket, ctx: SessionContext) -> None:
        self.websocket = websocket
        self.ctx = ctx
        self.outbox: asyncio.Queue[str | None] = asyncio.Queue(maxsize=OUTBOX)
        self.vad = Vad(VadSettings.of(ctx.part("stt").get("turn_detection")), SAMPLE_RATE)
        self.preroll = b""
        self.turn: UserTurn | None = None
        self.answer: Answer | None = None
        self.state = "initializing"
        self.interruptible = ctx.part("turn").get("allow_interruptions", True) is not False
        self.turns: asyncio.Lock = asyncio.Lock()  # one answer at a time, in order
        self.tasks: set[asyncio.Task[Any]] = set()
        self.responding: set[asyncio.Task[Any]] = set()  # the user turns being answered
        self.done = asyncio.Event()  # the session must end (reason in `ended`)
        self.ended = ""
        self.speaker = Speaker(ctx, self.send, self._speaking)
        # Since when the user has said nothing with the agent listening, and the reminders
        # spoken since (turn.inactivity).
        self.quiet_since = time.monotonic()
        self.reminders = 0
        # The function calls the client runs, by call id: its `tool_call.result` resolves them.
        self.calls: dict[str, asyncio.Future[ClientMessage]] = {}
        self.functions = {
            str(tool["function"]["name"]): tool
            for tool in ctx.config.get("tools") or []
            if tool.get("type") == "function"
        }

    # Output.

    async def send(self, body: dict[str, Any]) -> None:
        try:
            self.outbox.put_nowait(orjson.dumps(body).decode())
        except asyncio.QueueFull:
            self.end("client_not_reading")

    async def _writer(self) -> None:
        while (text := await self.outbox.get()) is not None:
            await self.websocket.send_text(text)

    async def _set_state(self, state: str) -> None:
        if state == "listening":
            self.quiet_since = time.monotonic()
        if state != self.state:
            old, self.state = self.state, state
            await self.send(state_event(old, state))

    async def _speaking(self) -> None:
        await self._set_state("speaking")

    def end(self, reason: str) -> None:
        if not self.done.is_set():
            self.ended = reason
            self.done.set()

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.create_task(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    # The session.

    async def run(self) -> str:
        """Serve the session until it ends; the reason it ended."""
        writer = asyncio.create_task(self._writer())
        reader = asyncio.create_task(self._reader())
        stop = asyncio.create_task(self.ctx.stop.wait())
        await self.send({"type": "session.created", "session": self._description()})
        await self._set_state("listening")
        welcome = self.ctx.config.get("welcome_message")
        if welcome:
            self._spawn(self._respond(None, str(welcome)))
        inactivity = self.ctx.part("turn").get("inactivity")
        if isinstance(inactivity, dict) and inactivity.get("timeout_ms"):
            self._spawn(self._remind(inactivity))
        try:
            finished = asyncio.create_task(self.done.wait())
            await asyncio.wait({writer, reader, stop, finished}, return_when="FIRST_COMPLETED")
            if stop.done():
                self.ended = self.ended or "closed"
            elif not self.ended:  # the reader or the writer ended: the client is gone
                self.ended = "client_left"
            finished.cancel()
        finally:
            for task in [reader, stop, *self.tasks]:
                task.cancel()
            for task in [reader, stop, *list(self.tasks)]:
                with contextlib.suppress(BaseException):
                    await task
            if not writer.done():
                with contextlib.suppress(asyncio.QueueFull):
                    self.outbox.put_nowait(
                        orjson.dumps({"type": "session.ended", "reason": self.ended}).decode()
                    )
                    self.outbox.put_nowait(None)
                with contextlib.suppress(BaseException):
                    await asyncio.wait_for(writer, 5)
            writer.cancel()
            with contextlib.suppress(BaseException):
                await writer
        return self.ended

    def _heard(self) -> None:
        """The user spoke (or typed): the silence, and its reminders, start again."""
        self.quiet_since = time.monotonic()
        self.reminders = 0

    async def _remind(self, inactivity: dict[str, Any]) -> None:
        """`turn.inactivity`: once the user has said nothing for `timeout_ms` while the agent
        listens, the next of its `messages` is spoken (not stored), at most `max_reminders`
        times in a row; one more silence ends the session ("inactivity")."""
        timeout = float(inactivity["timeout_ms"]) / 1000
        messages = [m for m in inactivity.get("messages") or [] if m] or [DEFAULT_REMINDER]
        while True:
            wait = self.quiet_since + timeout - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
                continue
            if self.state != "listening" or self.turn is not None or self.responding:
                self.quiet_since = time.monotonic()  # busy: the silence has not started
                continue
            if self.reminders >= int(inactivity.get("max_reminders") or 0):
                self.end("inactivity")
                return
            self.reminders += 1
            self.quiet_since = time.monotonic()
            self._spawn(self._respond(None, messages[(self.reminders - 1) % len(messages)]))

    def _description(self) -> dict[str, Any]:
        return {
            "id": self.ctx.session_id,
            "input_audio_format": {"encoding": "pcm_s16le", "sample_rate": SAMPLE_RATE},
            "llm": self.ctx.part("llm"),
            "tts": self.ctx.part("tts"),
            "stt": self.ctx.part("stt"),
            "turn": self.ctx.part("turn"),
        }

    # Input.

    async def _reader(self) -> None:
        while True:
            try:
                frame = await receive_frame(self.websocket, IDLE_SECONDS)
            except TimeoutError:
                self.end("idle")
                return
            if frame is None:
                return
            try:
                await self._handle(parse(frame))
            except AppError as exc:  # the message is ignored; the session goes on
                await self.send(error_event(exc, "transport"))

    async def _handle(self, message: ClientMessage) -> None:
        if message.type == "session.close":
            self.end("closed")
        elif message.type == "input_audio.flush":
            await self._end_turn()
        elif message.type == "input_audio.end":
            await self._end_turn()
            self._spawn(self._end_after_answers())
        elif message.type == "input_text":
            self._heard()
            if self.answer is not None and self.interruptible:
                await self._interrupt(self.answer)
            self._answer_turn(self._respond(None, None, message.text))
        elif message.type == "tool_call.result":
            waiting = self.calls.get(message.id)
            if waiting is None or waiting.done():
                raise BadRequest(
                    f"no function call {message.id[:64]!r} is waiting for its result",
                    code="unknown_tool_call",
                )
            waiting.set_result(message)
        else:
            await self._audio(message.audio)

    async def _end_after_answers(self) -> None:
        await asyncio.gather(*list(self.responding), return_exceptions=True)
        self.end("audio_ended")

    async def _audio(self, pcm: bytes) -> None:
        started, ended = self.vad.feed(pcm)
        if started:
            self._heard()
            if self.answer is not None and self.interruptible:
                await self._interrupt(self.answer)
            if self.turn is None:
                self.turn = UserTurn()
                self.turn.task = self._spawn(self._transcribe(self.turn))
                pcm = self.preroll + pcm
        if self.turn is not None:
            await self.turn.feed(pcm)
        else:
            self.preroll = (self.preroll + pcm)[-PREROLL_BYTES:]
        if ended:
            await self._end_turn()

    async def _end_turn(self) -> None:
        turn, self.turn = self.turn, None
        self.vad.reset()
        self.preroll = b""
        if turn is not None:
            await turn.feed(None)
            self._answer_turn(self._respond(turn, None))

    def _answer_turn(self, answering: Any) -> None:
        task = self._spawn(answering)
        self.responding.add(task)
        task.add_done_callback(self.responding.discard)

    async def _interrupt(self, answer: Answer) -> None:
        """Barge-in: the answer stops where the user is."""
        if answer.interrupted:
            return
        answer.cut()
        if answer.speaker is not None:
            answer.speaker.cancel()
        await self.send({"type": "output_audio.interrupted", "id": answer.id})
        await self.send(transcript_event(answer.id, "assistant", answer.text, True))
        await self._set_state("listening")

    # A turn.

    async def _transcribe(self, turn: UserTurn) -> str:
        stt = self.ctx.part("stt")
        gateway = self.ctx.services.gateway
        call = await gateway.open(
            self.ctx.caller,
            str(stt.get("model")),
            TRANSCRIPTION_REALTIME,
            correlation_id=self.ctx.session_id,
            source="audio_session",
        )
        await gateway.admit(call, 0)
        request = RealtimeTranscriptionRequest(
            model=call.upstream,
            audio_format=PcmFormat("pcm_s16le", SAMPLE_RATE),
            audio=turn.audio,
            interval_seconds=0.5,
            language=stt.get("language"),
            max_seconds=self.ctx.services.settings.audio_max_seconds,
        )
        first, rest = await gateway.stream(
            call, lambda engine: engine.transcribe_realtime(request), TranscriptionTally()
        )
        heard: list[str] = []
        text = ""
        try:
            event = first
            while event is not None:
                if isinstance(event, Segment) and event.text.strip():
                    heard.append(event.text.strip())
                    await self.send(transcript_event(turn.id, "user", " ".join(heard), False))
                elif isinstance(event, TranscriptionResult):
                    text = event.text.strip()
                event = await anext(rest, None)
        finally:
            await rest.aclose()
        return text or " ".join(heard)

    async def _respond(
        self, turn: UserTurn | None, said: str | None, typed: str | None = None
    ) -> None:
        """Answer a user's turn, spoken or `typed` (or speak the welcome message, `said`, which
        is not stored); an unexpected failure is logged and reported, and the session goes
        on."""
        try:
            await self._answer(turn, said, typed)
        except AppError as exc:
            await self.send(error_event(exc, "agent"))
        except Exception:
            log.exception("voice session %s: a turn failed", self.ctx.session_id)
            await self.send(
                error_event(
                    AppError("internal error", code="internal_error", status_code=500), "agent"
                )
            )

    async def _answer(self, turn: UserTurn | None, said: str | None, typed: str | None) -> None:
        text = typed or ""
        if typed is not None:
            await self.send(
                transcript_event("msg_" + new_id().replace("-", ""), "user", typed, True)
            )
            if not typed.strip():
                return
        elif turn is not None and turn.task is not None:
            try:
                text = await turn.task
            except AppError as exc:
                await self.send(error_event(exc, "stt"))
                return
            await self.send(transcript_event(turn.id, "user", text, True))
            if not text:
                return
        async with self.turns:
            answer = self.answer = Answer()
            answer.speaker = self._spawn(self.speaker.speak(answer))
            response = None
            try:
                if said is not None:
                    answer.feed(said)
                else:
                    await self._set_state("thinking")
                    emit = self._emitter(answer)
                    response = await converse(self.ctx, text, emit, answer.stop)
                    while calls := self._client_calls(response, answer):
                        results = [await self._client_call(call, answer) for call in calls]
                        response = await converse(self.ctx, results, emit, answer.stop)
                answer.finish()
            except AppError as exc:
                answer.speaker.cancel()
                await self.send(error_event(exc, "llm"))
            try:
                await answer.speaker
            except asyncio.CancelledError:
                if _cancelling():
                    raise
            except AppError as exc:
                await self.send(error_event(exc, "tts"))
            try:
                if answer.interrupted and response is not None:
                    await keep_spoken(self.ctx, response, answer.text)
            finally:
                self.answer = None
                if not answer.interrupted:
                    await self._set_state("listening")

    def _client_calls(self, response: ConversationResponse, answer: Answer) -> list[dict[str, Any]]:
        """The function calls of the session's tools the answer waits for (none once cut)."""
        if answer.interrupted:
            return []
        return [
            o
            for o in response.outputs
            if o.get("type") == "function.call" and o.get("name") in self.functions
        ]

    async def _client_call(self, call: dict[str, Any], answer: Answer) -> dict[str, Any]:
        """Have the client run a function call (its filler spoken meanwhile): the call's
        `function.result` entry, an error text when it fails or does not answer in time."""
        call_id, name = str(call["tool_call_id"]), str(call["name"])
        arguments = str(call.get("arguments") or "{}")
        tool = self.functions[name]
        waiting = self.calls[call_id] = asyncio.get_running_loop().create_future()
        started = {"type": "tool_call.started", "id": call_id, "name": name, "phase": "started"}
        await self.send({**started, "arguments": arguments, "ts": now()})
        filler = tool.get("filler")
        if isinstance(filler, dict) and isinstance(filler.get("text"), str) and filler["text"]:
            answer.say(filler["text"])
        timeout = tool.get("timeout_ms") or DEFAULT_TOOL_TIMEOUT_MS
        status, result = "done", ""
        try:
            answered = await asyncio.wait_for(waiting, timeout / 1000)
            status, result = answered.status, answered.text
        except TimeoutError:
            status, result = "error", f"the client did not answer within {timeout} ms"
        finally:
            del self.calls[call_id]
        ended = {"type": "tool_call.ended", "id": call_id, "name": name, "phase": "ended"}
        await self.send(
            {**ended, "arguments": arguments, "status": status, "result": result, "ts": now()}
        )
        text = result if status == "done" else f"error: {result}"
        return {"type": "function.result", "tool_call_id": call_id, "result": text}

    def _emitter(self, answer: Answer) -> Any:
        async def emit(event: dict[str, Any]) -> None:
            if event.get("type") == "message.output.delta" and not answer.interrupted:
                content = event.get("content")
                if isinstance(content, str):
                    answer.feed(content)

        return emit
