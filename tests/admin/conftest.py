"""Admin fixtures: a client with the bootstrap admin key, and helpers that build members."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from maestrale.core.auth.repository import KeyRepository, TenancyRepository
from tests.support.app_fixtures import ADMIN_KEY


def admin_client(app: FastAPI, key: str = ADMIN_KEY) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://test", headers={"x-api-key": key}
    )


@pytest.fixture
async def admin(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with admin_client(app) as c:
        yield c


async def owner_id(admin: httpx.AsyncClient) -> str:
    users = (await admin.get("/v1/admin/users")).json()["members"]
    return str(next(u["uuid"] for u in users if u["email"] == "owner@localhost"))


async def default_workspace_id(admin: httpx.AsyncClient) -> str:
    items = (await admin.get("/v1/admin/workspaces")).json()["items"]
    return str(next(w["uuid"] for w in items if w["is_default"]))


async def create_user(admin: httpx.AsyncClient, email: str, **extra: Any) -> str:
    body = [{"email": email, "first_name": "First", "last_name": "Last", **extra}]
    resp = await admin.post("/v1/admin/users", json=body)
    assert resp.status_code == 200, resp.text
    return str(resp.json()["email_to_user_id"][email.lower()])


async def create_workspace(admin: httpx.AsyncClient, name: str, admin_user_id: str) -> str:
    resp = await admin.post(
        "/v1/admin/workspaces", json={"name": name, "admin_user_id": admin_user_id}
    )
    assert resp.status_code == 200, resp.text
    return str(resp.json()["uuid"])


async def create_key(admin: httpx.AsyncClient, user_id: str, workspace_id: str) -> dict[str, Any]:
    resp = await admin.post(
        "/v1/admin/api-keys", json={"user_id": user_id, "workspace_uuid": workspace_id}
    )
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


async def foreign_admin_key(app: FastAPI) -> tuple[str, str, str]:
    """Another organization with a workspace, a user and an admin key: (key, org, workspace)."""
    async with app.state.services.db.transaction() as work:
        tenancy = TenancyRepository(work.session)
        org = await tenancy.create_organization("foreign")
        ws = await tenancy.create_workspace(org.id, "foreign workspace")
        user = await tenancy.create_user(org.id, "someone@foreign.test", ["organization_admin"])
        await tenancy.add_member(ws.id, user.id, ["workspace_admin"])
        _, key = await KeyRepository(work.session).create_key(
            kind="admin", organization_id=org.id, workspace_id=None, user_id=user.id, name="f"
        )
        return key, org.id, ws.id
