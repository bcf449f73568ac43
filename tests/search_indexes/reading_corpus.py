"""The corpus the retrieval API tests share: an index `docs` (custom 3-d vectors) of two
sources, a second index, and one not ready, seeded once per module."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI

from maestrale.core.auth.principal import Tenant
from tests.search_indexes.seed import Part, chunk_ids, seed_document, seed_index
from tests.support.app_fixtures import TenantKey, create_tenant, default_tenant

CHUNK_FIELDS = {
    "lang": {"type": "keyword"},
    "summary": {"type": "text"},
    "embedding": {"type": "dense_vector", "dimensions": 3},
}


def attrs(chunk_type: str = "text", page: int = 1, **fields: Any) -> dict[str, Any]:
    return {
        "locator": f"page={page}",
        "chunk_type": chunk_type,
        "parent_ref": None,
        "metadata": {"page": page},
        "fields": fields,
    }


@dataclass
class Corpus:
    tenant: Tenant
    other: TenantKey
    ids: dict[str, int]  # "a0".."a2", "b0", "x0" (the second index's) -> chunk id


async def seed_corpus(app: FastAPI) -> Corpus:
    db = app.state.services.db
    tenant = await default_tenant(db)
    docs = await seed_index(db, tenant, "docs", chunk_fields=CHUNK_FIELDS)
    a = await seed_document(
        db,
        tenant,
        docs,
        "a",
        [
            Part("the quick brown fox", [1, 0, 0], attrs(lang="en", summary="Fox summary")),
            Part("lazy dog sleeps", [0, 1, 0], attrs(page=2, lang="fr")),
            Part("brown dog and quick cat", [0.7, 0.7, 0], attrs("table", 2, lang="en")),
        ],
        fields={"year": 2020, "published": "2024-03-01T00:00:00Z"},
    )
    b = await seed_document(
        db, tenant, docs, "b", [Part("cat naps in the sun", [0, 0, 1])], fields={"year": 2023}
    )
    second = await seed_index(db, tenant, "second")
    x = await seed_document(db, tenant, second, "a", [Part("the quick brown fox", [1, 0, 0])])
    await seed_index(db, tenant, "building", status="provisioning")
    ids = dict(zip(("a0", "a1", "a2"), await chunk_ids(db, a), strict=True))
    ids["b0"] = (await chunk_ids(db, b))[0]
    ids["x0"] = (await chunk_ids(db, x))[0]
    return Corpus(tenant, await create_tenant(db), ids)
