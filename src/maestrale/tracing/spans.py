"""The span helpers that call sites use: free when tracing is off.

Tracing is on for the code that runs under a traced request or job: the request middleware (and,
for the jobs and the database, the process's start) puts the process's `Tracing` in a context
variable. Off, that variable is empty and every helper hands back one shared do-nothing object:
no OpenTelemetry import, no allocation, a context variable read per call site.

Attributes never carry keys, secrets, prompts, outputs or bodies: names, ids, models, token
counts and statuses only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from contextvars import ContextVar
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, TypeVar

from starlette.types import Scope

if TYPE_CHECKING:
    from maestrale.tracing.provider import Tracing

T = TypeVar("T")

Attribute = str | int | float | bool

# The process's tracing where the running code is traced; None when tracing is off.
active: ContextVar[Tracing | None] = ContextVar("maestrale_tracing", default=None)


class TokenCount(Protocol):
    """What an engine call reports of its tokens (`engines.types.Usage`)."""

    @property
    def prompt_tokens(self) -> int: ...

    @property
    def completion_tokens(self) -> int: ...


class SpanScope(Protocol):
    """A span around a block (`with`), or around a stream (`follow` then `end`)."""

    def __enter__(self) -> SpanScope: ...

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    def set(self, key: str, value: Attribute) -> None:
        """Add an attribute (never a secret, a prompt or a body)."""
        ...

    def tokens(self, usage: TokenCount | None) -> None:
        """Record an engine call's token counts (gen_ai.usage.*)."""
        ...

    def follow(self, items: AsyncIterator[T]) -> AsyncIterator[T]:
        """`items`, each step of which runs inside the span (a stream's upstream calls are its
        children, whichever task reads it); the span is not entered meanwhile."""
        ...

    def end(self, status: int) -> None:
        """End a followed stream's span with the call's status (an error from 400 on)."""
        ...


class NoSpan:
    """The span of untraced code: does nothing."""

    __slots__ = ()

    def __enter__(self) -> NoSpan:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    def set(self, key: str, value: Attribute) -> None:
        return None

    def tokens(self, usage: TokenCount | None) -> None:
        return None

    def follow(self, items: AsyncIterator[T]) -> AsyncIterator[T]:
        return items

    def end(self, status: int) -> None:
        return None


NO_SPAN = NoSpan()


def span(name: str) -> SpanScope:
    """A child span of the current one named `name` (`auth`, `limits`...)."""
    tracing = active.get()
    if tracing is None:
        return NO_SPAN
    return tracing.internal(name)


def engine_span(operation: str, model: str, provider: str) -> SpanScope:
    """The span of one engine call (gen_ai.*): `operation` the gateway endpoint (chat, fim,
    embeddings...), `model` the name the client asked for, `provider` the engine's kind."""
    tracing = active.get()
    if tracing is None:
        return NO_SPAN
    return tracing.engine(operation, model, provider)


def job_span(kind: str, job_id: str, attempt: int) -> SpanScope:
    """The root span of one attempt of a job, in a trace of its own."""
    tracing = active.get()
    if tracing is None:
        return NO_SPAN
    return tracing.job(kind, job_id, attempt)


def outbound_headers(headers: Mapping[str, str] | None) -> Mapping[str, str] | None:
    """`headers` with the context of the work under way added, for an outbound HTTP call (see
    `inject`); `headers` itself when there is none (never changed in place)."""
    if active.get() is None and _trigger_depth.get() is None:
        return headers
    carrier = dict(headers) if headers else {}
    inject(carrier)
    return carrier


def inject(headers: MutableMapping[str, str]) -> None:
    """Add the context of the work under way to an outbound call's `headers` in place: the
    current span's W3C `traceparent` (and `tracestate`) when traced, and the trigger depth of
    triggered work (`at_trigger_depth`)."""
    tracing = active.get()
    if tracing is not None:
        tracing.inject(headers)
    depth = _trigger_depth.get()
    if depth is not None:
        headers[TRIGGER_DEPTH_HEADER] = str(depth)


# The trigger depth of the work under way. Work a trigger started (a conversation, a workflow)
# runs at its delivery's depth + 1, and every HTTP call the server makes on its behalf carries
# it (`inject`, `outbound_headers`: connectors' MCP servers, tools' upstreams, fetched URLs,
# models). When such a call ends up at one of this server's webhooks, the receiver reads the
# header and cuts the loop at the configured maximum depth. Unset outside triggered work.
TRIGGER_DEPTH_HEADER = "X-Maestrale-Trigger-Depth"
_trigger_depth: ContextVar[int | None] = ContextVar("maestrale_trigger_depth", default=None)


@contextmanager
def at_trigger_depth(depth: int) -> Iterator[None]:
    """Run the block as work at trigger depth `depth` (its outbound calls carry it)."""
    token = _trigger_depth.set(depth)
    try:
        yield
    finally:
        _trigger_depth.reset(token)


def route_of(scope: Scope) -> str:
    """The matched route's template (bounded label cardinality), with its router prefixes: the
    name of a request's span, and a label of its metrics and of the roles' rules.

    FastAPI keeps the prefixed template of an included route in its own scope entry; the route
    object itself only knows the path it was declared with.
    """
    context = scope.get("fastapi", {}).get("effective_route_context")
    path = getattr(context, "path", None) or getattr(scope.get("route"), "path", None)
    return path if isinstance(path, str) else "<unmatched>"
