"""Ingest fixtures: the local OCR engine loaded once per module, and the part of `Services` that
ingesting uses (settings and the engine registry of the default catalog), with no database."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest

from maestrale.config import Settings
from maestrale.engines.registry import EngineRegistry, ResolvedModel
from maestrale.engines.specs import ModelSpec, load_catalog


@dataclass
class EngineServices:
    settings: Settings
    engines: EngineRegistry


@pytest.fixture(scope="module")
async def rapid() -> AsyncIterator[Any]:
    pytest.importorskip("pypdfium2")
    pytest.importorskip("rapidocr")
    from maestrale.engines.local.rapidocr_engine import RapidOcrEngine, RapidOcrOptions

    engine = RapidOcrEngine(RapidOcrOptions())
    await engine.load()
    yield engine
    await engine.aclose()


def serve(registry: EngineRegistry, spec: ModelSpec, engine: object) -> None:
    """Serve `spec` (its id and aliases) with `engine` (one loaded once for the module)."""
    for name in (spec.id, *spec.aliases):
        registry._by_name[name] = ResolvedModel(spec, engine)


ServicesFactory = Callable[..., EngineServices]


@pytest.fixture
async def make_services() -> AsyncIterator[ServicesFactory]:
    """Services on the default catalog; settings overridable (the builtin embeddings model by
    default, as the tests of the other parts use)."""
    registries: list[EngineRegistry] = []

    def build(**overrides: Any) -> EngineServices:
        values: dict[str, Any] = {"library_embedding_model": "maestrale-embed", **overrides}
        registries.append(EngineRegistry(load_catalog()))
        return EngineServices(Settings(**values), registries[-1])

    yield build
    for registry in registries:
        await registry.aclose()
