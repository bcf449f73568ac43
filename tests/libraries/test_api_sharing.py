"""Sharing libraries across workspaces and users of an organization: what each role may do,
what unsharing takes back, and what another workspace never reaches (library, document,
content, signed link), nor another organization."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import FastAPI

from maestrale.core.auth.principal import Tenant
from maestrale.libraries.repository import LibraryRepository
from tests.libraries import support_api as s
from tests.support.app_fixtures import TenantKey, make_client

TEXT = b"Quarterly figures: revenue grew.\n"


def _share(level: str, kind: str, uuid: str, **extra: Any) -> dict[str, Any]:
    return {"level": level, "share_with_type": kind, "share_with_uuid": uuid, **extra}


async def _statuses(client: httpx.AsyncClient, library_id: str, doc_id: str) -> dict[str, int]:
    """What a caller gets from each action on a library and one of its documents."""
    base = f"/v1/libraries/{library_id}"
    doc = f"{base}/documents/{doc_id}"
    results = {
        "get": await client.get(base),
        "list_docs": await client.get(f"{base}/documents"),
        "get_doc": await client.get(doc),
        "status": await client.get(f"{doc}/status"),
        "content": await client.get(f"{doc}/content"),
        "signed_url": await client.get(f"{doc}/signed-url"),
        "accesses": await client.get(f"{base}/share"),
        "rename_doc": await client.patch(doc, json={"name": "renamed.txt"}),
        "reprocess": await client.post(f"{doc}/reprocess"),
        "upload": await s.upload(client, library_id, b"new", "new.txt"),
        "rename": await client.patch(base, json={"name": "renamed"}),
        "share": await client.put(
            f"{base}/share", json=_share("Viewer", "Org", "00000000-0000-0000-0000-000000000000")
        ),
        "delete": await client.delete(base),
    }
    return {name: resp.status_code for name, resp in results.items()}


READ = {"get", "list_docs", "get_doc", "status", "content", "signed_url", "accesses"}
WRITE = {"rename_doc", "reprocess", "upload", "rename"}


async def test_roles_across_workspaces(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    db = app.state.services.db
    second = await s.caller(db, tenant.organization_id)
    library_id = await s.create_library(client, "reports")
    doc = await s.uploaded(client, library_id, TEXT, "q1.txt")

    async with make_client(app, second.key) as them:
        hidden = await _statuses(them, library_id, doc["id"])
        assert set(hidden.values()) == {404}, hidden
        assert (await them.get("/v1/libraries")).json()["data"] == []

        shared = await client.put(
            f"/v1/libraries/{library_id}/share",
            json=_share("Viewer", "Workspace", second.workspace_id),
        )
        assert shared.status_code == 200, shared.text
        assert shared.json() == {
            "library_id": library_id,
            "org_id": tenant.organization_id,
            "role": "Viewer",
            "share_with_type": "Workspace",
            "share_with_uuid": second.workspace_id,
            "user_id": None,
        }
        viewer = await _statuses(them, library_id, doc["id"])
        assert {k for k, v in viewer.items() if v == 200} == READ, viewer
        assert {k for k, v in viewer.items() if v == 403} == WRITE | {"share", "delete"}, viewer
        listed = (await them.get("/v1/libraries")).json()["data"]
        assert [row["id"] for row in listed] == [library_id]
        assert (await them.get("/v1/libraries", params={"filter_owned_by_me": True})).json()[
            "data"
        ] == []

        # Editor: writes documents, still neither shares nor deletes the library.
        await client.put(
            f"/v1/libraries/{library_id}/share",
            json=_share("Editor", "Workspace", second.workspace_id),
        )
        editor = await _statuses(them, library_id, doc["id"])
        assert {k for k, v in editor.items() if v in (200, 201, 204)} == READ | WRITE, editor
        assert editor["share"] == editor["delete"] == 403
        added = (await them.get(f"/v1/libraries/{library_id}/documents")).json()["data"]
        assert {d["name"] for d in added} == {"renamed.txt", "new.txt"}
        mine = next(d for d in added if d["name"] == "new.txt")
        assert mine["uploaded_by_type"] == "Workspace"
        assert (
            await them.delete(f"/v1/libraries/{library_id}/documents/{mine['id']}")
        ).status_code == 204

        accesses = (await client.get(f"/v1/libraries/{library_id}/share")).json()["data"]
        assert [(a["role"], a["share_with_type"]) for a in accesses] == [
            ("Owner", "User"),
            ("Editor", "Workspace"),
        ]
        library = (await client.get(f"/v1/libraries/{library_id}")).json()
        assert library["explicit_workspace_members_count"] == 1
        assert library["nb_documents"] == 1

        removed = await client.request(
            "DELETE",
            f"/v1/libraries/{library_id}/share",
            json={"share_with_type": "Workspace", "share_with_uuid": second.workspace_id},
        )
        assert removed.status_code == 200 and removed.json()["role"] == "Editor"
        gone = await _statuses(them, library_id, doc["id"])
        assert set(gone.values()) == {404}, gone
    again = await client.request(
        "DELETE",
        f"/v1/libraries/{library_id}/share",
        json={"share_with_type": "Workspace", "share_with_uuid": second.workspace_id},
    )
    assert again.status_code == 404 and again.json()["code"] == "sharing_not_found"


async def test_user_and_organization_sharings(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    db = app.state.services.db
    colleague = await s.caller(db, tenant.organization_id, email="colleague@example.com")
    bystander = await s.caller(db, tenant.organization_id, workspace_id=colleague.workspace_id)
    library_id = await s.create_library(client)
    doc = await s.uploaded(client, library_id, TEXT)
    assert colleague.user_id is not None

    await client.put(
        f"/v1/libraries/{library_id}/share", json=_share("Viewer", "User", colleague.user_id)
    )
    async with make_client(app, colleague.key) as them, make_client(app, bystander.key) as other:
        assert (await them.get(f"/v1/libraries/{library_id}")).status_code == 200
        assert (await other.get(f"/v1/libraries/{library_id}")).status_code == 404
        library = (await client.get(f"/v1/libraries/{library_id}")).json()
        assert library["explicit_user_members_count"] == 1

        await client.put(
            f"/v1/libraries/{library_id}/share",
            json=_share("Editor", "Org", tenant.organization_id, org_id=tenant.organization_id),
        )
        assert (await other.get(f"/v1/libraries/{library_id}")).status_code == 200
        # The best role wins: the user's Viewer, the organization's Editor.
        assert (
            await them.patch(f"/v1/libraries/{library_id}", json={"name": "n"})
        ).status_code == 200
        library = (await client.get(f"/v1/libraries/{library_id}")).json()
        assert library["org_sharing_role"] == "Editor"

        async with db.transaction() as work:
            for key in (colleague, bystander):
                seen = Tenant(key.organization_id, key.workspace_id, key.user_id)
                libraries = LibraryRepository(work.session, seen)
                readable = await libraries.readable_ids([library_id, "nope", library_id])
                assert readable == [library_id]
                names = await libraries.document_names([doc["id"], "nope"])
                assert names == {doc["id"]: "notes.txt"}


async def test_sharing_rules(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant, other: TenantKey
) -> None:
    db = app.state.services.db
    owner = await s.bootstrap_user(db, tenant)
    library_id = await s.create_library(client)
    share = f"/v1/libraries/{library_id}/share"
    cases = [
        (_share("Viewer", "User", owner), 400, "invalid_sharing"),  # the owner itself
        (_share("Viewer", "Workspace", other.tenant.workspace_id), 404, "workspace_not_found"),
        (_share("Viewer", "Org", other.tenant.organization_id), 404, "org_not_found"),
        (_share("Viewer", "User", "no-such-user"), 404, "user_not_found"),
        (
            _share("Viewer", "Workspace", tenant.workspace_id, org_id=other.tenant.organization_id),
            400,
            "invalid_sharing",
        ),
    ]
    for body, status, code in cases:
        resp = await client.put(share, json=body)
        assert resp.status_code == status, (body, resp.text)
        assert resp.json()["code"] == code
    for body in [
        _share("Owner", "Workspace", tenant.workspace_id),
        _share("Viewer", "Group", tenant.workspace_id),
        {"level": "Viewer", "share_with_type": "Workspace"},
        _share("Viewer", "Workspace", "x" * 37),
    ]:
        resp = await client.put(share, json=body)
        assert resp.status_code == 422, body
    raw = b'{"level": "Viewer", "share_with_type": "User", "share_with_uuid": "\\ud800"}'
    resp = await client.put(share, content=raw, headers={"content-type": "application/json"})
    assert 400 <= resp.status_code < 500
    # Re-sharing changes the role in place.
    await client.put(share, json=_share("Viewer", "Workspace", tenant.workspace_id))
    await client.put(share, json=_share("Editor", "Workspace", tenant.workspace_id))
    accesses = (await client.get(share)).json()["data"]
    assert [a["role"] for a in accesses] == ["Owner", "Editor"]

    # Another organization's key never reaches the library, shared or not.
    async with make_client(app, other.key) as stranger:
        assert (await stranger.get(f"/v1/libraries/{library_id}")).status_code == 404
        assert (await stranger.get(share)).status_code == 404


async def test_deleting_a_shared_library_takes_it_from_everyone(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    second = await s.caller(app.state.services.db, tenant.organization_id)
    library_id = await s.create_library(client)
    await s.uploaded(client, library_id, TEXT)
    await client.put(
        f"/v1/libraries/{library_id}/share", json=_share("Editor", "Workspace", second.workspace_id)
    )
    assert (await client.delete(f"/v1/libraries/{library_id}")).status_code == 200
    async with make_client(app, second.key) as them:
        assert (await them.get(f"/v1/libraries/{library_id}")).status_code == 404
        assert (await them.get("/v1/libraries")).json()["data"] == []
    assert s.blob_files(app) == []
