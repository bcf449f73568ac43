"""OCR fixtures: engines loaded once per module, and apps whose OCR models use them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from maestrale.app import create_app
from maestrale.engines.registry import ResolvedModel
from maestrale.engines.specs import ModelSpec
from tests.support import databases
from tests.support.app_fixtures import make_client, test_settings

OCR_MODEL = "maestrale-ocr"


@pytest.fixture(scope="module")
async def rapid() -> AsyncIterator[Any]:
    pytest.importorskip("pypdfium2")
    pytest.importorskip("rapidocr")
    from maestrale.engines.local.rapidocr_engine import RapidOcrEngine, RapidOcrOptions

    engine = RapidOcrEngine(RapidOcrOptions())
    await engine.load()
    yield engine
    await engine.aclose()


def use_engine(app: FastAPI, model_id: str, engine: object) -> None:
    """Serve `model_id` (and its aliases) with an engine loaded once for the module, rather than
    the app's own, which would load its models again for every test."""
    registry = app.state.services.engines
    resolved = registry.resolve(model_id)
    assert resolved is not None, f"{model_id} is not in the catalog"
    spec: ModelSpec = resolved.spec
    for name in (spec.id, *spec.aliases):
        registry._by_name[name] = ResolvedModel(spec, engine)


AppFactory = Callable[..., Any]


async def _factory(database_url: str, tmp_path: Path, rapid: Any) -> AsyncIterator[AppFactory]:
    stack: list[tuple[FastAPI, Any]] = []

    async def build(**overrides: object) -> FastAPI:
        values: dict[str, object] = {"ocr_annotation_model": "maestrale-echo", **overrides}
        application = create_app(
            test_settings(database_url, tmp_path / f"data{len(stack)}", **values)
        )
        context = application.router.lifespan_context(application)
        await context.__aenter__()
        stack.append((application, context))
        use_engine(application, OCR_MODEL, rapid)
        return application

    yield build
    for _, context in reversed(stack):
        await context.__aexit__(None, None, None)


@pytest.fixture
async def ocr_app_factory(
    database_url: str, tmp_path: Path, rapid: Any
) -> AsyncIterator[AppFactory]:
    """Builds apps (settings overridable) whose OCR model runs on the shared RapidOCR engine;
    annotations use the builtin echo model."""
    async for factory in _factory(database_url, tmp_path, rapid):
        yield factory


@pytest.fixture
async def sqlite_ocr_client(
    sqlite_template: Path, tmp_path: Path, rapid: Any
) -> AsyncIterator[httpx.AsyncClient]:
    """A client of an OCR app on SQLite only, for tests of recognition, where the database plays
    no part (recognising is what is slow: once is enough)."""
    database_url = databases.copy_sqlite(sqlite_template, tmp_path)
    async for factory in _factory(database_url, tmp_path, rapid):
        async with make_client(await factory()) as client:
            yield client


@pytest.fixture
async def ocr_app(ocr_app_factory: AppFactory) -> FastAPI:
    app: FastAPI = await ocr_app_factory()
    return app


@pytest.fixture
async def ocr_client(ocr_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with make_client(ocr_app) as c:
        yield c
