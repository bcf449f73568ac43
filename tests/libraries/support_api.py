"""Helpers of the libraries API tests: keys of other workspaces and users of the same
organization, uploads as the SDK sends them, and a worker that runs the queued jobs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
from fastapi import FastAPI

from maestrale.core.auth.principal import Tenant
from maestrale.core.auth.repository import KeyRepository, TenancyRepository
from maestrale.core.db import Database
from maestrale.core.jobs.worker import Worker


@dataclass(frozen=True)
class Caller:
    """A key and what it is bound to."""

    key: str
    organization_id: str
    workspace_id: str
    user_id: str | None


async def caller(
    db: Database,
    organization_id: str,
    *,
    workspace_id: str | None = None,
    email: str | None = None,
) -> Caller:
    """A standard key in `workspace_id` (a new workspace of the organization when None), of a
    new user of the organization when `email` is given (else of no user)."""
    async with db.transaction() as work:
        tenancy = TenancyRepository(work.session)
        if workspace_id is None:
            workspace_id = (await tenancy.create_workspace(organization_id, "another")).id
        user_id = None
        if email is not None:
            user = await tenancy.create_user(organization_id, email, ["member"])
            await tenancy.add_member(workspace_id, user.id, ["member"])
            user_id = user.id
        _, key = await KeyRepository(work.session).create_key(
            kind="standard",
            organization_id=organization_id,
            workspace_id=workspace_id,
            user_id=user_id,
            name=email or "key",
        )
    return Caller(key, organization_id, workspace_id, user_id)


async def bootstrap_user(db: Database, tenant: Tenant) -> str:
    """The user of the bootstrap key (the owner)."""
    async with db.transaction() as work:
        from sqlalchemy import select

        from maestrale.core.auth.tables import User

        found = await work.session.execute(
            select(User.id).where(
                User.organization_id == tenant.organization_id, User.email == "owner@localhost"
            )
        )
        return str(found.scalar_one())


async def create_library(client: httpx.AsyncClient, name: str = "docs", **fields: Any) -> str:
    resp = await client.post("/v1/libraries", json={"name": name, **fields})
    assert resp.status_code == 201, resp.text
    return str(resp.json()["id"])


async def upload(
    client: httpx.AsyncClient,
    library_id: str,
    content: bytes,
    filename: str = "notes.txt",
    content_type: str = "text/plain",
) -> httpx.Response:
    files = {"file": (filename, content, content_type)}
    return await client.post(f"/v1/libraries/{library_id}/documents", files=files)


async def uploaded(
    client: httpx.AsyncClient, library_id: str, content: bytes, filename: str = "notes.txt"
) -> dict[str, Any]:
    resp = await upload(client, library_id, content, filename)
    assert resp.status_code == 201, resp.text
    body: dict[str, Any] = resp.json()
    return body


async def run_jobs(app: FastAPI, timeout: float = 60) -> None:
    """Run every due job (processing, expiry) until none is left."""
    services = app.state.services
    worker = Worker(
        services.db,
        services.job_registry,
        owner="test",
        concurrency=2,
        lease_seconds=30,
        poll_seconds=0.05,
    )
    await worker.run_until_idle(timeout)


def blob_files(app: FastAPI) -> list[str]:
    """The blobs stored, as paths relative to the blob directory."""
    root = app.state.settings.resolved_blob_dir
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
