"""The dimension of embeddings, by its two names (`output_dimension`, OpenAI's `dimensions`): a
Matryoshka model's vectors cut and renormalized, the builtin engine's made at that size."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import httpx
import openai
import pytest
from fastapi import FastAPI

from maestrale.app import create_app
from tests.support.app_fixtures import API_KEY, make_client
from tests.support.app_fixtures import test_settings as make_settings

TEXT = "the quick brown fox jumps over the lazy dog while a cat sleeps in the sun"
CATALOG = """
[[models]]
id = "nested-embed"
engine = "builtin"
capabilities = ["embeddings"]
matryoshka = true
"""


@pytest.fixture
async def app(database_url: str, tmp_path: Path) -> AsyncIterator[FastAPI]:
    models = tmp_path / "models.toml"
    models.write_text(CATALOG)
    application = create_app(make_settings(database_url, tmp_path / "data", models=models))
    async with application.router.lifespan_context(application):
        yield application


async def vector(client: httpx.AsyncClient, model: str, **body: object) -> list[float]:
    response = await client.post("/v1/embeddings", json={"model": model, "input": TEXT, **body})
    assert response.status_code == 200, response.text
    embedding: list[float] = response.json()["data"][0]["embedding"]
    return embedding


async def test_dimensions_by_either_name(app: FastAPI, client: httpx.AsyncClient) -> None:
    full = await vector(client, "nested-embed")
    assert len(full) == 1024
    norm = math.sqrt(sum(x * x for x in full[:64]))
    assert norm > 0
    cut = [x / norm for x in full[:64]]
    # A Matryoshka model: the first values of its vector, at unit length again.
    assert await vector(client, "nested-embed", dimensions=64) == pytest.approx(cut)
    assert await vector(client, "nested-embed", output_dimension=64) == pytest.approx(cut)
    # The builtin engine hashes to the dimension asked for (not a cut).
    hashed = await vector(client, "maestrale-embed", dimensions=16)
    assert len(hashed) == 16
    assert hashed == await vector(client, "maestrale-embed", output_dimension=16)

    # The OpenAI SDK sends `dimensions` (and asks for base64 floats).
    async with openai.AsyncOpenAI(
        api_key=API_KEY,
        base_url="http://test/v1",
        # openai 3.x types its client as httpx2's and takes a legacy httpx one at run time.
        http_client=cast(Any, make_client(app)),
    ) as sdk:
        answer = await sdk.embeddings.create(model="nested-embed", input=TEXT, dimensions=64)
    assert answer.data[0].embedding == pytest.approx(cut, rel=1e-6)

    both = {"model": "nested-embed", "input": "a cat", "dimensions": 8, "output_dimension": 9}
    refused = await client.post("/v1/embeddings", json=both)
    assert refused.status_code == 400 and refused.json()["param"] == "dimensions"
    longer = await client.post(
        "/v1/embeddings", json={"model": "nested-embed", "input": "a cat", "dimensions": 2048}
    )
    assert longer.status_code == 400
    assert "'nested-embed' returns 1024-dimensional" in longer.json()["message"]
