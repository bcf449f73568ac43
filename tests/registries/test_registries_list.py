"""Listing the registries (cursor pages in every sort order, filters) and what the domains that
run prompts and skills read of them (`RegistryLookup`): the repository's SQL, on both
databases."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from fastapi import FastAPI

from maestrale.core.auth.principal import Tenant
from maestrale.registries.lookup import RegistryLookup, RegistryNotFound
from tests.registries.support import new_version, ok, prompt

pytestmark = pytest.mark.both_databases("maestrale.registries.repository")


async def _walk(client: httpx.AsyncClient, **params: str) -> list[str]:
    """The names of every page of the list, following `nextPageToken` by 2."""
    names: list[str] = []
    token: str | None = None
    while True:
        query: dict[str, str | int] = {
            "pageSize": 2,
            **params,
            **({"pageToken": token} if token else {}),
        }
        page = await ok(client.get("/v2/prompts", params=query))
        assert len(page["data"]) <= 2
        names += [item["name"] for item in page["data"]]
        token = page.get("nextPageToken")
        if token is None:
            return names


async def test_cursor_pages_in_every_order_with_filters(client: httpx.AsyncClient) -> None:
    for name, title in (("beta", "B"), ("alpha", "C"), ("gamma-2", None), ("delta", "A")):
        await prompt(client, name, title=title)
    await new_version(client, "alpha", "changed", aliases=["production"])  # modified last
    created = ["beta", "alpha", "gamma-2", "delta"]

    assert await _walk(client) == created[::-1]  # newest first by default
    assert await _walk(client, **{"sort.field": "list_sort_field_created_at"}) == created[::-1]
    assert await _walk(client, sort_by="created_at", sort_direction="asc") == created
    assert await _walk(client, sort_by="name") == ["alpha", "beta", "delta", "gamma-2"]
    assert await _walk(
        client,
        **{"sort.field": "list_sort_field_name", "sort.direction": "list_sort_direction_desc"},
    ) == ["gamma-2", "delta", "beta", "alpha"]
    assert await _walk(client, sort_by="title") == ["gamma-2", "delta", "beta", "alpha"]
    assert (await _walk(client, sort_by="last_modified_at"))[0] == "alpha"

    assert await _walk(client, alias="production") == ["alpha"]
    assert await _walk(client, alias="staging") == []
    assert await _walk(client, name="GAM") == ["gamma-2"]
    assert await _walk(client, search="ta", sort_by="name") == ["beta", "delta"]
    assert await _walk(client, search="%") == []  # a literal, not a wildcard

    # A token is bound to its order; the two spellings of one sort must agree.
    first = await ok(client.get("/v2/prompts", params={"pageSize": 1}))
    other = await client.get(
        "/v2/prompts", params={"pageToken": first["nextPageToken"], "sort_by": "name"}
    )
    assert other.status_code == 400 and other.json()["code"] == "invalid_page_token"
    clash = await client.get(
        "/v2/prompts", params={"sort.field": "list_sort_field_name", "sort_by": "title"}
    )
    assert clash.status_code == 400
    # The default page is 50.
    assert len((await ok(client.get("/v2/prompts")))["data"]) == 4


async def test_the_lookup_resolves_by_id_name_version_and_alias(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    created = await prompt(client, "p", "one {{a}}", aliases=["production"])
    await new_version(client, "p", "two")
    await prompt(client, created["id"], "named after p's id")  # the id still wins
    async with app.state.services.db.transaction() as work:
        lookup = RegistryLookup(work.session, tenant)
        latest = await lookup.resolve("prompt", "p")
        assert (latest.id, latest.name, latest.version) == (created["id"], "p", 2)
        assert latest.definition == {"content": "two", "variables": []}
        pinned = await lookup.resolve("prompt", created["id"], alias="production")
        assert pinned.version == 1 and pinned.definition["variables"] == [{"name": "a"}]
        assert (await lookup.resolve("prompt", "p", version=1, alias="nope")).version == 1
        for ref, kwargs in (
            ("p", {"version": 3}),
            ("p", {"alias": "nope"}),
            ("missing", {}),
        ):
            with pytest.raises(RegistryNotFound):
                await lookup.resolve("prompt", ref, **kwargs)
        with pytest.raises(RegistryNotFound):  # a prompt is no skill
            await lookup.resolve("skill", "p")


async def test_concurrent_versions_never_share_a_number(client: httpx.AsyncClient) -> None:
    await prompt(client, "p")
    sent = [
        client.post("/v2/prompts/p/versions", json={"definition": {"content": f"v{i}"}})
        for i in range(6)
    ]
    answers = await asyncio.gather(*sent)
    # Each is a new version or a 409 to retry (a race lost), never a 500 nor a duplicate.
    assert {a.status_code for a in answers} <= {200, 409}, [a.text for a in answers]
    numbers = [a.json()["version"] for a in answers if a.status_code == 200]
    assert len(numbers) == len(set(numbers)) and numbers
    listed = (await ok(client.get("/v2/prompts/p/versions")))["data"]
    assert sorted(v["version"] for v in listed) == list(range(1, len(numbers) + 2))
