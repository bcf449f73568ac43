"""Builds engines from the catalog and resolves a model name (id or alias) to spec + engine.

Engines are loaded lazily by name, so an engine whose optional extra is not installed costs
nothing until a catalog entry asks for it.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import orjson

from maestrale.engines.protocols import Closeable
from maestrale.engines.specs import CatalogError, ModelSpec

log = logging.getLogger("maestrale.engines")

EngineFactory = Callable[[ModelSpec], object]

# Engine name → "module:function" of its factory, and the extra that installs what it needs.
ENGINES: Mapping[str, tuple[str, str | None]] = MappingProxyType(
    {
        "builtin": ("maestrale.engines.builtin:create_engine", None),
        "builtin_moderation": ("maestrale.engines.builtin.moderation:create_engine", None),
        "openai_compat": ("maestrale.engines.openai_compat:create_engine", None),
        "llama_cpp": ("maestrale.engines.local.llama_cpp:create_engine", "local"),
        "e5": ("maestrale.engines.local.e5:create_engine", "local"),
        "local_moderation": (
            "maestrale.engines.local.moderation.engine:create_engine",
            "moderation",
        ),
        "classifier": ("maestrale.engines.local.classifier:create_engine", "moderation"),
        "openai_compat_moderation": (
            "maestrale.engines.openai_compat.moderation:create_engine",
            None,
        ),
        "rapidocr": ("maestrale.engines.local.rapidocr_engine:create_engine", "ocr"),
        "tesseract": ("maestrale.engines.local.tesseract_engine:create_engine", "ocr"),
        "openai_compat_ocr": ("maestrale.engines.openai_compat.ocr:create_engine", None),
        "faster_whisper": ("maestrale.engines.local.whisper:create_engine", "audio"),
        "pocketsphinx": ("maestrale.engines.local.sphinx:create_engine", "audio"),
        "openai_compat_transcription": (
            "maestrale.engines.openai_compat.transcription:create_engine",
            None,
        ),
        "builtin_speech": ("maestrale.engines.builtin.speech:create_engine", None),
        "piper": ("maestrale.engines.local.piper:create_engine", "speech"),
        "espeak": ("maestrale.engines.local.espeak:create_engine", None),
        "openai_compat_speech": ("maestrale.engines.openai_compat.speech:create_engine", None),
    }
)


# Engines made of other models of the catalog → "module:function" of their factory, which also
# gets `Lookup`: they are built after every other entry, and find their models through it.
COMPOSITE_ENGINES: Mapping[str, str] = MappingProxyType(
    {"audio_chat": "maestrale.engines.audio_chat:create_engine"}
)


class EngineUnavailable(Exception):
    """The engine exists but what it needs is not installed (or, for a composite engine, a model
    it names is not served)."""


def load_factory(name: str) -> EngineFactory:
    if name not in ENGINES:
        known = ", ".join(sorted((*ENGINES, *COMPOSITE_ENGINES)))
        raise CatalogError(f"unknown engine {name!r} (known: {known})")
    target, extra = ENGINES[name]
    module_name, func = target.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        hint = f"; install it with: pip install 'maestrale[{extra}]'" if extra else ""
        raise EngineUnavailable(f"engine {name!r} is not available ({exc}){hint}") from exc
    factory: EngineFactory = getattr(module, func)
    return factory


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    spec: ModelSpec
    engine: object


# A catalog name (id or alias) → the model serving it, or None.
Lookup = Callable[[str], ResolvedModel | None]
CompositeFactory = Callable[[ModelSpec, Lookup], object]


class EngineRegistry:
    def __init__(
        self, specs: list[ModelSpec], factories: Mapping[str, EngineFactory] | None = None
    ) -> None:
        self._factories = dict(factories or {})
        self.specs: list[ModelSpec] = []
        self._by_name: dict[str, ResolvedModel] = {}
        self._engines: dict[tuple[str, str | None, str | None, bytes], object] = {}
        served: dict[str, ResolvedModel] = {}
        composites = [spec for spec in specs if spec.engine in COMPOSITE_ENGINES]
        for spec in [spec for spec in specs if spec.engine not in COMPOSITE_ENGINES] + composites:
            try:
                engine = self._build(spec)
            except EngineUnavailable as exc:
                if not spec.optional:
                    raise CatalogError(f"model {spec.id!r}: {exc}") from exc
                log.warning("model %s is skipped: %s", spec.id, exc)
                continue
            except CatalogError as exc:
                raise CatalogError(f"model {spec.id!r}: {exc}") from exc
            resolved = served[spec.id] = ResolvedModel(spec, engine)
            for name in (spec.id, *spec.aliases):
                self._by_name[name] = resolved
        self.specs = [spec for spec in specs if spec.id in served]  # in the catalog's order

    def _build(self, spec: ModelSpec) -> object:
        if spec.engine in COMPOSITE_ENGINES:
            module_name, func = COMPOSITE_ENGINES[spec.engine].split(":")
            composite: CompositeFactory = getattr(importlib.import_module(module_name), func)
            return composite(spec, self.resolve)
        # One engine object per engine and upstream configuration: models served by the same
        # server share its connection pool, models of the same file share the loaded weights.
        key = (
            spec.engine,
            spec.base_url,
            spec.api_key_env,
            orjson.dumps(spec.options, option=orjson.OPT_SORT_KEYS),
        )
        if key not in self._engines:
            factory = self._factories.get(spec.engine) or load_factory(spec.engine)
            self._engines[key] = factory(spec)
        return self._engines[key]

    def resolve(self, name: str) -> ResolvedModel | None:
        return self._by_name.get(name)

    def serving(self, capability: str) -> list[ModelSpec]:
        """The models of a catalog capability, in the catalog's order with the real engines
        before the builtin test doubles (what a request that names no model gets first)."""
        specs = [spec for spec in self.specs if spec.has(capability)]
        return sorted(specs, key=lambda spec: spec.test_double)

    def best(self, capability: str) -> ModelSpec | None:
        """The model to offer for `capability` when the caller names none (the console's
        playground, OCR annotations, search index summaries): a real engine's, never a test
        double's; among those the one that calls functions, then the longest context, then the
        catalog's order. None when only test doubles, or nothing, serve it."""
        real = [
            (index, spec)
            for index, spec in enumerate(self.specs)
            if spec.has(capability) and not spec.test_double
        ]
        if not real:
            return None
        ranked = min(
            real,
            key=lambda item: (
                not item[1].has("function_calling"),
                -item[1].max_context_length,
                item[0],
            ),
        )
        return ranked[1]

    async def aclose(self) -> None:
        for engine in self._engines.values():
            if isinstance(engine, Closeable):
                await engine.aclose()
