"""A ready search index with documents whose chunks are embedded by the builtin
`maestrale-embed`, written straight into the store (`seed`), for the tests of what reads an
index (summaries, the retrieval tools) without going through the ingestion API."""

from __future__ import annotations

from typing import Any

from maestrale.core.auth.principal import Tenant
from maestrale.libraries.ingest.embedding import embed
from tests.search_indexes.seed import Part, seed_document, seed_index

EMBEDDINGS = "maestrale-embed"


async def seeded_index(
    services: Any, tenant: Tenant, name: str, documents: dict[str, list[str]]
) -> str:
    """The id of a new ready index `name` holding `documents` (source id -> chunk texts)."""
    embedded = {
        source: await embed(services, texts, model_name=EMBEDDINGS)
        for source, texts in documents.items()
    }
    dimension = next(iter(embedded.values())).vectors.shape[1] if embedded else 384
    index = await seed_index(
        services.db, tenant, name, dimension=dimension, embedding_model=EMBEDDINGS
    )
    for source, texts in documents.items():
        vectors = embedded[source].vectors.tolist()
        parts = [Part(text, vector) for text, vector in zip(texts, vectors, strict=True)]
        await seed_document(services.db, tenant, index, source, parts, model=embedded[source].model)
    return index.index_id
