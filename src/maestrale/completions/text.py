"""OpenAI's legacy text completion (`POST /v1/completions`, `client.completions.create`), served
on a chat model's raw completion (`TextCompletionEngine`: the prompt continued without the chat
template), or on its fill-in-the-middle when a `suffix` is given. Each prompt of a list is its
own call (opened, validated, admitted and accounted as a chat call), run one after another; its
choices are numbered `prompt index * n + choice`, as OpenAI numbers them.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from fastapi import Request, Response

from maestrale.completions.schemas import TextCompletionRequest
from maestrale.completions.shapes import usage_dict
from maestrale.completions.validation import validate_text
from maestrale.core.errors import AppError
from maestrale.core.sse import DONE, sse_event, sse_response
from maestrale.engines.types import (
    ChatChunk,
    ChatResult,
    FimRequest,
    TextRequest,
    TokenLogprob,
    Usage,
)
from maestrale.gateway.call import Call
from maestrale.gateway.capabilities import FIM, TEXT
from maestrale.gateway.estimates import estimate_tokens
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller
from maestrale.gateway.responses import OVERHEAD_HEADER, json_response, overhead_ms
from maestrale.guardrails.check import apply_guardrails

OBJECT = "text_completion"


@dataclass(slots=True)
class _Prompt:
    """One prompt's call, ready to run: a raw completion, or a FIM one (a suffix was given)."""

    call: Call[Any]
    text: TextRequest | None = None
    fim: FimRequest | None = None

    async def run(self, gateway: Gateway) -> ChatResult:
        if self.fim is not None:
            return await gateway.fim(self.call, self.fim)
        assert self.text is not None
        return await gateway.complete(self.call, self.text)

    async def start(self, gateway: Gateway) -> tuple[ChatChunk, AsyncGenerator[ChatChunk, None]]:
        if self.fim is not None:
            return await gateway.stream_fim(self.call, self.fim)
        assert self.text is not None
        return await gateway.stream_complete(self.call, self.text)


async def _prepare(
    gateway: Gateway, caller: Caller, body: TextCompletionRequest, prompt: str, correlation_id: str
) -> _Prompt:
    """Open, validate and admit the call of one prompt (guardrails checked on the prompt)."""
    capability = FIM if body.suffix is not None else TEXT
    call: Call[Any] = await gateway.open(
        caller, body.model, capability, correlation_id=correlation_id
    )
    call.extra = body.metadata or {}
    validate_text(body, call.spec)
    if body.guardrails:
        await apply_guardrails(
            gateway,
            caller,
            body.guardrails,
            [{"role": "user", "content": prompt}],
            correlation_id=correlation_id,
        )
    chars = len(prompt) + len(body.suffix or "")
    await gateway.admit(call, estimate_tokens(chars, body.max_tokens) * body.n)
    common: dict[str, Any] = {
        "model": call.upstream,
        "prompt": prompt,
        "max_tokens": body.max_tokens,
        "stop": body.stop_list(),
        "temperature": body.temperature,
        "top_p": body.top_p,
        "random_seed": body.seed,
    }
    if body.suffix is not None:
        return _Prompt(call, fim=FimRequest(**common, suffix=body.suffix))
    text = TextRequest(
        **common,
        n=body.n,
        presence_penalty=body.presence_penalty,
        frequency_penalty=body.frequency_penalty,
        logprobs=body.logprobs,
    )
    return _Prompt(call, text=text)


def legacy_logprobs(entries: list[TokenLogprob], offset: int) -> dict[str, Any]:
    """Token log-probabilities in the legacy completion shape; `offset`: where the first token
    starts in the text (after the prompt, as OpenAI counts)."""
    offsets = []
    for entry in entries:
        offsets.append(offset)
        offset += len(entry["token"])
    return {
        "tokens": [entry["token"] for entry in entries],
        "token_logprobs": [entry["logprob"] for entry in entries],
        "top_logprobs": [
            {top["token"]: top["logprob"] for top in entry.get("top_logprobs") or ()}
            for entry in entries
        ],
        "text_offset": offsets,
    }


