"""`BuiltinEngine`: the deterministic test-double engine behind the `maestrale-echo` model."""

from __future__ import annotations

import asyncio
import copy
import zlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

from maestrale.engines.builtin import embeddings
from maestrale.engines.builtin.answer import (
    OFF_LOOP_CHARS,
    Answer,
    answer_chat,
    answer_fim,
    answer_text,
    count_chat_prompt,
)
from maestrale.engines.builtin.tokens import tokenize
from maestrale.engines.types import (
    ChatChunk,
    ChatRequest,
    ChatResult,
    Choice,
    EmbeddingRequest,
    EmbeddingResult,
    FimRequest,
    TextRequest,
    TokenLogprob,
    Usage,
)

# The options of `CHAT_OPTIONS` it honours: log-probabilities (its answer is certain: each token
# has probability 1, logprob 0.0, and is its own only alternative); top_k and repetition_penalty
# are sampling knobs, moot for a deterministic answer as temperature is. Not min_tokens (the
# answer's length is fixed) nor prompt_logprobs.
OPTIONS = frozenset({"top_k", "repetition_penalty", "logprobs"})


def _logprob(token: str, top: int | None) -> TokenLogprob:
    entry: dict[str, Any] = {
        "token": token,
        "logprob": 0.0,
        "bytes": list(token.encode()),
        "token_id": zlib.crc32(token.encode()) % 49_152,
    }
    return {**entry, "top_logprobs": [entry] if top else []}


def _logprobs(tokens: list[str], top: int | None) -> list[TokenLogprob] | None:
    return None if top is None else [_logprob(token, top) for token in tokens]


def _usage(answer: Answer) -> Usage:
    return Usage(
        prompt_tokens=answer.prompt_tokens,
        completion_tokens=answer.completion_tokens * answer.n,
    )


def _result(answer: Answer, top: int | None = None) -> ChatResult:
    # Each choice gets its own message dict so that a caller editing one cannot change another.
    choices = [
        Choice(
            index=i,
            message=copy.deepcopy(answer.message()),
            finish_reason=answer.finish_reason,
            logprobs=_logprobs(tokenize(answer.content), top),
        )
        for i in range(answer.n)
    ]
    return ChatResult(choices=choices, usage=_usage(answer))


def _chunks(answer: Answer, tokens: list[str], top: int | None) -> Iterator[ChatChunk]:
    for index in range(answer.n):
        yield ChatChunk(index=index, delta={"role": "assistant", "content": ""})
        if answer.tool_calls is not None:
            yield ChatChunk(index=index, delta={"tool_calls": copy.deepcopy(answer.tool_calls)})
        else:
            for token in tokens:
                yield ChatChunk(
                    index=index, delta={"content": token}, logprobs=_logprobs([token], top)
                )
        last = index == answer.n - 1
        yield ChatChunk(
            index=index,
            delta={"content": ""},
            finish_reason=answer.finish_reason,
            usage=_usage(answer) if last else None,
        )


async def _stream(answer: Answer, top: int | None = None) -> AsyncIterator[ChatChunk]:
    content = answer.content
    # A long answer (an echo of a long message) is tokenized off the event loop.
    large = len(content) > OFF_LOOP_CHARS
    tokens = await asyncio.to_thread(tokenize, content) if large else tokenize(content)
    for chunk in _chunks(answer, tokens, top):
        # Yield to the event loop between chunks, as a network stream would.
        await asyncio.sleep(0)
        yield chunk


class BuiltinEngine:
    """A deterministic engine for chat, FIM and embeddings that needs no model server.

    It echoes the last user message (`echo: <text>`), reports tool results
    (`tool NAME returned: <content>`) and obeys directive lines: `/call NAME {json}`,
    `/respond <text>`, `/sleep MS` and `/fail STATUS`. See docs/architecture.md §6 for the contract.
    A raw text completion (`complete`) answers its prompt as FIM does. Log-probabilities: see
    `OPTIONS`.
    """

    def chat_options(self) -> frozenset[str]:
        """See `OPTIONS`."""
        return OPTIONS

    async def chat(self, request: ChatRequest) -> ChatResult:
        """Answer the conversation; raise `EngineError` when a `/fail` directive asks for it."""
        return _result(await answer_chat(request), request.logprobs)

    async def chat_stream(self, request: ChatRequest) -> AsyncIterator[ChatChunk]:
        """Stream the answer one token per chunk; `/sleep` and `/fail` act before the first chunk.

        Choices are streamed one after another; the very last chunk carries the usage of all.
        """
        answer = await answer_chat(request)
        async for chunk in _stream(answer, request.logprobs):
            yield chunk

    async def count_prompt(self, request: ChatRequest) -> int:
        """The prompt tokens `chat` reports for `request` (`PromptCounter`): each message's
        tokens plus one; its tools are not part of the builtin engine's prompt."""
        return await count_chat_prompt(request)

    async def fim(self, request: FimRequest) -> ChatResult:
        """Answer a fill-in-the-middle request: `echo: <prompt>` unless directives say otherwise."""
        return _result(await answer_fim(request))

    async def fim_stream(self, request: FimRequest) -> AsyncIterator[ChatChunk]:
        """Stream a fill-in-the-middle answer one token per chunk."""
        answer = await answer_fim(request)
        async for chunk in _stream(answer):
            yield chunk

    async def complete(self, request: TextRequest) -> ChatResult:
        """Continue a raw prompt: `echo: <prompt>` unless directives say otherwise, `n` times."""
        return _result(await answer_text(request), request.logprobs)

    async def complete_stream(self, request: TextRequest) -> AsyncIterator[ChatChunk]:
        """Stream a raw text completion one token per chunk."""
        answer = await answer_text(request)
        async for chunk in _stream(answer, request.logprobs):
            yield chunk

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResult:
        """Embed each input as a deterministic, L2-normalised feature-hashing vector (in a
        thread when the inputs are long: hashing a megabyte takes a second)."""
        if sum(map(len, request.inputs)) > embeddings.OFF_LOOP_CHARS:
            return await asyncio.to_thread(embeddings.embed, request)
        return embeddings.embed(request)

    async def aclose(self) -> None:
        """Nothing to release: the engine holds no connections or models."""
