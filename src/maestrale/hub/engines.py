"""Heavy engines loaded once per machine: the hub hosts the engines that load model weights into
the process (llama.cpp, e5, Whisper, PocketSphinx, RapidOCR, Piper), and each server process
gets a proxy per model that offers exactly the capabilities of the engine it stands for (the
gateway checks them with `isinstance`), each method a hub call or stream.

The moderation and classifier engines stay in each process: they are small heads over an
embeddings model, which they reach through the caller's embedder (a callback into the process's
gateway, so the e5 weights they use are the hub's anyway). Tesseract runs as a program of its own
per page already, and the builtin and upstream engines hold nothing heavy.

A model is loaded once, in the supervisor, whatever the number of server processes, and its
work queue is the machine's: one serial worker per model, as with one process. Each call carries
its caller's fair share (`maestrale.core.fair`: workspace and class), so that the hub's queue
serves workspaces in turn and interactive calls first, as a process's own would.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from maestrale.core.fair import Share, current, reset_current, set_current
from maestrale.engines.registry import EngineFactory, EngineRegistry, EngineUnavailable
from maestrale.engines.specs import ModelSpec
from maestrale.hub.client import HubClient

# The engine methods that cross, by how they cross.
CALLS = (
    "chat",
    "fim",
    "embed",
    "moderate",
    "classify",
    "recognize",
    "process_document",
    "transcribe",
)
STREAMS = (
    "chat_stream",
    "fim_stream",
    "transcribe_stream",
    "transcribe_realtime",
    "synthesize",
)
VALUES = ("hears_by_transcription",)
# Plain attributes, read once (a speech engine's `clones`), and methods of the model, answered
# once for the model served (a speech engine's `voices(model)`).
ATTRIBUTES = ("clones",)
OF_MODEL = ("voices",)
# Streams whose request carries its input as a queue (`audio`): it is fed through the hub.
FED = {"transcribe_realtime": "audio"}


HOSTED = frozenset({"llama_cpp", "e5", "faster_whisper", "pocketsphinx", "rapidocr", "piper"})


def hosted(engine: str) -> bool:
    """Whether an engine is loaded once by the hub rather than by every server process."""
    return engine in HOSTED


@dataclass(frozen=True, slots=True)
class Description:
    """What a hosted model's engine offers."""

    calls: tuple[str, ...] = ()
    streams: tuple[str, ...] = ()
    values: Mapping[str, Any] = field(default_factory=dict)
    attributes: Mapping[str, Any] = field(default_factory=dict)
    of_model: Mapping[str, Any] = field(default_factory=dict)


class EngineHost:
    """The hub side: the registry of the hosted models and the handlers that run their methods."""

    def __init__(
        self, specs: list[ModelSpec], factories: Mapping[str, EngineFactory] | None = None
    ) -> None:
        self.registry = EngineRegistry([spec for spec in specs if hosted(spec.engine)], factories)

    def describe(self) -> dict[str, Description]:
        described = {}
        for spec in self.registry.specs:
            engine = self._engine(spec.id)
            described[spec.id] = Description(
                calls=tuple(name for name in CALLS if hasattr(engine, name)),
                streams=tuple(name for name in STREAMS if hasattr(engine, name)),
                values={name: getattr(engine, name)() for name in VALUES if hasattr(engine, name)},
                attributes={
                    name: getattr(engine, name) for name in ATTRIBUTES if hasattr(engine, name)
                },
                of_model={
                    name: getattr(engine, name)(spec.id)
                    for name in OF_MODEL
                    if hasattr(engine, name)
                },
            )
        return described

    def _engine(self, model: str) -> Any:
        resolved = self.registry.resolve(model)
        if resolved is None:
            raise LookupError(f"model {model!r} is not hosted")
        return resolved.engine

    async def call(self, model: str, method: str, request: Any, share: Share | None = None) -> Any:
        if method not in CALLS:
            raise LookupError(f"{method!r} is not an engine call")
        shared = set_current(share or Share())
        try:
            return await getattr(self._engine(model), method)(request)
        finally:
            reset_current(shared)

    def stream(self, args: tuple[Any, ...], feed: asyncio.Queue[Any]) -> AsyncIterator[Any]:
        model, method, request, *rest = args
        if method not in STREAMS:
            raise LookupError(f"{method!r} is not an engine stream")
        if method in FED:
            request = replace(request, **{FED[method]: feed})
        items: AsyncIterator[Any] = getattr(self._engine(model), method)(request)
        return _shared(items, rest[0] if rest else Share())

    async def aclose(self) -> None:
        await self.registry.aclose()


class RemoteEngine:
    """A hosted model's engine as a server process sees it; subclassed per `Description`."""

    def __init__(self, client: HubClient, model: str) -> None:
        self._client = client
        self._model = model

    async def aclose(self) -> None:
        """The hub closes the engine itself."""


async def _shared(items: AsyncIterator[Any], share: Share) -> AsyncIterator[Any]:
    """`items` started under `share`: a local engine queues a stream on its first item."""
    try:
        shared = set_current(share)
        try:
            first = await anext(items)
        except StopAsyncIteration:
            return
        finally:
            reset_current(shared)
        yield first
        async for item in items:
            yield item
    finally:
        close = getattr(items, "aclose", None)
        if close is not None:
            await close()


def _call(method: str) -> Callable[..., Any]:
    async def call(self: RemoteEngine, request: Any) -> Any:
        return await self._client.call("engine.call", self._model, method, request, current())

    call.__name__ = method
    return call


def _stream(method: str) -> Callable[..., AsyncIterator[Any]]:
    field_name = FED.get(method)

    def stream(self: RemoteEngine, request: Any) -> AsyncIterator[Any]:
        if field_name is None:
            return self._client.stream("engine.stream", self._model, method, request, current())
        feed = getattr(request, field_name)
        sent = replace(request, **{field_name: None})
        share = current()
        return self._client.stream("engine.stream", self._model, method, sent, share, feed=feed)

    stream.__name__ = method
    return stream


def _value(value: Any) -> Callable[[RemoteEngine], Any]:
    return lambda self: value


def _of_model(value: Any) -> Callable[[RemoteEngine, str], Any]:
    return lambda self, model: value


def proxy_class(description: Description) -> type[RemoteEngine]:
    namespace: dict[str, Any] = {name: _call(name) for name in description.calls}
    namespace.update({name: _stream(name) for name in description.streams})
    namespace.update({name: _value(value) for name, value in description.values.items()})
    namespace.update(description.attributes)
    namespace.update({name: _of_model(value) for name, value in description.of_model.items()})
    return type("RemoteEngine", (RemoteEngine,), namespace)


def remote_factories(
    client: HubClient, described: Mapping[str, Description]
) -> dict[str, EngineFactory]:
    """Engine factories of a server process: every hosted engine becomes a proxy of the hub's."""

    def factory(spec: ModelSpec) -> object:
        description = described.get(spec.id)
        if description is None:
            raise EngineUnavailable(f"the engine host does not serve {spec.id!r}")
        return proxy_class(description)(client, spec.id)

    return {name: factory for name in HOSTED}
