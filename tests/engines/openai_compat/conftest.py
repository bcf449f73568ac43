"""A real stub upstream in a subprocess (one per session) and engines pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from maestrale.engines.openai_compat import OpenAICompatEngine, create_engine
from maestrale.engines.specs import ModelSpec
from tests.engines.openai_compat.support import Stub, start_stub, stop_stub

MakeEngine = Callable[..., OpenAICompatEngine]


@pytest.fixture(scope="session")
def stub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stub]:
    running = start_stub(tmp_path_factory.mktemp("stub") / "stub.log")
    yield running
    stop_stub(running)


@pytest.fixture
async def make_engine(stub: Stub) -> AsyncIterator[MakeEngine]:
    """Build engines as the registry would, from a catalog entry; all closed at the end."""
    engines: list[OpenAICompatEngine] = []

    def make(
        *, base_url: str | None = None, api_key_env: str | None = None, **options: Any
    ) -> OpenAICompatEngine:
        spec = ModelSpec(
            id="stub-model",
            engine="openai_compat",
            base_url=base_url or stub.url,
            api_key_env=api_key_env,
            options=options,
        )
        engine = create_engine(spec)
        engines.append(engine)
        return engine

    yield make
    for engine in engines:
        await engine.aclose()


@pytest.fixture
def engine(make_engine: MakeEngine) -> OpenAICompatEngine:
    return make_engine()
