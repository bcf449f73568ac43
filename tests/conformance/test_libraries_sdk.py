"""The official SDK (mistralai==2.8.0) drives every call of `client.beta.libraries` against a
live server, whose in-process worker processes the documents (builtin embeddings model):
libraries CRUD, documents (upload, list, get, both updates, status, text, both signed links,
reprocess, delete) and accesses (list, share, unshare), with another workspace's key."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from mistralai.client import Mistral
from mistralai.client import models as m
from mistralai.client.errors import SDKError

from tests.support.app_fixtures import ADMIN_KEY, API_KEY
from tests.support.live import start_server, stop_server
from tests.support.sdks import SdkProcess

NOTES = (
    b"# Harbour notes\n\nThe northern quay opened in April.\n\n"
    b"Dredging happened twice, in March and in September.\n"
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data_dir = tmp_path_factory.mktemp("libraries") / "data"
    data_dir.mkdir()
    proc, url = start_server(data_dir, env={"MAESTRALE_LIBRARY_EMBEDDING_MODEL": "maestrale-embed"})
    try:
        yield url
    finally:
        stop_server(proc)


@pytest.fixture(scope="module")
def sdk(server: str) -> Mistral:
    return Mistral(api_key=API_KEY, server_url=server)


@pytest.fixture(scope="module")
def second_workspace(server: str) -> tuple[str, str]:
    """Another workspace of the organization and a key of the owner in it."""
    with httpx.Client(base_url=server, headers={"x-api-key": ADMIN_KEY}) as admin:
        users = admin.get("/v1/admin/users").json()["members"]
        owner = next(u["uuid"] for u in users if u["email"] == "owner@localhost")
        created = admin.post(
            "/v1/admin/workspaces", json={"name": "second", "admin_user_id": owner}
        ).json()
        key = admin.post(
            "/v1/admin/api-keys", json={"user_id": owner, "workspace_uuid": created["uuid"]}
        ).json()
    return str(created["uuid"]), str(key["key"])


def _wait_done(sdk: Mistral, library_id: str, document_id: str) -> m.ProcessingStatus:
    deadline = time.monotonic() + 60
    while True:
        status = sdk.beta.libraries.documents.status(library_id=library_id, document_id=document_id)
        if status.process_status in ("done", "error") or time.monotonic() > deadline:
            return status
        time.sleep(0.1)


def test_libraries_crud(sdk: Mistral) -> None:
    libraries = sdk.beta.libraries
    created = libraries.create(name="Handbook", description="staff handbook", chunk_size=256)
    assert isinstance(created, m.Library)
    assert created.name == "Handbook" and created.owner_type == "User"
    assert created.nb_documents == 0 and created.total_size == 0 and created.chunk_size == 256

    got = libraries.get(library_id=created.id)
    assert got.id == created.id and got.description == "staff handbook"
    patched = libraries.update(library_id=created.id, name="Manual")
    assert patched.name == "Manual" and patched.description == "staff handbook"
    put = libraries.libraries_update_v1(library_id=created.id, description="the manual")
    assert put.name == "Manual" and put.description == "the manual"

    listed = libraries.list(page_size=10, search="manual")
    assert isinstance(listed, m.ListLibrariesResponse)
    assert [lib.id for lib in listed.data] == [created.id]
    assert listed.pagination is not None and listed.pagination.total_items == 1
    owned = libraries.list(filter_owned_by_me=True)
    assert created.id in [lib.id for lib in owned.data]

    deleted = libraries.delete(library_id=created.id)
    assert isinstance(deleted, m.Library) and deleted.id == created.id
    with pytest.raises(SDKError) as missing:
        libraries.get(library_id=created.id)
    assert missing.value.status_code == 404


def test_list_by_page_token(sdk: Mistral) -> None:
    ids = [sdk.beta.libraries.create(name=f"paged {i}").id for i in range(3)]
    seen: list[str] = []
    page = sdk.beta.libraries.list(page_size=2, search="paged")
    while True:
        seen += [lib.id for lib in page.data]
        if not page.next_page_token:
            break
        page = sdk.beta.libraries.list(page_size=2, page_token=page.next_page_token)
    assert seen == list(reversed(ids))
    for library_id in ids:
        sdk.beta.libraries.delete(library_id=library_id)


def test_documents_round_trip(sdk: Mistral, tmp_path: Path) -> None:
    library = sdk.beta.libraries.create(name="Harbour")
    documents = sdk.beta.libraries.documents
    uploaded = documents.upload(
        library_id=library.id, file={"file_name": "notes.md", "content": NOTES}
    )
    assert isinstance(uploaded, m.Document)
    assert uploaded.name == "notes.md" and uploaded.size == len(NOTES)
    assert uploaded.process_status in ("todo", "in_progress", "done")

    status = _wait_done(sdk, library.id, uploaded.id)
    assert isinstance(status, m.ProcessingStatus)
    assert status.process_status == "done" and status.document_id == uploaded.id

    got = documents.get(library_id=library.id, document_id=uploaded.id)
    assert got.number_of_pages == 1 and got.tokens_processing_total > 0
    assert got.last_processed_at is not None

    text = documents.text_content(library_id=library.id, document_id=uploaded.id)
    assert isinstance(text, m.DocumentTextContent) and "northern quay" in text.text
    first = documents.text_content(
        library_id=library.id, document_id=uploaded.id, page_start=1, page_end=1
    )
    assert first.text == text.text

    url = documents.get_signed_url(library_id=library.id, document_id=uploaded.id)
    assert isinstance(url, str)
    assert httpx.get(url).content == NOTES  # no key
    text_url = documents.extracted_text_signed_url(library_id=library.id, document_id=uploaded.id)
    assert httpx.get(text_url).text == text.text

    patched = documents.update(
        library_id=library.id,
        document_id=uploaded.id,
        name="harbour.md",
        attributes={"lang": "en", "year": 2024, "tags": ["port"]},
    )
    assert patched.name == "harbour.md" and patched.attributes == {
        "lang": "en",
        "year": 2024,
        "tags": ["port"],
    }
    put = documents.libraries_documents_update_v1(
        library_id=library.id, document_id=uploaded.id, attributes={"lang": "fr"}
    )
    assert put.name == "harbour.md" and put.attributes == {"lang": "fr"}

    listed = documents.list(library_id=library.id, search="harbour", page_size=10)
    assert isinstance(listed, m.ListDocumentsResponse)
    assert [d.id for d in listed.data] == [uploaded.id]
    assert listed.pagination.total_items == 1
    filtered = documents.list(library_id=library.id, filters_attributes='{"lang": "en"}')
    assert filtered.data == []
    by_name = documents.list(library_id=library.id, sort_by="name", sort_order="asc")
    assert [d.id for d in by_name.data] == [uploaded.id]

    assert documents.reprocess(library_id=library.id, document_id=uploaded.id) is None
    assert _wait_done(sdk, library.id, uploaded.id).process_status == "done"

    counted = sdk.beta.libraries.get(library_id=library.id)
    assert counted.nb_documents == 1 and counted.total_size == len(NOTES)
    assert documents.delete(library_id=library.id, document_id=uploaded.id) is None
    with pytest.raises(SDKError) as missing:
        documents.get(library_id=library.id, document_id=uploaded.id)
    assert missing.value.status_code == 404
    assert sdk.beta.libraries.get(library_id=library.id).nb_documents == 0
    sdk.beta.libraries.delete(library_id=library.id)


def test_unreadable_document_reports_its_reason(sdk: Mistral) -> None:
    library = sdk.beta.libraries.create(name="Broken")
    uploaded = sdk.beta.libraries.documents.upload(
        library_id=library.id,
        file={"file_name": "broken.pdf", "content": b"%PDF-1.7\nnot a pdf at all"},
    )
    status = _wait_done(sdk, library.id, uploaded.id)
    assert status.process_status == "error"
    assert status.processing_status.startswith("Error: ")
    with pytest.raises(SDKError) as refused:
        sdk.beta.libraries.documents.text_content(library_id=library.id, document_id=uploaded.id)
    assert refused.value.status_code == 409
    sdk.beta.libraries.delete(library_id=library.id)


def test_accesses_across_workspaces(
    sdk: Mistral, server: str, second_workspace: tuple[str, str]
) -> None:
    workspace_id, key = second_workspace
    library = sdk.beta.libraries.create(name="Shared")
    doc = sdk.beta.libraries.documents.upload(
        library_id=library.id, file={"file_name": "notes.md", "content": NOTES}
    )
    them = Mistral(api_key=key, server_url=server)
    with pytest.raises(SDKError) as hidden:
        them.beta.libraries.get(library_id=library.id)
    assert hidden.value.status_code == 404
    with pytest.raises(SDKError) as hidden_doc:
        them.beta.libraries.documents.get_signed_url(library_id=library.id, document_id=doc.id)
    assert hidden_doc.value.status_code == 404

    accesses = sdk.beta.libraries.accesses
    shared = accesses.update_or_create(
        library_id=library.id,
        level="Viewer",
        share_with_uuid=workspace_id,
        share_with_type="Workspace",
    )
    assert isinstance(shared, m.Sharing)
    assert shared.role == "Viewer" and shared.share_with_uuid == workspace_id
    listed = accesses.list(library_id=library.id)
    assert isinstance(listed, m.ListSharingResponse)
    assert [(a.role, a.share_with_type) for a in listed.data] == [
        ("Owner", "User"),
        ("Viewer", "Workspace"),
    ]
    assert them.beta.libraries.get(library_id=library.id).name == "Shared"
    with pytest.raises(SDKError) as viewer:
        them.beta.libraries.documents.upload(
            library_id=library.id, file={"file_name": "x.md", "content": b"x"}
        )
    assert viewer.value.status_code == 403

    removed = accesses.delete(
        library_id=library.id, share_with_uuid=workspace_id, share_with_type="Workspace"
    )
    assert isinstance(removed, m.Sharing) and removed.role == "Viewer"
    with pytest.raises(SDKError) as gone:
        them.beta.libraries.get(library_id=library.id)
    assert gone.value.status_code == 404
    sdk.beta.libraries.delete(library_id=library.id)


def test_every_sdk_reads_a_markdown_document_right_after_upload(
    any_sdk: SdkProcess, tmp_path: Path
) -> None:
    """The SDK's library example: upload a small Markdown file, then `text_content` at once
    (its text is read during the upload; processing comes later)."""
    library = any_sdk.call("beta.libraries.create", name="examples").ok()
    path = tmp_path / "lorem_ipsum.md"
    path.write_bytes(NOTES)
    file = {"file_name": "lorem_ipsum.md", "path": str(path)}
    doc = any_sdk.call("beta.libraries.documents.upload", library_id=library["id"], file=file).ok()
    text = any_sdk.call(
        "beta.libraries.documents.text_content", library_id=library["id"], document_id=doc["id"]
    ).ok()
    assert "The northern quay opened in April." in text["text"]
    any_sdk.call("beta.libraries.delete", library_id=library["id"]).ok()
