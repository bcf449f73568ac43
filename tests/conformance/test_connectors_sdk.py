"""`client.beta.connectors` of each SDK release (2.8.0, the newest 2.x, the newest 3.x) against a
live server: every answer parses into the SDK's own models (3.x and 2.10 fall back to
`UnknownConnector` when a connector lacks what their `MCPConnector` requires), through the
paths each release calls (2.8's fixed levels, 3.x's `{consumer_scope}`)."""

from __future__ import annotations

from typing import Any

from tests.support.sdks import NEWEST_3, OWN, SdkProcess

# `.invalid` never resolves: the connector is created all the same, its server unreached.
SERVER = "https://mcp.invalid/mcp"
C = "beta.connectors."


def test_connectors_through_each_sdk(any_sdk: SdkProcess) -> None:
    sdk, v28, v3 = any_sdk, any_sdk.version == OWN, any_sdk.version == NEWEST_3
    name = "sdk-" + sdk.version.replace(".", "-")

    def ok(operation: str, **kwargs: Any) -> Any:
        return sdk.call(C + operation, **kwargs).ok()

    body: dict[str, Any] = {"name": name, "description": "d", "server": SERVER}
    if v28:
        created = sdk.call(C + "create", **body)
    else:  # a discriminated body (MCP or HTTP connector), with 3.x's fields
        body.update(
            protocol="mcp",
            global_headers={"X-Team": {"value": "a", "is_secret": False}},
            auth_methods=[{"method_type": "bearer", "headers": [{"name": "X-Key"}]}],
        )
        created = sdk.call(C + "create", request=body)
    assert created.type in ("Connector", "MCPConnector"), created
    cid = created.ok()["id"]
    assert created.ok()["protocol"] == "mcp" and created.ok()["visibility"] == "private"
    if not v28:
        assert created.ok()["supports_mcp"] is True
        [method] = created.ok()["supported_auth_methods"]
        assert method["method_type"] == "bearer" and method["headers"][0]["name"] == "X-Key"

    filters = {"active": True} if v28 else {"supports_mcp": True}
    listed = ok("list", query_filters=filters, page_size=1000)
    assert cid in [c["id"] for c in listed["items"]]
    assert ok("get", connector_id_or_name=name)["id"] == cid
    if v28:
        updated = ok("update", connector_id=cid, title="T")
    else:
        updated = ok("update", connector_id=cid, request_body={"protocol": "mcp", "title": "T"})
    assert updated["title"] == "T"

    given = {"connector_id_or_name": name, "name": "k", "credentials": {"bearer_token": "t"}}
    if v28:
        assert ok("create_or_update_user_credentials", **given)["message"]
    else:
        assert ok("create_credentials", consumer_scope="user", **given)["message"]
        assert ok("update_credentials", consumer_scope="user", title="K", **given)["message"]
    [kept] = ok("list_user_credentials", connector_id_or_name=name)["credentials"]
    assert kept["name"] == "k" and kept["authentication_type"] == "bearer"
    assert kept["title"] == (None if v28 else "K")
    if v3:
        gone = ok(
            "delete_credentials",
            connector_id_or_name=name,
            consumer_scope="user",
            credentials_name="k",
        )
    else:
        gone = ok("delete_user_credentials", connector_id_or_name=name, credentials_name="k")
    assert gone["message"]
    assert ok("list_user_credentials", connector_id_or_name=name)["credentials"] == []

    if v28:
        assert ok("deactivate_for_user", connector_id=cid)["message"]
        assert ok("get", connector_id_or_name=cid)["active"] is False
        assert ok("activate_for_user", connector_id=cid)["message"]
    else:
        assert ok("deactivate_for_consumer", connector_id=cid, consumer_scope="user")["message"]
        assert ok("get", connector_id_or_name=cid)["blocked_by"] == ["user"]
        assert ok("activate_for_consumer", connector_id=cid, consumer_scope="user")["message"]
        assert ok("get", connector_id_or_name=cid)["blocked_by"] == []

    assert ok("share", connector_id=cid)["message"]
    assert ok("get", connector_id_or_name=cid)["visibility"] == "shared_workspace"
    assert ok("unshare", connector_id=cid)["message"]
    if not v28:
        assert ok("share_to_organization", connector_id=cid)["message"]
        assert ok("get", connector_id_or_name=cid)["visibility"] == "shared_org"
        assert ok("unshare_from_organization", connector_id=cid)["message"]
    assert ok("get", connector_id_or_name=cid)["visibility"] == "private"

    refused = sdk.call(C + "get", connector_id_or_name="no-such-connector")
    assert refused.status == 404 and "connector_not_found" in str(refused.body)
    assert ok("delete", connector_id=cid)["message"]
