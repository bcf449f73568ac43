"""The /v1/models group over HTTP: shapes as the SDK parses them, tenancy, and the rules on
base models."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from maestrale.core.auth.principal import Tenant
from tests.catalog.factories import create_fine_tuned
from tests.support.app_fixtures import TenantKey, make_client

pytestmark = pytest.mark.both_databases("maestrale.catalog.repository")

CAPABILITY_FLAGS = {
    "completion_chat",
    "function_calling",
    "reasoning",
    "completion_fim",
    "fine_tuning",
    "vision",
    "ocr",
    "classification",
    "moderation",
    "audio",
    "audio_transcription",
    "audio_transcription_realtime",
    "audio_speech",
    "unified_resources",
}


async def test_list_has_catalog_models_with_full_cards(client: httpx.AsyncClient) -> None:
    resp = await client.get("/v1/models")
    assert resp.status_code == 200
    body = resp.json()
    assert body["object"] == "list"
    echo = next(m for m in body["data"] if m["id"] == "maestrale-echo")
    assert echo["type"] == "base"
    assert echo["object"] == "model"
    assert echo["aliases"] == ["echo"]
    assert echo["max_context_length"] == 32768
    assert set(echo["capabilities"]) == CAPABILITY_FLAGS
    assert echo["capabilities"]["completion_chat"] is True
    assert echo["capabilities"]["vision"] is False
    assert "test double" in echo["description"]


async def test_list_includes_own_fine_tuned_models_only(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant, other: TenantKey
) -> None:
    mine = await create_fine_tuned(app.state.services.db, tenant)
    theirs = await create_fine_tuned(app.state.services.db, other.tenant)
    ids = {m["id"] for m in (await client.get("/v1/models")).json()["data"]}
    assert mine.id in ids
    assert theirs.id not in ids
    card = next(m for m in (await client.get("/v1/models")).json()["data"] if m["id"] == mine.id)
    assert card["type"] == "fine-tuned"
    assert card["root"] == "maestrale-echo"
    assert card["job"] == mine.job
    assert card["archived"] is False
    assert card["workspace_id"] == tenant.workspace_id


async def test_list_filters(client: httpx.AsyncClient) -> None:
    resp = await client.get("/v1/models", params={"model": "echo"})
    assert [m["id"] for m in resp.json()["data"]] == ["maestrale-echo"]
    resp = await client.get("/v1/models", params={"provider": "nobody"})
    assert resp.json()["data"] == []


async def test_retrieve_base_by_id_and_alias(client: httpx.AsyncClient) -> None:
    by_id = await client.get("/v1/models/maestrale-echo")
    by_alias = await client.get("/v1/models/echo")
    assert by_id.status_code == by_alias.status_code == 200
    assert by_id.json() == by_alias.json()
    assert by_id.json()["type"] == "base"


async def test_retrieve_unknown_and_foreign_are_404(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    theirs = await create_fine_tuned(app.state.services.db, other.tenant)
    for model_id in ("no-such-model", theirs.id):
        resp = await client.get(f"/v1/models/{model_id}")
        assert resp.status_code == 404
        assert resp.json()["code"] == "model_not_found"
    async with make_client(app, other.key) as theirs_client:
        assert (await theirs_client.get(f"/v1/models/{theirs.id}")).status_code == 200


async def test_update_archive_unarchive_delete(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    row = await create_fine_tuned(app.state.services.db, tenant)
    resp = await client.patch(
        f"/v1/fine_tuning/models/{row.id}", json={"name": "renamed", "description": "d", "x": 1}
    )
    assert resp.status_code == 200
    body = resp.json()
    assert body["name"] == "renamed"
    assert body["description"] == "d"
    assert body["model_type"] == "completion"
    for key in (
        "id",
        "created",
        "owned_by",
        "workspace_id",
        "root",
        "root_version",
        "archived",
        "capabilities",
    ):
        assert key in body

    resp = await client.post(f"/v1/fine_tuning/models/{row.id}/archive")
    assert resp.json() == {"id": row.id, "object": "model", "archived": True}
    assert (await client.get(f"/v1/models/{row.id}")).json()["archived"] is True
    resp = await client.delete(f"/v1/fine_tuning/models/{row.id}/archive")
    assert resp.json() == {"id": row.id, "object": "model", "archived": False}
    assert (await client.get(f"/v1/models/{row.id}")).json()["archived"] is False

    resp = await client.delete(f"/v1/models/{row.id}")
    assert resp.json() == {"id": row.id, "object": "model", "deleted": True}
    assert (await client.get(f"/v1/models/{row.id}")).status_code == 404
    assert (await client.delete(f"/v1/models/{row.id}")).status_code == 404


async def test_update_keeps_fields_not_sent(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    row = await create_fine_tuned(app.state.services.db, tenant)
    await client.patch(f"/v1/fine_tuning/models/{row.id}", json={"description": "first"})
    body = (await client.patch(f"/v1/fine_tuning/models/{row.id}", json={"name": "n"})).json()
    assert body["description"] == "first"
    assert body["name"] == "n"


async def test_classifier_model_update_shape(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    row = await create_fine_tuned(app.state.services.db, tenant, model_type="classifier")
    body = (await client.patch(f"/v1/fine_tuning/models/{row.id}", json={})).json()
    assert body["model_type"] == "classifier"
    assert body["classifier_targets"][0]["name"] == "topic"


async def test_base_models_cannot_be_changed(client: httpx.AsyncClient) -> None:
    for method, path in (
        ("DELETE", "/v1/models/maestrale-echo"),
        ("POST", "/v1/fine_tuning/models/maestrale-echo/archive"),
        ("DELETE", "/v1/fine_tuning/models/echo/archive"),
        ("PATCH", "/v1/fine_tuning/models/maestrale-echo"),
    ):
        resp = await client.request(method, path, json={} if method == "PATCH" else None)
        assert resp.status_code == 400, (method, path)
        assert resp.json()["code"] == "base_model_immutable"
    assert (await client.get("/v1/models/maestrale-echo")).status_code == 200


async def test_foreign_fine_tuned_model_cannot_be_changed(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    theirs = await create_fine_tuned(app.state.services.db, other.tenant)
    assert (await client.delete(f"/v1/models/{theirs.id}")).status_code == 404
    assert (await client.post(f"/v1/fine_tuning/models/{theirs.id}/archive")).status_code == 404
    assert (
        await client.patch(f"/v1/fine_tuning/models/{theirs.id}", json={"name": "x"})
    ).status_code == 404
    async with make_client(app, other.key) as theirs_client:
        card = (await theirs_client.get(f"/v1/models/{theirs.id}")).json()
    assert card["archived"] is False
    assert card["name"] == "my model"


async def test_update_validation(app: FastAPI, client: httpx.AsyncClient, tenant: Tenant) -> None:
    row = await create_fine_tuned(app.state.services.db, tenant)
    resp = await client.patch(f"/v1/fine_tuning/models/{row.id}", json={"name": 5})
    assert resp.status_code == 422
    assert resp.json()["detail"][0]["loc"] == ["body", "name"]
    resp = await client.patch(f"/v1/fine_tuning/models/{row.id}", content=b"[1,2")
    assert resp.status_code == 422
