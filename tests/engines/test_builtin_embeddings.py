"""The builtin engine's deterministic feature-hashing embeddings."""

from __future__ import annotations

import math
from typing import Any

import pytest

from maestrale.engines.builtin import BuiltinEngine
from maestrale.engines.builtin.embeddings import features
from maestrale.engines.types import EmbeddingRequest, EngineError


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


async def embed(*inputs: str, **kwargs: Any) -> list[list[float]]:
    request = EmbeddingRequest(model="m", inputs=list(inputs), **kwargs)
    result = await BuiltinEngine().embed(request)
    return result.vectors


async def test_vectors_are_deterministic_across_engines() -> None:
    first = await embed("the quick brown fox")
    second = await embed("the quick brown fox")
    assert first == second
    assert any(x != 0 for x in first[0])


async def test_default_and_requested_dimensions() -> None:
    [default] = await embed("hello")
    assert len(default) == 1024
    for dimension in (1, 256, 8192):
        [vector] = await embed("hello", output_dimension=dimension)
        assert len(vector) == dimension


@pytest.mark.parametrize("dimension", [0, -1, 8193])
async def test_out_of_range_dimension_is_rejected(dimension: int) -> None:
    with pytest.raises(EngineError) as info:
        await embed("hello", output_dimension=dimension)
    assert info.value.status == 400


async def test_only_float_output_is_supported() -> None:
    with pytest.raises(EngineError) as info:
        await embed("hello", output_dtype="int8")
    assert info.value.status == 400
    assert "only float" in info.value.message


async def test_vectors_are_unit_length_and_empty_text_is_zero() -> None:
    vectors = await embed("Some text, with punctuation!", "a", "", "   ...  ")
    assert math.isclose(math.sqrt(sum(x * x for x in vectors[0])), 1.0)
    assert math.isclose(math.sqrt(sum(x * x for x in vectors[1])), 1.0)
    assert vectors[2] == [0.0] * 1024
    assert vectors[3] == [0.0] * 1024


async def test_features_are_signed() -> None:
    # Signed hashing keeps collisions from always adding up; both signs must occur.
    [vector] = await embed("a fairly long sentence with plenty of different words and trigrams")
    assert any(x > 0 for x in vector)
    assert any(x < 0 for x in vector)


async def test_similar_texts_are_closer_than_unrelated_ones() -> None:
    base, similar, unrelated = await embed(
        "the cat sat on the mat",
        "a cat was sitting on a mat",
        "quarterly revenue forecast for enterprise software",
    )
    assert cosine(base, similar) > cosine(base, unrelated) + 0.2
    assert math.isclose(cosine(base, base), 1.0)


async def test_case_is_ignored_and_order_follows_inputs() -> None:
    upper, lower, other = await embed("Hello World", "hello world", "goodbye")
    assert upper == lower
    assert upper != other
    [alone] = await embed("goodbye")
    assert alone == other


async def test_usage_counts_words_with_at_least_one_per_input() -> None:
    result = await BuiltinEngine().embed(
        EmbeddingRequest(model="m", inputs=["one two three", "", "four"])
    )
    assert result.usage.prompt_tokens == 3 + 1 + 1
    assert result.usage.completion_tokens == 0
    assert result.usage.total_tokens == 5


def test_features_are_words_and_padded_trigrams() -> None:
    assert features("Cat") == ["w:cat", "t:#ca", "t:cat", "t:at#"]
    assert features("a") == ["w:a", "t:#a#"]
    assert features("") == []
