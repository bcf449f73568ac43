"""The connectors group through the official SDK (`client.beta.connectors`), against a real MCP
server: create, list, get, update, delete, tools and a direct tool call."""

from __future__ import annotations

import httpx
import pytest
from mistralai.client import Mistral
from mistralai.client.errors import SDKError
from mistralai.client.types.basemodel import Unset

from tests.support.mcp_servers import ServerProbe


async def test_create_reaches_the_server_and_caches_its_tools(
    sdk: Mistral, tools_server: tuple[str, ServerProbe]
) -> None:
    url, _ = tools_server
    created = await sdk.beta.connectors.create_async(
        name="tools", description="test tools", server=url, title="Tools"
    )
    assert created.name == "tools" and created.server == url
    assert created.visibility == "private" and created.owner_type == "user"
    card = created.server_card
    assert card is not None and not isinstance(card, Unset) and card.name
    names = {t.name for t in created.tools or []}
    assert {"echo", "add", "slow", "fail", "headers", "destroy"} <= names
    echo = next(t for t in created.tools or [] if t.name == "echo")
    assert echo.jsonschema and echo.jsonschema["properties"]["text"]

    by_name = await sdk.beta.connectors.get_async(connector_id_or_name="tools")
    by_id = await sdk.beta.connectors.get_async(connector_id_or_name=created.id)
    assert by_name.id == by_id.id == created.id

    listed = await sdk.beta.connectors.list_async()
    assert [c.id for c in listed.items] == [created.id]
    tools = await sdk.beta.connectors.list_tools_async(connector_id_or_name="tools")
    assert {t.name for t in tools} == names  # type: ignore[union-attr]

    called = await sdk.beta.connectors.call_tool_async(
        connector_id_or_name="tools", tool_name="add", arguments={"a": 2, "b": 40}
    )
    assert called.content[0].text == "42"  # type: ignore[union-attr]


async def test_crud_and_validation(
    conn_client: httpx.AsyncClient, tools_server: tuple[str, ServerProbe]
) -> None:
    url, _ = tools_server
    body = {"name": "one", "description": "d", "server": url}
    assert (await conn_client.post("/v1/connectors", json=body)).status_code == 201
    again = await conn_client.post("/v1/connectors", json=body)
    assert again.status_code == 409 and again.json()["code"] == "connector_name_taken"
    for bad in ("x" * 65, "has space", "dot.name", ""):
        r = await conn_client.post("/v1/connectors", json={**body, "name": bad})
        assert r.status_code == 422, bad
    both = {
        **body,
        "name": "two",
        "oauth2_server_metadata_url": "https://auth.example.com/.well-known/x",
        "oauth2_server_metadata": {
            "issuer": "https://auth.example.com",
            "authorization_endpoint": "https://auth.example.com/a",
            "token_endpoint": "https://auth.example.com/t",
        },
    }
    assert (await conn_client.post("/v1/connectors", json=both)).status_code == 422
    glob = await conn_client.post(
        "/v1/connectors", json={**body, "name": "g", "visibility": "shared_global"}
    )
    assert glob.status_code == 422

    updated = await conn_client.patch("/v1/connectors/one", json={"title": "One", "name": "uno"})
    assert updated.status_code == 200, updated.text
    assert updated.json()["title"] == "One" and updated.json()["name"] == "uno"
    assert (await conn_client.get("/v1/connectors/one")).status_code == 404
    gone = await conn_client.delete(f"/v1/connectors/{updated.json()['id']}")
    assert gone.status_code == 200 and "message" in gone.json()
    assert (await conn_client.get("/v1/connectors/uno")).status_code == 404


async def test_every_operation_parses_in_the_sdk(
    sdk: Mistral, tools_server: tuple[str, ServerProbe]
) -> None:
    """Each method of `client.beta.connectors` against this server: the SDK parses every
    answer (its required fields are there)."""
    url, _ = tools_server
    c = sdk.beta.connectors
    created = await c.create_async(
        name="all", description="d", server=url, headers={"X-Org": "v"}, visibility="private"
    )
    updated = await c.update_async(connector_id=created.id, title="All", description="dd")
    assert updated.title == "All" and updated.description == "dd"
    methods = await c.get_authentication_methods_async(connector_id_or_name="all")
    assert {m.method_type for m in methods} >= {"bearer"}
    for level in ("organization", "workspace", "user"):
        put = getattr(c, f"create_or_update_{level}_credentials_async")
        answer = await put(
            connector_id_or_name="all",
            name=f"{level}-creds",
            credentials={"bearer_token": f"{level}-token"},
            is_default=True,
        )
        assert answer.message
        listed = await getattr(c, f"list_{level}_credentials_async")(connector_id_or_name="all")
        assert [x.name for x in listed.credentials] == [f"{level}-creds"]
        assert listed.credentials[0].authentication_type == "bearer"
    for level in ("organization", "workspace"):
        gone = await getattr(c, f"delete_{level}_credentials_async")(
            connector_id_or_name="all", credentials_name=f"{level}-creds"
        )
        assert gone.message
    assert (
        await c.delete_user_credentials_async(
            connector_id_or_name="all", credentials_name="user-creds"
        )
    ).message
    assert (await c.delete_all_user_credentials_async(connector_id_or_name="all")).message
    for level in ("organization", "workspace", "user"):
        on = await getattr(c, f"activate_for_{level}_async")(
            connector_id=created.id, exclude=["fail"]
        )
        off = await getattr(c, f"deactivate_for_{level}_async")(connector_id=created.id)
        assert on.message and off.message
        await getattr(c, f"activate_for_{level}_async")(connector_id=created.id)
    fetched = await c.get_async(connector_id_or_name=created.id, fetch_user_data=True)
    assert fetched.active is True and fetched.connection_preferences
    assert (await c.share_async(connector_id=created.id)).message
    assert (await c.unshare_async(connector_id=created.id)).message
    assert (await c.get_async(connector_id_or_name=created.id)).visibility == "private"
    with pytest.raises(SDKError) as no_oauth:
        await c.get_auth_url_async(connector_id_or_name="all", credentials_name="x")
    assert no_oauth.value.status_code == 400
    assert (await c.delete_async(connector_id=created.id)).message
    assert (await c.list_async()).items == []
