"""The credentials of a connector at each level, under `/v1/connectors/{connector_id_or_name}/
{consumer_scope}/credentials` (`organization`, `workspace` or `user`): 2.8's fixed paths per
level and 3.x's `{consumer_scope}` paths are the same routes (an unknown scope is a 422), but
for the lists, which keep a path per level in 3.x too."""

from __future__ import annotations

import orjson
from fastapi import Response

from maestrale.connectors.dependencies import Credentials
from maestrale.connectors.keychain import Keychain
from maestrale.connectors.schemas import (
    LEVEL_OF,
    AuthType,
    ConsumerScope,
    CredentialsIn,
    MessageOut,
)
from maestrale.core.errors import error_responses
from maestrale.core.responses import json_bytes
from maestrale.core.routing import domain_router

credentials_router = domain_router(tags=["connectors"])

CREDENTIALS = "/{connector_id_or_name}/{consumer_scope}/credentials"


def _saved(body: CredentialsIn) -> MessageOut:
    return MessageOut(message=f"credentials {body.name!r} saved")


async def _listed(
    keychain: Keychain, connector_id_or_name: str, level: str, auth_type: str | None, default: bool
) -> Response:
    listed = await keychain.list_credentials(connector_id_or_name, level, auth_type, default)
    return json_bytes(orjson.dumps(listed))


# The lists keep a path per level in 3.x too.
@credentials_router.get(
    "/{connector_id_or_name}/organization/credentials",
    responses={200: {"description": "CredentialsResponse"}},
)
async def list_organization_credentials(
    connector_id_or_name: str,
    keychain: Credentials,
    auth_type: AuthType | None = None,
    fetch_default: bool = False,
) -> Response:
    """The organization-level credentials of a connector (names, types and status)."""
    return await _listed(keychain, connector_id_or_name, "org", auth_type, fetch_default)


@credentials_router.get(
    "/{connector_id_or_name}/workspace/credentials",
    responses={200: {"description": "CredentialsResponse"}},
)
async def list_workspace_credentials(
    connector_id_or_name: str,
    keychain: Credentials,
    auth_type: AuthType | None = None,
    fetch_default: bool = False,
) -> Response:
    """The workspace-level credentials of a connector (names, types and status)."""
    return await _listed(keychain, connector_id_or_name, "workspace", auth_type, fetch_default)


@credentials_router.get(
    "/{connector_id_or_name}/user/credentials",
    responses={200: {"description": "CredentialsResponse"}},
)
async def list_user_credentials(
    connector_id_or_name: str,
    keychain: Credentials,
    auth_type: AuthType | None = None,
    fetch_default: bool = False,
) -> Response:
    """The caller's user-level credentials of a connector (names, types and status)."""
    return await _listed(keychain, connector_id_or_name, "user", auth_type, fetch_default)


@credentials_router.post(CREDENTIALS, response_model=MessageOut, responses=error_responses((403,)))
async def create_credentials(
    connector_id_or_name: str,
    consumer_scope: ConsumerScope,
    body: CredentialsIn,
    keychain: Credentials,
) -> MessageOut:
    """Create or replace named credentials of a connector at a level (OAuth2 tokens, a bearer
    token or headers), kept sealed: 2.8's create-or-update and 3.x's create share this path."""
    await keychain.put_credentials(connector_id_or_name, LEVEL_OF[consumer_scope], body)
    return _saved(body)


@credentials_router.patch(CREDENTIALS, response_model=MessageOut, responses=error_responses((403,)))
async def update_credentials(
    connector_id_or_name: str,
    consumer_scope: ConsumerScope,
    body: CredentialsIn,
    keychain: Credentials,
) -> MessageOut:
    """Create or update named credentials of a connector at a level (3.x)."""
    await keychain.put_credentials(connector_id_or_name, LEVEL_OF[consumer_scope], body)
    return _saved(body)


@credentials_router.delete(
    CREDENTIALS + "/{credentials_name}",
    response_model=MessageOut,
    responses=error_responses((403,)),
)
async def delete_credentials(
    connector_id_or_name: str,
    consumer_scope: ConsumerScope,
    credentials_name: str,
    keychain: Credentials,
) -> MessageOut:
    """Delete named credentials of a connector at a level."""
    await keychain.delete_credentials(
        connector_id_or_name, LEVEL_OF[consumer_scope], credentials_name
    )
    return MessageOut(message=f"credentials {credentials_name!r} deleted")


@credentials_router.delete("/{connector_id_or_name}/user/credentials", response_model=MessageOut)
async def delete_all_user_credentials(
    connector_id_or_name: str, keychain: Credentials
) -> MessageOut:
    """Delete every user-level credential of the caller for a connector."""
    count = await keychain.delete_credentials(connector_id_or_name, "user", None)
    return MessageOut(message=f"{count} credentials deleted")
