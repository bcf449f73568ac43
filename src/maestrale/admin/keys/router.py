"""/v1/admin/api-keys: list, create and delete the organization's workspace API keys."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query

from maestrale.admin.context import Admin
from maestrale.admin.keys.schemas import ApiKeyCreate, ApiKeyCreated, ApiKeyDeleted, ApiKeyList
from maestrale.admin.keys.service import KeyService
from maestrale.core.routing import domain_router

router = domain_router(prefix="/api-keys")


async def key_service(ctx: Admin) -> KeyService:
    return KeyService(ctx)


Keys = Annotated[KeyService, Depends(key_service)]


@router.get("", response_model=ApiKeyList)
async def get_api_keys(
    keys: Keys,
    limit: Annotated[int | None, Query(ge=1, description="maximum number of results")] = None,
    offset: Annotated[int, Query(ge=0, description="results to skip")] = 0,
) -> ApiKeyList:
    """List the organization's live workspace API keys, masked (`hidden_key`; `key` is null)."""
    return ApiKeyList(keys=await keys.list_keys(limit, offset))


@router.post("", response_model=ApiKeyCreated)
async def create_api_key(body: ApiKeyCreate, keys: Keys) -> ApiKeyCreated:
    """Create a workspace API key for a member of that workspace. The key is returned once;
    it works at once on the workspace's standard endpoints (`Authorization: Bearer`)."""
    return await keys.create_key(body)


@router.delete("/{key_id}", response_model=ApiKeyDeleted)
async def delete_api_key(key_id: str, keys: Keys) -> ApiKeyDeleted:
    """Delete (revoke) a key: refused at once on every replica."""
    await keys.delete_key(key_id)
    return ApiKeyDeleted(detail="API key deleted successfully")