async def respond_text(
    request: Request,
    gateway: Gateway,
    caller: Caller,
    body: TextCompletionRequest,
    correlation_id: str,
) -> Response:
    """The legacy completion as HTTP: JSON, or SSE chunks (`text_completion` objects, the usage
    in a last chunk without choices when `stream_options.include_usage`) ending with [DONE]."""
    prompts = body.prompts()
    first = await _prepare(gateway, caller, body, prompts[0], correlation_id)
    if body.stream:
        return await _stream(request, gateway, caller, body, correlation_id, first)
    choices: list[dict[str, Any]] = []
    total = Usage()
    current = first
    for number, prompt in enumerate(prompts):
        if number:
            current = await _prepare(gateway, caller, body, prompt, correlation_id)
        result = await current.run(gateway)
        total.prompt_tokens += result.usage.prompt_tokens
        total.completion_tokens += result.usage.completion_tokens
        for choice in result.choices:
            content = choice.message.get("content") or ""
            logprobs = None
            if choice.logprobs is not None and body.logprobs is not None:
                logprobs = legacy_logprobs(choice.logprobs, len(prompt))
            choices.append(
                {
                    "text": prompt + content if body.echo else content,
                    "index": number * body.n + choice.index,
                    "logprobs": logprobs,
                    "finish_reason": choice.finish_reason,
                }
            )
    call = first.call
    response = {
        "id": call.completion_id,
        "object": OBJECT,
        "created": call.created,
        "model": body.model,
        "choices": choices,
        "usage": usage_dict(total),
    }
    return json_response(request, call, response)


@dataclass(slots=True)
class _Offsets:
    """Per choice of a stream: where its next token starts, and whether it was seen."""

    next: dict[int, int] = field(default_factory=dict)


async def _stream(
    request: Request,
    gateway: Gateway,
    caller: Caller,
    body: TextCompletionRequest,
    correlation_id: str,
    first: _Prompt,
) -> Response:
    prompts = body.prompts()
    call = first.call
    head, rest = await first.start(gateway)
    total = Usage()

    def frame(index: int, text: str, logprobs: Any, finish: str | None) -> bytes:
        choice = {"text": text, "index": index, "logprobs": logprobs, "finish_reason": finish}
        return sse_event(
            {
                "id": call.completion_id,
                "object": OBJECT,
                "created": call.created,
                "model": body.model,
                "choices": [choice],
            }
        )

    def frames_of(chunk: ChatChunk, number: int, prompt: str, offsets: _Offsets) -> list[bytes]:
        out = []
        index = number * body.n + chunk.index
        if index not in offsets.next:
            offsets.next[index] = len(prompt)
            if body.echo:
                out.append(frame(index, prompt, None, None))
        content = chunk.delta.get("content") or ""
        logprobs = None
        if chunk.logprobs and body.logprobs is not None:
            logprobs = legacy_logprobs(chunk.logprobs, offsets.next[index])
            offsets.next[index] += sum(len(entry["token"]) for entry in chunk.logprobs)
        if content or chunk.finish_reason is not None:
            out.append(frame(index, content, logprobs, chunk.finish_reason))
        if chunk.usage is not None:
            total.prompt_tokens += chunk.usage.prompt_tokens
            total.completion_tokens += chunk.usage.completion_tokens
        return out

    async def frames() -> AsyncIterator[bytes]:
        nonlocal head, rest
        offsets = _Offsets()
        for number, prompt in enumerate(prompts):
            try:
                if number:
                    # Later prompts start once the earlier ones are sent: their failures (a
                    # limit, the engine) travel in the stream, as a failure mid-stream does.
                    started = await _prepare(gateway, caller, body, prompt, correlation_id)
                    head, rest = await started.start(gateway)
                for out in frames_of(head, number, prompt, offsets):
                    yield out
                async for chunk in rest:
                    for out in frames_of(chunk, number, prompt, offsets):
                        yield out
            except AppError as exc:
                yield sse_event(exc.body())
                return
            finally:
                await rest.aclose()  # accounted now, also when the client went away
        if body.stream_options is not None and body.stream_options.include_usage:
            yield sse_event(
                {
                    "id": call.completion_id,
                    "object": OBJECT,
                    "created": call.created,
                    "model": body.model,
                    "choices": [],
                    "usage": usage_dict(total),
                }
            )
        yield DONE

    response = sse_response(frames())
    response.headers[OVERHEAD_HEADER] = overhead_ms(request, call)
    return response
