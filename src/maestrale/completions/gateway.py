"""The gateway: resolve the model, check the request, admit it (limits hook), call the engine,
map its failures, and account for the call off the hot path.

Batch lines, conversation turns, agent completions and judges call models through this class,
so that every call is validated, limited and recorded the same way.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from maestrale.accounting.recorder import Recorder
from maestrale.catalog.config import ModelSpec
from maestrale.catalog.repository import FineTunedModelRepository
from maestrale.completions.hooks import Caller, CallHook, CallInfo
from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.db import Database
from maestrale.core.errors import AppError, BadRequest, NotFound, UpstreamError, UpstreamTimeout
from maestrale.engines.protocols import (
    ChatEngine,
    ClassificationEngine,
    EmbeddingsEngine,
    FimEngine,
    ModerationEngine,
    OcrEngine,
    TranscriptionEngine,
)
from maestrale.engines.registry import EngineRegistry
from maestrale.engines.types import (
    ChatChunk,
    ChatRequest,
    ChatResult,
    EmbeddingRequest,
    EmbeddingResult,
    EngineError,
    FimRequest,
    Usage,
)

CAPABILITIES = {
    "chat": ("completion_chat", ChatEngine, "chat completions"),
    "fim": ("completion_fim", FimEngine, "fill-in-the-middle completions"),
    "embeddings": ("embeddings", EmbeddingsEngine, "embeddings"),
    "moderations": ("moderation", ModerationEngine, "moderation"),
    "classifications": ("classification", ClassificationEngine, "classification"),
    "ocr": ("ocr", OcrEngine, "OCR"),
    "audio_transcriptions": ("audio_transcription", TranscriptionEngine, "audio transcription"),
}
CLIENT_CLOSED = 499
T = TypeVar("T")


class ModelNotFound(NotFound):
    code = "model_not_found"


class ModelUnsupported(BadRequest):
    code = "model_capability_missing"


@dataclass(slots=True)
class Call:
    """One admitted call: what it targets, who makes it, and what it recorded so far."""

    caller: Caller
    spec: ModelSpec
    engine: Any
    model: str  # the name the client used
    upstream: str  # the name the engine is given
    endpoint: str
    correlation_id: str
    source: str
    info: CallInfo
    reservation: object | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # the request's metadata, for the event
    started: float = field(default_factory=time.perf_counter)
    engine_seconds: float = 0.0
    completion_id: str = field(default_factory=lambda: f"cmpl-{uuid.uuid4().hex}")
    created: int = field(default_factory=lambda: int(time.time()))


def engine_failure(exc: EngineError, model: str) -> AppError:
    """An engine's failure as the client sees it: 4xx kept, timeouts 504, other 5xx 502.

    An upstream that refuses Maestrale's own credentials (401, 403, 407) is a server-side
    misconfiguration, not the client's fault: 502, so that clients do not doubt their key.
    """
    if exc.status in (401, 403, 407):
        return UpstreamError(f"model {model}: the upstream refused its credentials: {exc.message}")
    if 400 <= exc.status < 500:
        return AppError(exc.message, code=exc.code, status_code=exc.status)
    if exc.status == 504:
        return UpstreamTimeout(f"model {model}: {exc.message}")
    return UpstreamError(f"model {model}: the engine failed: {exc.message}")


class Gateway:
    def __init__(
        self,
        registry: EngineRegistry,
        recorder: Recorder,
        db: Database,
        hooks: Sequence[CallHook] = (),
    ) -> None:
        self.registry = registry
        self.recorder = recorder
        self.db = db
        self.hooks = list(hooks)

    async def _resolve(self, caller: Caller, name: str) -> tuple[ModelSpec, Any, str]:
        resolved = self.registry.resolve(name)
        if resolved is not None:
            return resolved.spec, resolved.engine, resolved.spec.upstream_model or resolved.spec.id
        if name.startswith("ft:"):
            tenant = Tenant(caller.organization_id, caller.workspace_id, caller.user_id)
            async with self.db.sessionmaker() as session:
                row = await FineTunedModelRepository(session, tenant).get(name)
            if row is not None:
                if row.archived:
                    raise BadRequest(f"model {name!r} is archived", code="model_archived")
                base = self.registry.resolve(row.root)
                if base is None:
                    raise ModelNotFound(f"the base model {row.root!r} of {name!r} is not served")
                return base.spec, base.engine, row.artifact or base.spec.upstream_model or row.root
        raise ModelNotFound(f"model {name!r} not found", param="model")

    async def open(
        self, caller: Caller, model: str, endpoint: str, *, correlation_id: str, source: str = "api"
    ) -> Call:
        """Resolve `model` for `endpoint` (404 unknown, 400 archived or lacking the capability)."""
        spec, engine, upstream = await self._resolve(caller, model)
        capability, protocol, what = CAPABILITIES[endpoint]
        if not spec.has(capability) or not isinstance(engine, protocol):
            raise ModelUnsupported(f"model {model!r} does not serve {what}", param="model")
        info = CallInfo(caller, spec, endpoint, 0)
        return Call(caller, spec, engine, model, upstream, endpoint, correlation_id, source, info)

    async def admit(self, call: Call, max_tokens_estimate: int) -> None:
        """Run the before-call hooks (limits) once the request is known to be valid."""
        call.info = CallInfo(call.caller, call.spec, call.endpoint, max_tokens_estimate)
        for hook in self.hooks:
            call.reservation = await hook.before_call(call.info)

    async def invoke(
        self,
        call: Call,
        work: Awaitable[T],
        messages: list[dict[str, Any]] | None,
        tools: list[dict[str, Any]] | None,
    ) -> T:
        """Await the engine, timing it; a failure is accounted for and mapped to an HTTP error."""
        started = time.perf_counter()
        try:
            return await work
        except EngineError as exc:
            call.engine_seconds = time.perf_counter() - started
            await self.finish(call, messages, tools, None, None, exc.status)
            raise engine_failure(exc, call.model) from exc
        finally:
            call.engine_seconds = time.perf_counter() - started

    async def chat(self, call: Call, request: ChatRequest) -> ChatResult:
        request.model = call.upstream
        messages, tools = request.messages, request.tools
        result: ChatResult = await self.invoke(call, call.engine.chat(request), messages, tools)
        outputs = [choice.message for choice in result.choices]
        await self.finish(call, messages, tools, outputs, result.usage, 200)
        return result

    async def fim(self, call: Call, request: FimRequest) -> ChatResult:
        request.model = call.upstream
        messages = [{"role": "user", "content": request.prompt}]
        result: ChatResult = await self.invoke(call, call.engine.fim(request), messages, None)
        outputs = [choice.message for choice in result.choices]
        await self.finish(call, messages, None, outputs, result.usage, 200)
        return result

    async def embed(self, call: Call, request: EmbeddingRequest) -> EmbeddingResult:
        request.model = call.upstream
        result: EmbeddingResult = await self.invoke(call, call.engine.embed(request), None, None)
        await self.finish(call, None, None, None, result.usage, 200)
        return result

    async def stream(
        self,
        call: Call,
        chunks: AsyncIterator[ChatChunk],
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
    ) -> tuple[ChatChunk, AsyncIterator[ChatChunk]]:
        """Start a stream: its first chunk (engine failures before it are raised as HTTP errors)
        and the rest, which accounts for the call when it ends, fails or is abandoned."""
        started = time.perf_counter()
        try:
            first = await anext(chunks)
        except StopAsyncIteration:
            first = ChatChunk(index=0, delta={}, finish_reason="stop", usage=Usage())
        except EngineError as exc:
            call.engine_seconds = time.perf_counter() - started
            await self.finish(call, messages, tools, None, None, exc.status)
            raise engine_failure(exc, call.model) from exc
        return first, self._rest(call, first, chunks, messages, tools, started)

    async def _rest(
        self,
        call: Call,
        first: ChatChunk,
        chunks: AsyncIterator[ChatChunk],
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        started: float,
    ) -> AsyncIterator[ChatChunk]:
        collected = _Collector()
        collected.add(first)
        status = CLIENT_CLOSED  # unless the stream reaches its end or fails
        try:
            async for chunk in chunks:
                collected.add(chunk)
                yield chunk
            status = 200
        except EngineError as exc:
            status = exc.status
            raise engine_failure(exc, call.model) from exc
        finally:
            call.engine_seconds = time.perf_counter() - started
            aclose = getattr(chunks, "aclose", None)
            if aclose is not None:
                await aclose()
            usage = collected.usage or Usage(completion_tokens=collected.deltas)
            await self.finish(call, messages, tools, collected.messages(), usage, status)

    async def finish(
        self,
        call: Call,
        messages: list[dict[str, Any]] | None,
        tools: list[dict[str, Any]] | None,
        outputs: list[dict[str, Any]] | None,
        usage: Usage | None,
        status: int,
        *,
        audio_seconds: float = 0.0,
        pages: int = 0,
    ) -> None:
        """Account for the call (buffered; written in the background) and reconcile hooks.
        Transcription reports `audio_seconds` and OCR `pages` beside (or instead of) tokens."""
        usage = usage or Usage()
        price = call.spec.price
        cost = (
            usage.prompt_tokens * price.input_per_million
            + usage.completion_tokens * price.output_per_million
        ) / 1_000_000
        for hook in self.hooks:
            await hook.after_call(call.info, call.reservation, usage, cost)
        caller, now = call.caller, utcnow()
        latency_ms = (time.perf_counter() - call.started) * 1000
        self.recorder.record(
            {
                "id": str(uuid.uuid4()),
                "organization_id": caller.organization_id,
                "workspace_id": caller.workspace_id,
                "key_id": caller.key_id,
                "user_id": caller.user_id,
                "model": call.model,
                "endpoint": call.endpoint,
                "source": call.source,
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
                "total_tokens": usage.total_tokens,
                "cost": cost,
                "audio_seconds": audio_seconds,
                "pages": pages,
                "latency_ms": latency_ms,
                "status_code": status,
                "correlation_id": call.correlation_id,
                "created_at": now,
            },
            None
            if messages is None
            else {
                "id": str(uuid.uuid4()),
                "organization_id": caller.organization_id,
                "workspace_id": caller.workspace_id,
                "key_id": caller.key_id,
                "correlation_id": call.correlation_id,
                "source": call.source,
                "model": call.model,
                "status_code": status,
                "latency_ms": latency_ms,
                "request_messages": messages,
                "response_messages": outputs or [],
                "enabled_tools": tools or [],
                "nb_input_tokens": usage.prompt_tokens,
                "nb_output_tokens": usage.completion_tokens,
                "nb_messages": len(messages) + len(outputs or []),
                "extra_fields": {**call.extra, "endpoint": call.endpoint},
                "created_at": now,
            },
        )


class _Collector:
    """Rebuilds the assistant messages of a stream, for the recorded event."""

    def __init__(self) -> None:
        self.content: dict[int, list[str]] = {}
        self.tool_calls: dict[int, list[dict[str, Any]]] = {}
        self.usage: Usage | None = None
        self.deltas = 0

    def add(self, chunk: ChatChunk) -> None:
        content = chunk.delta.get("content")
        if isinstance(content, str) and content:
            self.content.setdefault(chunk.index, []).append(content)
            self.deltas += 1
        if chunk.delta.get("tool_calls"):
            self.tool_calls.setdefault(chunk.index, []).extend(chunk.delta["tool_calls"])
        if chunk.usage is not None:
            self.usage = chunk.usage

    def messages(self) -> list[dict[str, Any]]:
        indexes = sorted(set(self.content) | set(self.tool_calls))
        return [
            {
                "role": "assistant",
                "content": "".join(self.content.get(i, [])),
                **({"tool_calls": self.tool_calls[i]} if i in self.tool_calls else {}),
            }
            for i in indexes
        ]
