"""Who reads and writes a prompt or a skill: the workspace (another one gets 404 everywhere),
its creator's user alone for a private object, the creator alone for a `reader` object's
writes."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from tests.registries.support import create, new_version, ok, prompt
from tests.support.app_fixtures import TenantKey, make_client, member_key

# Another user of the workspace, who may delete what the workspace shares (core/auth/roles.py).
CONTRIBUTOR = ["workspace_contributor"]


async def test_another_workspace_gets_404_on_everything(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    ids = {
        "prompts": (await prompt(client, "p"))["id"],
        "skills": (await create(client, "skills", "s", {"body": "b"}))["id"],
    }
    async with make_client(app, other.key) as stranger:
        for kind, id_ in ids.items():
            base = f"/v2/{kind}/{id_}"
            version = {"definition": {"content": "x"} if kind == "prompts" else {"body": "x"}}
            calls = [
                stranger.get(base),
                stranger.get(base.replace(id_, kind[0])),  # by name
                stranger.patch(base, json={"sharingScope": "private"}),
                stranger.delete(base),
                stranger.get(f"{base}/versions"),
                stranger.post(f"{base}/versions", json=version),
                stranger.get(f"{base}/versions/1"),
                stranger.patch(f"{base}/versions/1", json={"notes": "x"}),
            ]
            for call in calls:
                assert (await call).status_code == 404
            assert (await ok(stranger.get(f"/v2/{kind}"))) == {"data": []}
            # Its own object of the same name is another one.
            await create(stranger, kind, kind[0], version["definition"])
    assert (await ok(client.get("/v2/prompts/p")))["id"] == ids["prompts"]


@pytest.mark.parametrize("kind", ["prompts", "skills"])
async def test_private_objects_are_their_creators(
    app: FastAPI, client: httpx.AsyncClient, kind: str
) -> None:
    definition = {"content": "x"} if kind == "prompts" else {"body": "x"}
    mine = await create(client, kind, "mine", definition, sharingScope="private")
    assert mine["sharingScope"] == "private"
    async with make_client(
        app, await member_key(app, "dev@x.io", workspace_roles=CONTRIBUTOR)
    ) as dev:
        assert (await dev.get(f"/v2/{kind}/{mine['id']}")).status_code == 404
        assert (await ok(dev.get(f"/v2/{kind}"))) == {"data": []}
        # Its name stays taken in the workspace.
        taken = await dev.post(f"/v2/{kind}", json={"name": "mine", "definition": definition})
        assert taken.status_code == 409
        await ok(client.patch(f"/v2/{kind}/mine", json={"sharingScope": "workspace"}))
        assert (await ok(dev.get(f"/v2/{kind}/mine")))["id"] == mine["id"]


async def test_a_reader_relation_makes_the_object_read_only_for_others(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    await prompt(client, "shared", workspaceRelation="reader")
    async with make_client(
        app, await member_key(app, "dev@x.io", workspace_roles=CONTRIBUTOR)
    ) as dev:
        assert (await ok(dev.get("/v2/prompts/shared")))["workspaceRelation"] == "reader"
        writes = [
            dev.patch("/v2/prompts/shared", json={"title": "mine now"}),
            dev.delete("/v2/prompts/shared"),
            dev.post("/v2/prompts/shared/versions", json={"definition": {"content": "y"}}),
            dev.patch("/v2/prompts/shared/versions/1", json={"notes": "n"}),
        ]
        for write in writes:
            resp = await write
            assert resp.status_code == 403 and resp.json()["code"] == "read_only"
        # The creator still writes, and opens it to writers; only the creator shares.
        assert (await new_version(client, "shared", "v2"))["version"] == 2
        await ok(client.patch("/v2/prompts/shared", json={"workspaceRelation": "writer"}))
        await ok(dev.patch("/v2/prompts/shared", json={"title": "ours"}))
        resharing = await dev.patch("/v2/prompts/shared", json={"sharingScope": "private"})
        assert resharing.status_code == 403
