"""Helpers of the files tests: uploads as the SDK sends them, extra keys with their own users."""

from __future__ import annotations

from typing import Any

import httpx

from maestrale.core.auth.principal import Tenant
from maestrale.core.auth.repository import KeyRepository, TenancyRepository
from maestrale.core.db import Database


async def upload(
    client: httpx.AsyncClient,
    content: bytes,
    filename: str = "data.jsonl",
    **fields: Any,
) -> httpx.Response:
    """POST /v1/files the way the SDK does: form fields first, then the file part."""
    data = {k: str(v) for k, v in fields.items()}
    files = {"file": (filename, content, "application/octet-stream")}
    return await client.post("/v1/files", data=data, files=files)


def jsonl(*docs: str) -> bytes:
    return "".join(doc + "\n" for doc in docs).encode()


async def user_key(db: Database, tenant: Tenant, email: str) -> str:
    """A standard key of a new user of the tenant's workspace."""
    async with db.transaction() as work:
        tenancy = TenancyRepository(work.session)
        user = await tenancy.create_user(tenant.organization_id, email, ["member"])
        await tenancy.add_member(tenant.workspace_id, user.id, ["member"])
        _, key = await KeyRepository(work.session).create_key(
            kind="standard",
            organization_id=tenant.organization_id,
            workspace_id=tenant.workspace_id,
            user_id=user.id,
            name=email,
        )
    return key
