"""`client.beta.users` and `client.beta.service_accounts` of each SDK release against a live
server: 2.8.0 has `users.get_identity` only; 2.10 adds the other identity lists and service
accounts; 3.x adds `whoami`. Every answer parses into the SDK's own models."""

from __future__ import annotations

from typing import Any

from tests.conformance.conftest import LiveServer
from tests.support.sdks import NEWEST_3, OWN, SdkProcess


def test_identity_and_service_accounts_through_each_sdk(
    any_sdk: SdkProcess, live_server: LiveServer
) -> None:
    sdk = any_sdk
    # 2.x sends the key in `x-api-key` on these routes, 3.x as a Bearer token.
    v3 = sdk.version == NEWEST_3
    scheme = "bearer_user_context_auth" if v3 else "dashboard_user_context_auth"
    security = {scheme: live_server.api_key}

    def ok(operation: str, **kwargs: Any) -> Any:
        return sdk.call("beta." + operation, **kwargs).ok()

    me = ok("users.get_identity", security=security)
    assert me["email"] == "owner@localhost" and me["api_key"]["id"]
    ws = me["workspace"]["id"]
    if sdk.version == OWN:
        return  # 2.8.0 has no other identity or service-account operation

    orgs = ok("users.list_organizations", security=security, offset=0, limit=10)
    assert [o["id"] for o in orgs["result"]["organizations"]] == [me["organization"]["id"]]
    spaces = ok("users.list_workspaces", security=security, offset=0, limit=10)
    assert ws in [w["id"] for w in spaces["result"]["workspaces"]]
    if v3:
        who = ok("users.whoami", security=security)
        assert who["principal"]["principal_type"] == "user" and who["workspace"]["id"] == ws

    S = "service_accounts."
    roles = ok(S + "list_assignable_roles", workspace_id=ws)["items"]
    contributor = next(r["uuid"] for r in roles if r["name"] == "workspace_contributor")
    name = "sdk-" + sdk.version.replace(".", "-")
    made = ok(S + "create", name=name, workspace_id=ws, description="d", role_ids=[contributor])
    sid = made["id"]
    assert made["workspace_id"] == ws and made["deleted_at"] is None
    listed = ok(S + "list", offset=0, limit=100, workspace_id=ws, include_deleted=False)
    assert sid in [a["id"] for a in listed["result"]["items"]]
    assert ok(S + "get", service_account_id=sid)["name"] == name
    assert ok(S + "update", service_account_id=sid, description="e")["description"] == "e"
    assert ok(S + "list_roles", service_account_id=sid)["items"] == [{"role_id": contributor}]
    dev = next(r["uuid"] for r in roles if r["name"] == "dev")
    assert ok(S + "set_roles", service_account_id=sid, role_ids=[dev])["items"] == [
        {"role_id": dev}
    ]
    deleted = sdk.call("beta." + S + "delete", service_account_id=sid)
    assert deleted.error is None, deleted
    gone = sdk.call("beta." + S + "get", service_account_id=sid)
    assert gone.status == 404
