"""Upstream stream chunks → `ChatChunk`s, passed on as they arrive, usage on the last one."""

from __future__ import annotations

from typing import Any

from maestrale.engines.openai_compat.wire import (
    chat_logprobs,
    finish_reason,
    invalid_response,
    loads,
    message_in,
    parse_usage,
    text_logprobs,
)
from maestrale.engines.types import ChatChunk, EngineError, Message, Usage

_DELTA_KEYS = ("role", "content", "tool_calls")


def _stream_error(chunk: dict[str, Any]) -> EngineError:
    # vLLM and others report a failure met mid-generation as an error object in the stream.
    error = chunk.get("error")
    code = error.get("code") if isinstance(error, dict) else chunk.get("code")
    status = code if isinstance(code, int) and 400 <= code <= 599 else 502
    message = message_in(chunk) or "upstream reported an error in its stream"
    return EngineError(status, message, code="upstream_error")


class ChunkAssembler:
    """Turns the JSON payloads of an upstream stream into `ChatChunk`s.

    Every chunk is passed on at once except one that carries a finish reason: it is held until
    the next payload, because OpenAI servers send the usage afterwards, in a chunk of its own
    with no choices, and the platform's streams carry usage on their last chunk.
    `text` reads classic completion chunks (`choices[].text`) instead of chat deltas.
    """

    __slots__ = ("_done", "_finished", "_held", "_last", "_started", "_text", "_usage")

    def __init__(self, *, text: bool = False) -> None:
        self._text = text
        self._started: set[int] = set()
        self._held: ChatChunk | None = None
        self._last: ChatChunk | None = None
        self._usage: Usage | None = None
        self._done = False
        self._finished = False

    def feed(self, payload: bytes) -> list[ChatChunk]:
        """The chunks that can be passed on now that `payload` has arrived."""
        chunk = loads(payload)
        if not isinstance(chunk, dict):
            raise invalid_response("a stream chunk that is not a JSON object")
        if "error" in chunk or chunk.get("object") == "error":
            raise _stream_error(chunk)
        usage = parse_usage(chunk.get("usage"))
        if usage is not None:
            self._usage = usage
        choices = chunk.get("choices")
        if not choices:
            return []
        if not isinstance(choices, list):
            raise invalid_response("stream chunk `choices` is not a list")
        ready: list[ChatChunk] = []
        for position, choice in enumerate(choices):
            if not isinstance(choice, dict):
                raise invalid_response("a stream choice that is not an object")
            out = self._chunk(choice, position)
            if self._held is not None:
                ready.append(self._held)
                self._held = None
            if out.finish_reason is None:
                ready.append(out)
            else:
                self._held = out
                self._finished = True
            self._last = out
        return ready

    def done(self) -> None:
        """The upstream said `[DONE]`: the stream is complete even without a finish reason."""
        self._done = True

    def finish(self) -> list[ChatChunk]:
        """The chunks still held when the stream ends, the last one carrying the usage.

        Raise `EngineError(502)` for a stream that ended without `[DONE]` or a finish reason:
        the upstream died midway and the answer is cut.
        """
        if not (self._done or self._finished):
            raise EngineError(502, "upstream stream interrupted", code="upstream_error")
        last = self._last
        if self._held is not None:
            self._held.usage = self._usage
            return [self._held]
        if self._usage is None:
            return []
        # The finish chunk is already gone (more deltas followed it): usage rides on its own.
        index = last.index if last is not None else 0
        reason = last.finish_reason if last is not None else None
        return [ChatChunk(index=index, delta={}, finish_reason=reason, usage=self._usage)]

    def _chunk(self, choice: dict[str, Any], position: int) -> ChatChunk:
        index = choice.get("index")
        if not isinstance(index, int):
            index = position
        delta: Message
        if self._text:
            text = choice.get("text")
            delta = {"content": text} if isinstance(text, str) and text else {}
        else:
            raw = choice.get("delta")
            raw = raw if isinstance(raw, dict) else {}
            delta = {key: raw[key] for key in _DELTA_KEYS if raw.get(key) is not None}
        if index not in self._started:
            # The platform's streams open each choice with the assistant role.
            self._started.add(index)
            delta = {"role": "assistant", **delta}
            delta.setdefault("content", "")
        reason = choice.get("finish_reason")
        raw_logprobs = choice.get("logprobs")
        logprobs = text_logprobs(raw_logprobs) if self._text else chat_logprobs(raw_logprobs)
        return ChatChunk(
            index=index,
            delta=delta,
            finish_reason=None if reason is None else finish_reason(reason),
            logprobs=logprobs,
        )
