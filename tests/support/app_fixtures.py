"""App fixtures: the ASGI app on the test's database with known bootstrap keys, and clients."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from maestrale.app import create_app
from maestrale.config import Settings
from maestrale.core.auth.principal import Tenant
from maestrale.core.auth.repository import KeyRepository, TenancyRepository
from maestrale.core.db import Database
from tests.support import databases

API_KEY = "msk_test_standard_key_0123456789abcdefghijklmnopqrstuv"
ADMIN_KEY = "msa_test_admin_key_0123456789abcdefghijklmnopqrstuvwx"


@dataclass(frozen=True)
class TenantKey:
    tenant: Tenant
    key: str


def test_settings(database_url: str, data_dir: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "data_dir": data_dir,
        "database_url": database_url,
        "bootstrap_api_key": API_KEY,
        "bootstrap_admin_key": ADMIN_KEY,
        "worker": False,
        "auto_migrate": False,
        "gc_freeze": False,
        "strict_connections": True,
        "log_json": False,
        "temporal_embedded": False,
    }
    values.update(overrides)
    return Settings.model_validate(values)


async def create_owner_key(admin: httpx.AsyncClient) -> dict[str, Any]:
    """A new standard key of the owner in the default workspace, through the admin API (`admin`
    sends an admin key): the created key's JSON, with `key` and `key_id`."""
    users = (await admin.get("/v1/admin/users")).json()["members"]
    owner = next(u["uuid"] for u in users if u["email"] == "owner@localhost")
    spaces = (await admin.get("/v1/admin/workspaces")).json()["items"]
    default = next(w["uuid"] for w in spaces if w["is_default"])
    created = await admin.post(
        "/v1/admin/api-keys", json={"user_id": owner, "workspace_uuid": default}
    )
    assert created.status_code in (200, 201), created.text
    body: dict[str, Any] = created.json()
    return body


@pytest.fixture
async def app(database_url: str, tmp_path: Path) -> AsyncIterator[FastAPI]:
    application = create_app(test_settings(database_url, tmp_path / "data"))
    async with application.router.lifespan_context(application):
        yield application


def make_client(app: FastAPI, key: str | None = API_KEY) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://test", headers=headers
    )


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with make_client(app) as c:
        yield c


@pytest.fixture
async def anon_client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with make_client(app, None) as c:
        yield c


async def default_tenant(db: Database) -> Tenant:
    async with db.transaction() as work:
        ws = await TenancyRepository(work.session).default_workspace()
        assert ws is not None
        return Tenant(ws.organization_id, ws.id)


async def create_tenant(db: Database, name: str = "other") -> TenantKey:
    """A second organization with its own workspace and standard key."""
    async with db.transaction() as work:
        tenancy = TenancyRepository(work.session)
        org = await tenancy.create_organization(name)
        ws = await tenancy.create_workspace(org.id, f"{name} workspace", is_default=False)
        _, key = await KeyRepository(work.session).create_key(
            kind="standard", organization_id=org.id, workspace_id=ws.id, user_id=None, name=name
        )
        return TenantKey(Tenant(org.id, ws.id), key)


async def member_key(
    app: FastAPI,
    email: str,
    *,
    workspace_roles: list[str],
    org_roles: tuple[str, ...] = ("member",),
) -> str:
    """The standard key of a new user of the default organization, member of its default
    workspace with `workspace_roles`."""
    async with app.state.services.db.transaction() as work:
        tenancy = TenancyRepository(work.session)
        ws = await tenancy.default_workspace()
        assert ws is not None
        user = await tenancy.create_user(ws.organization_id, email, list(org_roles))
        await tenancy.add_member(ws.id, user.id, workspace_roles)
        _, key = await KeyRepository(work.session).create_key(
            kind="standard",
            organization_id=ws.organization_id,
            workspace_id=ws.id,
            user_id=user.id,
            name=email,
        )
    return str(key)


# An app shared by the tests of a module that only read what it holds or are refused (or write
# only resources of their own and assert only on them): built, and seeded by the module, once per
# module and backend instead of once per test. A module using it overrides `backend` with a
# module-scoped fixture, so that its parametrization (tests/conftest.py) is per module; its
# tests whose writes could meet another's keep the function-scoped `app`.


@pytest.fixture(scope="module")
async def module_database_url(
    backend: str, sqlite_template: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[str]:
    """A migrated, empty database of the module's backend: a copy of the template on SQLite; on
    Postgres a database of its own, which `database_url` (emptying the run's database for each
    test that takes it) leaves alone."""
    if backend == "sqlite":
        yield databases.copy_sqlite(sqlite_template, tmp_path_factory.mktemp("module-db"))
        return
    url = await databases.create_postgres_database()
    try:
        yield url
    finally:
        await databases.drop_postgres_database(url)


@pytest.fixture(scope="module")
async def shared_app(
    module_database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[FastAPI]:
    """The app of `app`, on the module's database."""
    data_dir = tmp_path_factory.mktemp("module-app") / "data"
    application = create_app(test_settings(module_database_url, data_dir))
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def shared_client(shared_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with make_client(shared_app) as c:
        yield c


@pytest.fixture
async def shared_anon_client(shared_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with make_client(shared_app, None) as c:
        yield c


@pytest.fixture
async def tenant(app: FastAPI) -> Tenant:
    """The bootstrap workspace, whose key is API_KEY."""
    return await default_tenant(app.state.services.db)


@pytest.fixture
async def other(app: FastAPI) -> TenantKey:
    return await create_tenant(app.state.services.db)
