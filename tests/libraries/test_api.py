"""Libraries CRUD over HTTP: the SDK's shapes, paging (pages and tokens), search, ownership,
and hostile input answered with a clear 4xx."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from maestrale.core.auth.principal import Tenant
from tests.libraries import support_api as s
from tests.support.app_fixtures import create_tenant, make_client

pytestmark = pytest.mark.both_databases("maestrale.libraries.repository")


@pytest.fixture(scope="module")
def backend(request: pytest.FixtureRequest) -> str:
    """Module scope: the refusals and the tests that only touch a library of their own share
    one app per backend (`shared_app`); the others keep an app of their own."""
    return str(request.param)


LIBRARY_KEYS = {
    "id",
    "name",
    "created_at",
    "updated_at",
    "owner_id",
    "owner_type",
    "total_size",
    "nb_documents",
    "chunk_size",
    "emoji",
    "description",
    "generated_description",
    "explicit_user_members_count",
    "explicit_workspace_members_count",
    "org_sharing_role",
    "generated_name",
}


async def test_create_read_update_delete(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    owner = await s.bootstrap_user(app.state.services.db, tenant)
    resp = await client.post(
        "/v1/libraries",
        json={
            "name": "Handbook",
            "description": "the staff handbook",
            "chunk_size": 256,
            "unknown": "ignored",
        },
    )
    assert resp.status_code == 201, resp.text
    created = resp.json()
    assert set(created) == LIBRARY_KEYS
    assert created["owner_type"] == "User" and created["owner_id"] == owner
    assert created["nb_documents"] == 0 and created["total_size"] == 0
    assert created["chunk_size"] == 256 and created["description"] == "the staff handbook"
    library_id = created["id"]

    got = (await client.get(f"/v1/libraries/{library_id}")).json()
    assert got == created

    patched = await client.patch(f"/v1/libraries/{library_id}", json={"name": "Manual"})
    assert patched.status_code == 200
    assert patched.json()["name"] == "Manual"
    assert patched.json()["description"] == "the staff handbook"  # not sent: unchanged
    put = await client.put(f"/v1/libraries/{library_id}", json={"description": None})
    assert put.status_code == 200
    assert put.json()["name"] == "Manual" and put.json()["description"] is None

    deleted = await client.delete(f"/v1/libraries/{library_id}")
    assert deleted.status_code == 200
    assert deleted.json()["id"] == library_id and deleted.json()["name"] == "Manual"
    for method in ("GET", "PATCH", "DELETE"):
        gone = await client.request(method, f"/v1/libraries/{library_id}", json={})
        assert gone.status_code == 404, method
        assert gone.json()["code"] == "library_not_found"


async def test_workspace_owned_library_and_keys_without_user(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    db = app.state.services.db
    userless = await s.caller(db, tenant.organization_id, workspace_id=tenant.workspace_id)
    async with make_client(app, userless.key) as bare:
        refused = await bare.post("/v1/libraries", json={"name": "x", "owner_type": "User"})
        assert refused.status_code == 400
        assert refused.json()["code"] == "invalid_owner_type"
        # Without a user, a library is the workspace's by default.
        created = (await bare.post("/v1/libraries", json={"name": "shared"})).json()
        assert created["owner_type"] == "Workspace"
        assert created["owner_id"] == tenant.workspace_id
    # Every key of the workspace owns it: the user's key may delete it.
    assert (await client.get(f"/v1/libraries/{created['id']}")).status_code == 200
    # A user's own library is not the workspace's.
    mine = await s.create_library(client, "mine")
    async with make_client(app, userless.key) as bare:
        assert (await bare.get(f"/v1/libraries/{mine}")).status_code == 404
        listed = (await bare.get("/v1/libraries")).json()["data"]
        assert [row["id"] for row in listed] == [created["id"]]
    assert (await client.delete(f"/v1/libraries/{created['id']}")).status_code == 200


async def test_list_pages_tokens_search_and_owned_filter(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    ids = [await s.create_library(client, f"lib {i}") for i in range(5)]
    ids.reverse()  # newest first
    first = (await client.get("/v1/libraries", params={"page_size": 2})).json()
    assert [row["id"] for row in first["data"]] == ids[:2]
    assert first["pagination"] == {
        "total_items": 5,
        "total_pages": 3,
        "current_page": 0,
        "page_size": 2,
        "has_more": True,
    }
    last = (await client.get("/v1/libraries", params={"page_size": 2, "page": 2})).json()
    assert [row["id"] for row in last["data"]] == ids[4:]
    assert last["pagination"]["has_more"] is False and last["next_page_token"] is None
    past = (await client.get("/v1/libraries", params={"page": 50})).json()
    assert past["data"] == [] and past["pagination"]["total_items"] == 5

    seen: list[str] = []
    params: dict[str, str | int] = {"page_size": 2}
    while True:
        body = (await client.get("/v1/libraries", params=params)).json()
        seen += [row["id"] for row in body["data"]]
        if body["next_page_token"] is None:
            break
        params = {"page_size": 2, "page_token": body["next_page_token"]}
    assert seen == ids

    found = (await client.get("/v1/libraries", params={"search": "LIB 3"})).json()["data"]
    assert [row["name"] for row in found] == ["lib 3"]
    wild = (await client.get("/v1/libraries", params={"search": "%"})).json()["data"]
    assert wild == []  # wildcards are taken literally

    other = await s.caller(
        app.state.services.db, tenant.organization_id, workspace_id=tenant.workspace_id
    )
    async with make_client(app, other.key) as bare:
        workspace_owned = await s.create_library(bare, "team")
    owned = (await client.get("/v1/libraries", params={"filter_owned_by_me": True})).json()
    all_ = (await client.get("/v1/libraries")).json()
    assert workspace_owned in [row["id"] for row in owned["data"]]  # the caller's workspace's
    assert len(owned["data"]) == len(all_["data"]) == 6


@pytest.mark.parametrize(
    "params",
    [
        {"page_size": 0},
        {"page_size": 1001},
        {"page": -1},
        {"page": 2**62},
        {"page": 2**70},
        {"page_size": 2**70},
        {"page_token": "not-a-token"},
        {"page_token": "eyJ0IjoxfQ"},  # {"t": 1}
        # {"t": "0001-01-01T00:00:00+05:00", "i": "x"}: before year 1 in UTC
        {"page_token": "eyJ0IjoiMDAwMS0wMS0wMVQwMDowMDowMCswNTowMCIsImkiOiJ4In0"},
        {"page_token": "x" * 2000},
        {"search": "x" * 513},
    ],
)
async def test_list_bounds_are_400s(
    shared_client: httpx.AsyncClient, params: dict[str, str | int]
) -> None:
    resp = await shared_client.get("/v1/libraries", params=params)
    assert resp.status_code in (400, 422), resp.text
    assert resp.headers["content-type"].startswith("application/json")


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"name": ""},
        {"name": "x" * 513},
        {"name": "a\u0000b"},
        {"name": "ok", "description": "d" * 10_001},
        {"name": "ok", "chunk_size": 0},
        {"name": "ok", "chunk_size": 10**9},
        {"name": "ok", "owner_type": "Org"},
        {"name": 12},
        {"name": ["a"]},
    ],
)
async def test_bad_creations_are_422(
    shared_client: httpx.AsyncClient, body: dict[str, object]
) -> None:
    resp = await shared_client.post("/v1/libraries", json=body)
    assert resp.status_code == 422, resp.text
    assert "detail" in resp.json()


async def test_lone_surrogates_and_bad_json_are_refused(shared_client: httpx.AsyncClient) -> None:
    for raw in (b'{"name": "\\ud800"}', b'{"name": "x"', b"[1, 2]", b"\xff\xfe"):
        resp = await shared_client.post(
            "/v1/libraries", content=raw, headers={"content-type": "application/json"}
        )
        assert 400 <= resp.status_code < 500, raw
    library_id = await s.create_library(shared_client)
    resp = await shared_client.patch(
        f"/v1/libraries/{library_id}",
        content=b'{"name": "\\udfff"}',
        headers={"content-type": "application/json"},
    )
    assert 400 <= resp.status_code < 500
    assert (await shared_client.get(f"/v1/libraries/{library_id}")).json()["name"] == "docs"


@pytest.mark.parametrize(
    "library_id",
    [
        "nope",
        "0" * 5000,
        "é-ü-😀",
        "%2e%2e",
        "' OR 1=1 --",
        "%ED%A0%80",  # a lone surrogate, UTF-8 encoded
    ],
)
async def test_unknown_ids_are_404(shared_client: httpx.AsyncClient, library_id: str) -> None:
    for path in ("", "/documents", "/share", "/documents/x", "/documents/x/status"):
        resp = await shared_client.get(f"/v1/libraries/{library_id}{path}")
        assert resp.status_code == 404, (library_id, path, resp.text)


async def test_another_organization_never_reaches_a_library(
    shared_app: FastAPI, shared_client: httpx.AsyncClient
) -> None:
    other = await create_tenant(shared_app.state.services.db)
    library_id = await s.create_library(shared_client, "secret", owner_type="Workspace")
    async with make_client(shared_app, other.key) as stranger:
        assert (await stranger.get("/v1/libraries")).json()["data"] == []
        for method, path, body in [
            ("GET", "", None),
            ("PATCH", "", {"name": "stolen"}),
            ("PUT", "", {"name": "stolen"}),
            ("DELETE", "", None),
            ("GET", "/share", None),
            (
                "PUT",
                "/share",
                {
                    "level": "Editor",
                    "share_with_uuid": other.tenant.workspace_id,
                    "share_with_type": "Workspace",
                },
            ),
            ("GET", "/documents", None),
        ]:
            resp = await stranger.request(method, f"/v1/libraries/{library_id}{path}", json=body)
            assert resp.status_code == 404, (method, path)
    assert (await shared_client.get(f"/v1/libraries/{library_id}")).json()["name"] == "secret"
