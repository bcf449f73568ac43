"""One model call: what it targets (its engine typed by the capability it was opened for), who
makes it, what its hooks reserved, and what it reports to accounting."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from maestrale.catalog.artifacts import ArtifactFormat
from maestrale.core.errors import AppError, UpstreamError, UpstreamTimeout
from maestrale.engines.specs import ModelSpec
from maestrale.engines.types import EngineError, Usage
from maestrale.gateway.hooks import Caller, CallHook, CallInfo

E_co = TypeVar("E_co", covariant=True)

# The status recorded for a call the client abandoned (a stream it stopped reading).
CLIENT_CLOSED = 499


@dataclass(frozen=True, slots=True)
class Artifact:
    """A fine-tuned model's artifact as its engine takes it: a local file, of `format`."""

    path: str
    format: ArtifactFormat


@dataclass(slots=True)
class Call(Generic[E_co]):
    """One opened call: its model and engine, its caller, and its admission and timings.

    `engine` implements the Protocol of the capability the call was opened for (`Call[ChatEngine]`
    for `CHAT`...). `reservations` holds, in order, each hook that admitted the call with what it
    reserved; accounting hands each reservation back to its own hook."""

    caller: Caller
    spec: ModelSpec
    engine: E_co
    model: str  # the name the client used
    upstream: str  # the name the engine is given
    endpoint: str
    correlation_id: str
    source: str
    info: CallInfo
    artifact: Artifact | None = None  # a fine-tuned model's, served by the base's engine
    reservations: list[tuple[CallHook, object | None]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # the request's metadata, for the event
    started: float = field(default_factory=time.perf_counter)
    engine_seconds: float = 0.0
    completion_id: str = field(default_factory=lambda: f"cmpl-{uuid.uuid4().hex}")
    created: int = field(default_factory=lambda: int(time.time()))

    def artifact_file(self, wanted: ArtifactFormat) -> str | None:
        """The local file of the fine-tuned model's artifact if it is of the `wanted` format
        (the one the engine called serves), else None: the base's own."""
        artifact = self.artifact
        return artifact.path if artifact is not None and artifact.format is wanted else None


@dataclass(frozen=True, slots=True)
class Report:
    """What a call reports to accounting: its tokens, the assistant messages it produced (for
    the chat completion event), and the units priced besides tokens (transcription's
    `audio_seconds`, OCR's `pages`)."""

    usage: Usage | None = None
    outputs: list[dict[str, Any]] | None = None
    audio_seconds: float = 0.0
    pages: int = 0


NOTHING = Report()  # what a failed call reports


class HasUsage(Protocol):
    @property
    def usage(self) -> Usage: ...


def usage_report(result: HasUsage) -> Report:
    """The report of a result that carries only its token usage (moderation, classification,
    embeddings)."""
    return Report(result.usage)


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
