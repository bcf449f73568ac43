"""Every destructive route of a workspace's shared resources checks the caller's role: a member
with the `user` role cannot delete, archive or stop them. The routes are read from the app, so
a destructive route added without the check fails here."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from fastapi import FastAPI

from tests.support.app_fixtures import make_client, member_key

# What a route's last segment says when it removes, stops or hides something (broader than
# today's routes, so that a new one is caught).
DESTROYING = re.compile(
    r"^(bulk-)?(delete|archive|cancel|terminate|deactivate|reset|remove|purge|revoke|destroy"
    r"|drop|erase|wipe|kill|clear)"
)
# The caller's own things (conversations: the chat every role has; a connector's /user/...
# routes: the key's user's own credentials and activation).
OWN = re.compile(r"^/v1/(conversations(/|$)|connectors/[^/]+/user(/|$))")


REFUSAL = "deletes or stops what the workspace shares"


def routes(app: FastAPI) -> Iterator[tuple[str, str]]:
    """(method, path template) of every HTTP route, as served (router prefixes included)."""
    for route in app.router.routes:
        contexts: Any = getattr(route, "effective_route_contexts", None)
        context: Any
        for context in contexts() if contexts else [route]:
            for method in getattr(context, "methods", None) or ():
                yield method, context.path


def destructive(app: FastAPI) -> list[tuple[str, str]]:
    found = set()
    for method, path in routes(app):
        if not path.startswith("/v1/") or path.startswith("/v1/admin/") or OWN.match(path):
            continue
        last = path.rstrip("/").rsplit("/", 1)[-1]
        if method == "DELETE" or (method in ("POST", "PUT") and DESTROYING.match(last)):
            found.add((method, path))
    return sorted(found)


def concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "x", path)


async def test_every_destructive_route_needs_a_role_with_shared_resources(app: FastAPI) -> None:
    found = destructive(app)
    # The routes, and the walk of the app's routes found them.
    for expected in (
        ("DELETE", "/v1/libraries/{library_id}"),
        ("DELETE", "/v1/models/{model_id:path}"),
        ("POST", "/v1/fine_tuning/models/{model_id:path}/archive"),
        ("POST", "/v1/batch/jobs/{job_id}/cancel"),
    ):
        assert expected in found
    user = await member_key(app, "user@example.com", workspace_roles=["user"])
    contributor = await member_key(
        app, "contributor@example.com", workspace_roles=["workspace_contributor"]
    )
    async with make_client(app, user) as plain, make_client(app, contributor) as allowed:
        for method, path in found:
            url = concrete(path)
            refused = await plain.request(method, url, json={})
            assert refused.status_code == 403, (method, path, refused.text)
            # Some groups render errors in their own shape: the message is in every one.
            assert REFUSAL in refused.text, (method, path, refused.text)
            passed = await allowed.request(method, url, json={})
            assert REFUSAL not in passed.text, (method, path)


async def test_a_user_cannot_delete_a_workspace_library_a_contributor_can(
    app: FastAPI, client: Any
) -> None:
    created = await client.post("/v1/libraries", json={"name": "shared", "owner_type": "Workspace"})
    assert created.status_code in (200, 201), created.text
    library = created.json()["id"]
    user = await member_key(app, "user@example.com", workspace_roles=["user"])
    contributor = await member_key(app, "contributor@example.com", workspace_roles=["contributor"])
    async with make_client(app, user) as plain, make_client(app, contributor) as allowed:
        refused = await plain.delete(f"/v1/libraries/{library}")
        assert refused.status_code == 403
        assert "workspace role with shared resources" in refused.json()["message"]
        assert (await plain.get(f"/v1/libraries/{library}")).status_code == 200
        assert (await allowed.delete(f"/v1/libraries/{library}")).status_code == 200
