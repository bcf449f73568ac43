"""FIM and embeddings over HTTP on the builtin engine."""

from __future__ import annotations

import asyncio
import base64
import json
import math
import struct
import threading

import httpx
import pytest

from maestrale.engines.builtin import embeddings as builtin_embeddings
from maestrale.engines.types import EmbeddingRequest as EngineEmbeddingRequest
from maestrale.engines.types import EmbeddingResult


async def test_fim_plain_and_streamed(client: httpx.AsyncClient) -> None:
    body = {"model": "maestrale-echo", "prompt": "def add(a, b):", "suffix": "return c"}
    resp = await client.post("/v1/fim/completions", json=body)
    assert resp.status_code == 200
    assert resp.json()["choices"][0]["message"]["content"] == "echo: def add(a, b):"
    streamed = await client.post("/v1/fim/completions", json={**body, "stream": True})
    assert streamed.text.rstrip().endswith("data: [DONE]")
    frames = [f.removeprefix("data: ") for f in streamed.text.split("\n\n") if f.strip()]
    deltas = [json.loads(f)["choices"][0]["delta"] for f in frames[:-1]]
    # Every delta has string content, the finish chunk's included (clients concatenate it).
    assert "".join(delta["content"] for delta in deltas) == "echo: def add(a, b):"
    assert deltas[-1] == {"content": ""}


async def test_fim_needs_the_capability(client: httpx.AsyncClient) -> None:
    resp = await client.post(
        "/v1/fim/completions", json={"model": "maestrale-embed", "prompt": "x"}
    )
    assert resp.status_code == 400
    resp = await client.post(
        "/v1/fim/completions",
        json={"model": "maestrale-echo", "prompt": "x", "min_tokens": 5, "max_tokens": 2},
    )
    assert resp.status_code == 400
    assert "min_tokens" in resp.text


async def test_embeddings_shapes(client: httpx.AsyncClient) -> None:
    resp = await client.post(
        "/v1/embeddings", json={"model": "maestrale-embed", "input": ["a cat", "a dog"]}
    )
    assert resp.status_code == 200
    body = resp.json()
    assert body["object"] == "list"
    assert [d["index"] for d in body["data"]] == [0, 1]
    vec = body["data"][0]["embedding"]
    assert len(vec) == 1024
    assert math.isclose(math.sqrt(sum(v * v for v in vec)), 1.0, rel_tol=1e-6)
    assert body["usage"]["prompt_tokens"] > 0
    single = await client.post(
        "/v1/embeddings", json={"model": "maestrale-embed", "input": "a cat"}
    )
    assert single.json()["data"][0]["embedding"] == vec


async def test_embeddings_dtypes_and_base64(client: httpx.AsyncClient) -> None:
    base = {"model": "maestrale-embed", "input": "hello world", "output_dimension": 16}
    floats = (await client.post("/v1/embeddings", json=base)).json()["data"][0]["embedding"]
    int8 = (await client.post("/v1/embeddings", json={**base, "output_dtype": "int8"})).json()[
        "data"
    ][0]["embedding"]
    assert int8 == [max(-128, min(127, round(v * 127))) for v in floats]
    binary = (await client.post("/v1/embeddings", json={**base, "output_dtype": "ubinary"})).json()
    assert len(binary["data"][0]["embedding"]) == 2
    b64 = (await client.post("/v1/embeddings", json={**base, "encoding_format": "base64"})).json()
    decoded = struct.unpack("<16f", base64.b64decode(b64["data"][0]["embedding"]))
    assert [round(v, 5) for v in decoded] == [round(v, 5) for v in floats]


async def test_embedding_errors(client: httpx.AsyncClient) -> None:
    assert (
        await client.post("/v1/embeddings", json={"model": "maestrale-embed", "input": []})
    ).status_code == 400
    assert (
        await client.post("/v1/embeddings", json={"model": "maestrale-echo", "input": "x"})
    ).status_code == 400
    assert (
        await client.post("/v1/embeddings", json={"model": "maestrale-embed"})
    ).status_code == 422
    resp = await client.post(
        "/v1/embeddings", json={"model": "maestrale-embed", "input": "x", "output_dtype": "int4"}
    )
    assert resp.status_code == 422


async def test_health_answers_during_a_large_embeddings_call(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A megabyte of text takes the builtin engine a second or more to hash: it must not hold
    # the event loop meanwhile. The order of the answers tells, not their timings.
    embedding = threading.Event()
    embed = builtin_embeddings.embed

    def watched(request: EngineEmbeddingRequest) -> EmbeddingResult:
        embedding.set()
        return embed(request)

    monkeypatch.setattr(builtin_embeddings, "embed", watched)
    answered: list[str] = []

    async def large() -> None:
        text = "the quick brown fox jumps over the lazy dog " * 25_000
        body = {"model": "maestrale-embed", "input": [text]}
        response = await client.post("/v1/embeddings", json=body)
        assert response.status_code == 200, response.text
        answered.append("embeddings")

    task = asyncio.create_task(large())
    assert await asyncio.to_thread(embedding.wait, 60)
    health = await client.get("/health")
    assert health.status_code == 200
    answered.append("health")
    await task
    assert answered == ["health", "embeddings"]
