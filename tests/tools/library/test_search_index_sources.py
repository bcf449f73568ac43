"""The retrieval tools search a search index named in place of a library: `document_library`
(by the index's id or name; an index of custom vectors by keywords; passages of several
searches merged and cited by their source ids) and the Responses API's `file_search` (its
`vector_store_ids`); an id that names neither stays a 404, and another workspace's index is
never reached."""

from __future__ import annotations

import json

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import update

from maestrale.core.auth.principal import Tenant
from maestrale.core.errors import NotFound
from maestrale.search_indexes.tables import SearchIndex
from maestrale.tools.base import ToolContext
from maestrale.tools.library import DocumentLibrary
from tests.search_indexes.seeded import seeded_index
from tests.support import app_fixtures

HARBOUR = {
    "quay.md": ["The northern quay opened in April after the storm."],
    "channel.md": ["Dredging of the channel happened twice, in March and in September."],
}
BAKERY = {"bread.md": ["Sourdough needs a starter fed every day with flour and water."]}


async def test_document_library_searches_indexes_by_id_and_name(app: FastAPI) -> None:
    services = app.state.services
    tenant = await app_fixtures.default_tenant(services.db)
    harbour = await seeded_index(services, tenant, "harbour", HARBOUR)
    bakery = await seeded_index(services, tenant, "bakery", BAKERY)
    async with services.db.transaction() as work:  # the bakery's vectors are the caller's
        custom = update(SearchIndex).where(SearchIndex.id == bakery).values(embedding_model=None)
        await work.session.execute(custom)
    tool = DocumentLibrary()
    entry = {"library_ids": ["harbour", bakery]}
    async with services.db.transaction() as work:
        await tool.check(work.session, tenant, entry)
        with pytest.raises(NotFound) as unknown:
            await tool.check(work.session, tenant, {"library_ids": ["harbour", "nowhere"]})
    assert unknown.value.code == "library_not_found"

    found = await tool.run(ToolContext(tenant, services, entry), {"query": "channel dredging"})
    assert found.error is None
    first = found.info["results"][0]
    assert (first["document_name"], first["library_id"]) == ("channel.md", harbour)
    assert found.output.startswith("[1] channel.md, page 1:\nDredging of the channel")
    # The bakery's passages come from its keywords, merged with the harbour's by score.
    sourdough = await tool.run(ToolContext(tenant, services, entry), {"query": "sourdough"})
    assert "bread.md" in [r["document_name"] for r in sourdough.info["results"]]

    other = await app_fixtures.create_tenant(services.db)
    stranger = ToolContext(other.tenant, services, {"library_ids": [harbour]})
    refused = await tool.run(stranger, {"query": "channel"})
    assert refused.error is not None and not refused.references


async def test_file_search_of_a_response_searches_an_index(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    await seeded_index(app.state.services, tenant, "harbour", HARBOUR)
    call = f"/call document_library {json.dumps({'query': 'when did the quay open'})}"
    tools = [{"type": "file_search", "vector_store_ids": ["harbour"]}]
    response = await client.post(
        "/v1/responses", json={"model": "maestrale-echo", "input": call, "tools": tools}
    )
    assert response.status_code == 200, response.text
    text = response.json()["output_text"]
    assert text.startswith("tool document_library returned: [1] quay.md, page 1:")
    assert "The northern quay opened in April" in text
