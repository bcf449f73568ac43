"""/v1/admin/api-keys: list, create and delete the organization's workspace API keys."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from maestrale.admin import keys_service
from maestrale.admin.context import Admin
from maestrale.admin.keys_schemas import ApiKeyCreate, ApiKeyCreated, ApiKeyDeleted, ApiKeyList
from maestrale.core.routing import domain_router

router = domain_router(prefix="/api-keys")


@router.get("", response_model=ApiKeyList)
async def get_api_keys(
    ctx: Admin,
    limit: Annotated[int | None, Query(ge=1, description="maximum number of results")] = None,
    offset: Annotated[int, Query(ge=0, description="results to skip")] = 0,
) -> ApiKeyList:
    """List the organization's live workspace API keys, masked (`hidden_key`; `key` is null)."""
    return ApiKeyList(keys=await keys_service.list_keys(ctx, limit, offset))


@router.post("", response_model=ApiKeyCreated)
async def create_api_key(body: ApiKeyCreate, ctx: Admin) -> ApiKeyCreated:
    """Create a workspace API key for a member of that workspace. The key is returned once;
    it works at once on the workspace's standard endpoints (`Authorization: Bearer`)."""
    created = await keys_service.create_key(ctx, body)
    await ctx.commit()
    return created


@router.delete("/{key_id}", response_model=ApiKeyDeleted)
async def delete_api_key(key_id: str, ctx: Admin) -> ApiKeyDeleted:
    """Delete (revoke) a key: refused at once on every replica."""
    await keys_service.delete_key(ctx, key_id)
    await ctx.commit()
    return ApiKeyDeleted(detail="API key deleted successfully")
