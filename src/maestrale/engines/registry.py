"""Builds engines from the catalog and resolves a model name (id or alias) to spec + engine."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from maestrale.catalog.config import CatalogError, ModelSpec
from maestrale.engines.builtin import BuiltinEngine
from maestrale.engines.protocols import Closeable

EngineFactory = Callable[[ModelSpec], object]


def _builtin(_: ModelSpec) -> object:
    return BuiltinEngine()


def default_factories() -> dict[str, EngineFactory]:
    """Engine name → factory of every engine this installation has."""
    return {"builtin": _builtin}


@dataclass(frozen=True, slots=True)
class ResolvedModel:
    spec: ModelSpec
    engine: object


class EngineRegistry:
    def __init__(self, specs: list[ModelSpec], factories: dict[str, EngineFactory] | None = None):
        self._factories = factories or default_factories()
        self.specs = specs
        self._by_name: dict[str, ResolvedModel] = {}
        self._engines: dict[tuple[str, str | None, str | None], object] = {}
        for spec in specs:
            resolved = ResolvedModel(spec, self._build(spec))
            for name in (spec.id, *spec.aliases):
                self._by_name[name] = resolved

    def _build(self, spec: ModelSpec) -> object:
        factory = self._factories.get(spec.engine)
        if factory is None:
            known = ", ".join(sorted(self._factories))
            raise CatalogError(
                f"model {spec.id!r}: unknown engine {spec.engine!r} (known: {known})"
            )
        # One engine object per (engine, upstream): models on the same server share its pool.
        key = (spec.engine, spec.base_url, spec.api_key_env)
        if key not in self._engines:
            self._engines[key] = factory(spec)
        return self._engines[key]

    def resolve(self, name: str) -> ResolvedModel | None:
        return self._by_name.get(name)

    async def aclose(self) -> None:
        for engine in self._engines.values():
            if isinstance(engine, Closeable):
                await engine.aclose()
