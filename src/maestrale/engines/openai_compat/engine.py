"""`OpenAICompatEngine`: chat, FIM and embeddings served by any OpenAI-compatible server."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from typing import Any

from maestrale.engines.openai_compat import wire
from maestrale.engines.openai_compat.client import DONE, UpstreamClient
from maestrale.engines.openai_compat.options import UpstreamConfig
from maestrale.engines.openai_compat.stream import ChunkAssembler
from maestrale.engines.types import (
    ChatChunk,
    ChatRequest,
    ChatResult,
    EmbeddingRequest,
    EmbeddingResult,
    EngineError,
    FimRequest,
    TextRequest,
)

_CHAT = "/chat/completions"
_EMBEDDINGS = "/embeddings"
_COMPLETIONS = "/completions"
# vLLM's tokenizer route, at the server's root (not under /v1).
_TOKENIZE = "/tokenize"
# The `CHAT_OPTIONS` it forwards (top_k, repetition_penalty and min_tokens as vLLM names them):
# an upstream that cannot honour one refuses it, and its 4xx reaches the client. Not
# prompt_logprobs, whose answer has no common shape across servers.
OPTIONS = frozenset({"top_k", "repetition_penalty", "min_tokens", "logprobs"})


class OpenAICompatEngine:
    """Forwards requests to an OpenAI-compatible server (vLLM, llama.cpp server, Ollama, TGI,
    or an upstream platform) over one pooled HTTP client.

    One engine serves every catalog model of its upstream: the request's `model` is already the
    upstream model name. Failures are raised as `EngineError` with the upstream's status (or
    502 unreachable / 504 timed out); streams are passed on chunk by chunk as they arrive.
    """

    def __init__(self, config: UpstreamConfig) -> None:
        self._client = UpstreamClient(config)
        self._fim_api: wire.FimApi = config.options.fim_api

    def chat_options(self) -> frozenset[str]:
        """See `OPTIONS`."""
        return OPTIONS

    async def chat(self, request: ChatRequest) -> ChatResult:
        """Complete a conversation with POST /chat/completions."""
        answer = await self._client.post_json(_CHAT, wire.chat_body(request, stream=False))
        return wire.parse_chat_result(answer)

    async def count_prompt(self, request: ChatRequest) -> int:
        """The prompt tokens of a chat of `request` (`PromptCounter`), counted by vLLM's POST
        /tokenize: the chat template applied to its messages and tools as its chat completion
        applies it, so the count is the `usage.prompt_tokens` of that chat. A server without
        the route (404/405: llama.cpp server, Ollama, an upstream platform) or whose route
        answers no count cannot count: `EngineError(400, code="token_count_unsupported")`."""
        try:
            answer = await self._client.post_json(_TOKENIZE, wire.tokenize_body(request), root=True)
        except EngineError as exc:
            if exc.status in (404, 405):
                raise _cannot_count() from exc
            raise
        count = answer.get("count") if isinstance(answer, dict) else None
        # llama.cpp's server has a /tokenize of its own, for a text: it answers `tokens`, no count.
        if type(count) is not int or count < 0:
            raise _cannot_count()
        return count

    def chat_stream(self, request: ChatRequest) -> AsyncGenerator[ChatChunk, None]:
        """Stream a conversation's completion; the last chunk carries the upstream's usage
        (None when the upstream sends none)."""
        return self._stream(_CHAT, wire.chat_body(request, stream=True), text=False)

    async def fim(self, request: FimRequest) -> ChatResult:
        """Fill in the middle with POST /completions (`fim_api = "completions"`, the default)
        or POST /fim/completions (`fim_api = "mistral"`)."""
        body = wire.fim_body(request, self._fim_api, stream=False)
        answer = await self._client.post_json(wire.fim_path(self._fim_api), body)
        if self._fim_api == "mistral":
            return wire.parse_chat_result(answer)
        return wire.parse_text_result(answer)

    def fim_stream(self, request: FimRequest) -> AsyncGenerator[ChatChunk, None]:
        """Stream a fill-in-the-middle completion; the last chunk carries the usage."""
        body = wire.fim_body(request, self._fim_api, stream=True)
        text = self._fim_api == "completions"
        return self._stream(wire.fim_path(self._fim_api), body, text=text)

    async def complete(self, request: TextRequest) -> ChatResult:
        """A raw text completion with the classic POST /completions (`fim_api = "completions"`,
        the default; an upstream of the Mistral dialect has none: 400)."""
        self._check_completions()
        answer = await self._client.post_json(_COMPLETIONS, wire.text_body(request, stream=False))
        return wire.parse_text_result(answer)

    def complete_stream(self, request: TextRequest) -> AsyncGenerator[ChatChunk, None]:
        """Stream a raw text completion; the last chunk carries the usage."""
        self._check_completions()
        return self._stream(_COMPLETIONS, wire.text_body(request, stream=True), text=True)

    def _check_completions(self) -> None:
        if self._fim_api == "mistral":
            raise EngineError(
                400,
                "this model's upstream speaks the Mistral dialect, which has no raw text "
                "completion (/completions)",
                code="unsupported_parameter",
            )

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResult:
        """Embed the inputs with POST /embeddings; vectors come back in input order."""
        answer = await self._client.post_json(_EMBEDDINGS, wire.embed_body(request))
        return wire.parse_embeddings(answer, len(request.inputs))

    async def aclose(self) -> None:
        """Close the pooled connections to the upstream."""
        await self._client.aclose()

    async def _stream(
        self, path: str, body: dict[str, Any], *, text: bool
    ) -> AsyncGenerator[ChatChunk, None]:
        assembler = ChunkAssembler(text=text)
        # aclosing: when our consumer stops early, the upstream response is closed at once,
        # not whenever the garbage collector gets to the inner generator.
        async with contextlib.aclosing(self._client.stream(path, body)) as payloads:
            async for payload in payloads:
                if payload == DONE:
                    assembler.done()
                    continue
                for chunk in assembler.feed(payload):
                    yield chunk
        for chunk in assembler.finish():
            yield chunk


def _cannot_count() -> EngineError:
    return EngineError(
        400,
        "this engine cannot count tokens: its server offers no vLLM POST /tokenize",
        code="token_count_unsupported",
    )
