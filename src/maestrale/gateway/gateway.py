"""The gateway: resolve the model, check the request, admit it (limits hooks), call the engine,
map its failures, and account for the call off the hot path.

Every model call goes through it (endpoints, batch lines, conversation turns, agent completions,
judges, guardrails, OCR annotations), so that each is validated, limited and recorded the same
way: `open` the call for a capability (which types its engine), validate the request against
`call.spec`, `admit` it, then `run` it (or `stream` it), which accounts for it on success and on
failure alike. A gateway given its caller's `release` (`releasing`: a request's, a job step's)
ends the caller's transaction before it opens, admits or runs a call.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, TypeVar

from maestrale.accounting.recorder import Recorder
from maestrale.catalog.artifacts import ArtifactFormat
from maestrale.catalog.repository import FineTunedModelRepository
from maestrale.catalog.service import ModelNotFound
from maestrale.core.auth.principal import Tenant
from maestrale.core.db import Database
from maestrale.core.errors import AppError, BadRequest, ServiceUnavailable
from maestrale.core.fair import Share, current, reset_current, set_current
from maestrale.core.fetch import FetchPolicy
from maestrale.core.uow import OwnerRelease, Release
from maestrale.engines.protocols import (
    ChatEngine,
    EmbeddingsEngine,
    FimEngine,
    PromptCounter,
    TextCompletionEngine,
)
from maestrale.engines.registry import EngineRegistry
from maestrale.engines.specs import ModelSpec
from maestrale.engines.types import (
    ChatChunk,
    ChatRequest,
    ChatResult,
    EmbeddingRequest,
    EmbeddingResult,
    EngineError,
    FimRequest,
    TextRequest,
    Usage,
)
from maestrale.gateway import accounting, streams
from maestrale.gateway.call import (
    CLIENT_CLOSED,
    NOTHING,
    Artifact,
    Call,
    Report,
    engine_failure,
    usage_report,
)
from maestrale.gateway.capabilities import Capability
from maestrale.gateway.hooks import Caller, CallHook, CallInfo
from maestrale.gateway.streams import ChatTally, Tally
from maestrale.tracing import engine_span, span

E = TypeVar("E")
R = TypeVar("R")
T = TypeVar("T")

Messages = list[dict[str, Any]]


class ModelUnsupported(BadRequest):
    code = "model_capability_missing"


def _chat_report(result: ChatResult) -> Report:
    return Report(result.usage, [choice.message for choice in result.choices])


class Gateway:
    """The one path of every model call (see the module's docstring)."""

    def __init__(
        self,
        registry: EngineRegistry,
        recorder: Recorder,
        db: Database,
        hooks: Sequence[CallHook] = (),
        artifacts: Callable[[str], Awaitable[str]] | None = None,
        fetch_policy: FetchPolicy | None = None,
    ) -> None:
        self.registry = registry
        self.recorder = recorder
        self.db = db
        self.hooks = list(hooks)
        # The local file of a fine-tuned model's artifact (fetched from the blob store).
        self.artifacts = artifacts
        # What a model input given as a URL (a chat's `input_audio`) may reach and weigh: the
        # settings' `fetch_*` (SSRF guard, size and time bounds).
        self.fetch_policy = fetch_policy or FetchPolicy()
        # Ends the transaction owner's transaction (`releasing`); None: the caller holds none.
        self.release: OwnerRelease | None = None

    def releasing(self, release: Release) -> Gateway:
        """This gateway for the owner of a unit of work (a request, a job's step): before it
        opens, admits or runs a call it ends the owner's transaction (`release`), so that none
        is open while the blob store, the limits or the engine answer (docs/architecture.md §3), and
        no caller has to remember to."""
        view = copy.copy(self)
        view.release = OwnerRelease(release, self.db)
        return view

    async def _release_owner(self, what: str) -> None:
        if self.release is not None:
            await self.release(what)

    async def _released(self, call: Call[E]) -> None:
        what = f"a call to model {call.model!r}"
        await self._release_owner(what)
        self.db.check_released(what)

    async def _resolve(
        self, caller: Caller, name: str
    ) -> tuple[ModelSpec, object, str, Artifact | None]:
        resolved = self.registry.resolve(name)
        if resolved is not None:
            spec = resolved.spec
            return spec, resolved.engine, spec.upstream_model or spec.id, None
        if name.startswith("ft:"):
            tenant = Tenant(caller.organization_id, caller.workspace_id, caller.user_id)
            async with self.db.transaction() as work:
                row = await FineTunedModelRepository(work.session, tenant).get(name)
            if row is not None:
                if row.archived:
                    raise BadRequest(f"model {name!r} is archived", code="model_archived")
                base = self.registry.resolve(row.root)
                if base is None:
                    raise ModelNotFound(f"the base model {row.root!r} of {name!r} is not served")
                upstream = base.spec.upstream_model or row.root
                # What the fine-tuned model serves is its own card's, not its base's: a
                # classifier's base classifies nothing, its fine-tuned heads do.
                served = [cap for cap, on in (row.capabilities or {}).items() if on]
                spec = base.spec.model_copy(update={"capabilities": served})
                if row.artifact is None or row.artifact_format is None:
                    return spec, base.engine, upstream, None
                path = await self._artifact(name, row.artifact)
                artifact = Artifact(path, ArtifactFormat(row.artifact_format))
                return spec, base.engine, upstream, artifact
        raise ModelNotFound(f"model {name!r} not found", param="model")

    async def _artifact(self, name: str, artifact: str) -> str:
        if self.artifacts is None:
            return artifact
        try:
            return await self.artifacts(artifact)
        except (KeyError, OSError) as exc:
            raise ServiceUnavailable(
                f"the weights of model {name!r} cannot be read", code="engine_unavailable"
            ) from exc

    async def open(
        self,
        caller: Caller,
        model: str,
        capability: Capability[E],
        *,
        correlation_id: str,
        source: str = "api",
    ) -> Call[E]:
        """The call of `caller` to `model` (an id, an alias or a workspace's fine-tuned model)
        for `capability`: 404 `model_not_found` for an unknown model, 400 for an archived one
        or one that does not serve the capability. Nothing is reserved or accounted yet. The
        owner's transaction is released first (`releasing`): a fine-tuned model's weights may
        come from the blob store."""
        await self._release_owner(f"the lookup of model {model!r}")
        spec, engine, upstream, artifact = await self._resolve(caller, model)
        typed = capability.engine_of(engine)
        if typed is None or not spec.has(capability.catalog_name):
            raise ModelUnsupported(
                f"model {model!r} does not serve {capability.what}", param="model"
            )
        endpoint = capability.endpoint
        info = CallInfo(caller, spec, endpoint, 0)
        return Call(
            caller, spec, typed, model, upstream, endpoint, correlation_id, source, info, artifact
        )

    async def admit(self, call: Call[E], max_tokens_estimate: int) -> None:
        """Run every hook's `before_call` (limits) once the request is known to be valid; each
        hook's reservation is kept for its own `after_call`. A hook's refusal (its AppError:
        429, spend limit...) hands back the reservations of the hooks before it, and is raised.
        The owner's transaction is released first (`releasing`): the limits may be remote."""
        call.info = CallInfo(call.caller, call.spec, call.endpoint, max_tokens_estimate)
        await self._released(call)
        with span("limits"):
            for hook in self.hooks:
                try:
                    reservation = await hook.before_call(call.info)
                except BaseException:
                    await accounting.reconcile(call, Usage(), 0.0)
                    raise
                call.reservations.append((hook, reservation))

    async def run(
        self,
        call: Call[E],
        work: Callable[[E], Awaitable[R]],
        report: Callable[[R], Report],
        *,
        messages: Messages | None = None,
        tools: Messages | None = None,
    ) -> R:
        """Run `work` on the call's engine, timed, and account for the call: with
        `report(result)` and status 200 on success; with the failure's status otherwise, an
        engine failure being raised as the client sees it (4xx kept, 504, else 502). Given
        `messages` (and the offered `tools`), the call is also recorded as a chat completion
        event. The owner's transaction is released first (`releasing`): no database connection
        may be held by the calling task."""
        await self._released(call)
        started = time.perf_counter()
        shared = _share_of(call)
        try:
            with engine_span(call.endpoint, call.model, call.spec.engine) as traced:
                result = await work(call.engine)
                outcome = report(result)
                traced.tokens(outcome.usage)
        except EngineError as exc:
            await self._failed(call, started, exc.status, messages, tools)
            raise engine_failure(exc, call.model) from exc
        except AppError as exc:  # the work's own refusal (a document OCR cannot read...)
            await self._failed(call, started, exc.status_code, messages, tools)
            raise
        except BaseException as exc:
            status = CLIENT_CLOSED if isinstance(exc, asyncio.CancelledError) else 500
            await self._failed(call, started, status, messages, tools)
            raise
        finally:
            reset_current(shared)
        call.engine_seconds = time.perf_counter() - started
        await accounting.account(self.recorder, call, 200, outcome, messages, tools)
        return result

    async def _failed(
        self,
        call: Call[E],
        started: float,
        status: int,
        messages: Messages | None,
        tools: Messages | None,
    ) -> None:
        call.engine_seconds = time.perf_counter() - started
        await accounting.account(self.recorder, call, status, NOTHING, messages, tools)

    async def stream(
        self,
        call: Call[E],
        start: Callable[[E], AsyncIterator[T]],
        tally: Tally[T],
        *,
        messages: Messages | None = None,
        tools: Messages | None = None,
    ) -> tuple[T | None, AsyncGenerator[T, None]]:
        """Start the stream `start` opens on the call's engine: its first item (None when it
        ends before one) and the rest. A failure before the first item is accounted and raised
        as the client sees it (4xx kept, 504, else 502), before any response is sent. The rest
        accounts for the call with `tally.report()` when it ends, fails (raised mapped) or is
        closed before its end (499): close it when done with it. `messages` and `tools` as for
        `run`; released first as there."""
        await self._released(call)

        async def account(status: int, report: Report) -> None:
            await accounting.account(self.recorder, call, status, report, messages, tools)

        items = streams.accounted(call, start, tally, account)
        # A local engine queues (and takes its turn) on the first item, under the call's share.
        shared = _share_of(call)
        try:
            first: T | None = await anext(items)
        except StopAsyncIteration:  # ended, and accounted
            first = None
        finally:
            reset_current(shared)
        return first, items

    # Typed shortcuts of `run` and `stream` for the calls with a chat-shaped answer.

    async def chat(self, call: Call[ChatEngine], request: ChatRequest) -> ChatResult:
        """Run a chat completion, recorded as a chat completion event."""
        request.model = call.upstream
        request.weights = call.artifact_file(ArtifactFormat.GGUF)
        return await self.run(
            call,
            lambda engine: engine.chat(request),
            _chat_report,
            messages=request.messages,
            tools=request.tools,
        )

    async def count_prompt(self, call: Call[ChatEngine], request: ChatRequest) -> int:
        """The prompt tokens a chat of `request` on the call's engine would report
        (`usage.prompt_tokens`), counted by the engine without running the chat: 400
        `token_count_unsupported` for an engine that cannot count; the engine's refusals as
        `run` raises them. Released first as `run` is (a local engine counts on its worker).

        Not a model call: neither admitted nor accounted. The limits meter generation (requests
        and tokens a model serves, and their price); a count generates nothing, and a
        reservation taken by `admit` would be settled only by the accounting of a call that
        never runs. The local engine's bounded, fair queue (the call's share, as `run` sets it)
        is what keeps counts from crowding out chats there."""
        engine = call.engine
        if not isinstance(engine, PromptCounter):
            raise BadRequest(
                f"model {call.model!r} cannot count tokens",
                code="token_count_unsupported",
                param="model",
            )
        request.model = call.upstream
        request.weights = call.artifact_file(ArtifactFormat.GGUF)
        await self._released(call)
        shared = _share_of(call)
        try:
            with span("count_prompt"):
                return await engine.count_prompt(request)
        except EngineError as exc:
            raise engine_failure(exc, call.model) from exc
        finally:
            reset_current(shared)

    async def fim(self, call: Call[FimEngine], request: FimRequest) -> ChatResult:
        """Run a FIM completion, recorded as a chat completion event of its prompt."""
        request.model = call.upstream
        request.weights = call.artifact_file(ArtifactFormat.GGUF)
        messages = [{"role": "user", "content": request.prompt}]
        return await self.run(
            call, lambda engine: engine.fim(request), _chat_report, messages=messages
        )

    async def complete(self, call: Call[TextCompletionEngine], request: TextRequest) -> ChatResult:
        """Run a raw text completion, recorded as a chat completion event of its prompt."""
        request.model = call.upstream
        request.weights = call.artifact_file(ArtifactFormat.GGUF)
        messages = [{"role": "user", "content": request.prompt}]
        return await self.run(
            call, lambda engine: engine.complete(request), _chat_report, messages=messages
        )

    async def stream_complete(
        self, call: Call[TextCompletionEngine], request: TextRequest
    ) -> tuple[ChatChunk, AsyncGenerator[ChatChunk, None]]:
        """Start a streamed raw text completion: its first chunk and the rest (see `stream`)."""
        request.model = call.upstream
        request.weights = call.artifact_file(ArtifactFormat.GGUF)
        messages = [{"role": "user", "content": request.prompt}]
        first, rest = await self.stream(
            call, lambda engine: engine.complete_stream(request), ChatTally(), messages=messages
        )
        return (_empty_chunk() if first is None else first), rest

    async def embed(
        self, call: Call[EmbeddingsEngine], request: EmbeddingRequest
    ) -> EmbeddingResult:
        """Run an embeddings call (a usage row, no event)."""
        request.model = call.upstream
        return await self.run(call, lambda engine: engine.embed(request), usage_report)

    async def stream_chat(
        self, call: Call[ChatEngine], request: ChatRequest
    ) -> tuple[ChatChunk, AsyncGenerator[ChatChunk, None]]:
        """Start a streamed chat completion: its first chunk and the rest (see `stream`)."""
        request.model = call.upstream
        request.weights = call.artifact_file(ArtifactFormat.GGUF)
        first, rest = await self.stream(
            call,
            lambda engine: engine.chat_stream(request),
            ChatTally(),
            messages=request.messages,
            tools=request.tools,
        )
        return (_empty_chunk() if first is None else first), rest

    async def stream_fim(
        self, call: Call[FimEngine], request: FimRequest
    ) -> tuple[ChatChunk, AsyncGenerator[ChatChunk, None]]:
        """Start a streamed FIM completion: its first chunk and the rest (see `stream`)."""
        request.model = call.upstream
        request.weights = call.artifact_file(ArtifactFormat.GGUF)
        messages = [{"role": "user", "content": request.prompt}]
        first, rest = await self.stream(
            call, lambda engine: engine.fim_stream(request), ChatTally(), messages=messages
        )
        return (_empty_chunk() if first is None else first), rest


def _share_of(call: Call[Any]) -> Any:
    """Make the call's workspace the share a local engine queues it under, in the class of the
    running work (interactive for an API request, batch inside a job); the token resets it."""
    return set_current(Share(call.caller.workspace_id, current().priority))


def _empty_chunk() -> ChatChunk:
    # What a stream that ended before its first chunk answers.
    return ChatChunk(index=0, delta={}, finish_reason="stop", usage=Usage())
