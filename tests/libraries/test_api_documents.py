"""Documents over HTTP (no processing: the jobs stay queued): uploads streamed to storage and
their limits, listing with search, filters, sorting and paging, updates, attributes, deletion
and the library's counters, signed links, and hostile input answered with a clear 4xx."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import sqlalchemy as sa
from fastapi import FastAPI

from maestrale.app import create_app
from maestrale.core.clock import utcnow
from maestrale.core.jobs.tables import Job
from maestrale.core.signing import sign
from maestrale.libraries.tables import LibraryDocument
from tests.libraries import support_api as s
from tests.support import app_fixtures

pytestmark = pytest.mark.both_databases("maestrale.libraries.documents.repository")

DOCUMENT_KEYS = {
    "id",
    "library_id",
    "hash",
    "mime_type",
    "extension",
    "size",
    "name",
    "created_at",
    "process_status",
    "uploaded_by_id",
    "uploaded_by_type",
    "processing_status",
    "tokens_processing_total",
    "summary",
    "last_processed_at",
    "number_of_pages",
    "tokens_processing_main_content",
    "tokens_processing_summary",
    "url",
    "attributes",
    "expires_at",
}
TEXT = b"Maestrale keeps its documents in libraries.\n"


@pytest.fixture(scope="module")
def backend(request: pytest.FixtureRequest) -> str:
    """Module scope: the refusals and the tests that only touch a library of their own share
    one app per backend (`shared_app`); the tests that look at every job, document or blob keep
    an app of their own."""
    return str(request.param)


async def test_upload_list_get_update_delete(app: FastAPI, client: httpx.AsyncClient) -> None:
    library_id = await s.create_library(client)
    doc = await s.uploaded(client, library_id, TEXT, "notes.txt")
    assert set(doc) == DOCUMENT_KEYS
    assert doc["library_id"] == library_id and doc["name"] == "notes.txt"
    assert doc["size"] == len(TEXT) and doc["hash"] == hashlib.sha256(TEXT).hexdigest()
    assert doc["extension"] == "txt" and doc["mime_type"] == "text/plain"
    assert doc["process_status"] == "todo" and doc["processing_status"] == "Todo"
    assert doc["uploaded_by_type"] == "User" and doc["tokens_processing_total"] == 0
    library = (await client.get(f"/v1/libraries/{library_id}")).json()
    assert library["nb_documents"] == 1 and library["total_size"] == len(TEXT)
    # One processing job, for this document's first generation.
    async with app.state.services.db.transaction() as work:
        jobs = (await work.session.execute(sa.select(Job.kind, Job.payload))).all()
    assert ("libraries.process", {"document_id": doc["id"], "generation": 1}) in jobs

    path = f"/v1/libraries/{library_id}/documents/{doc['id']}"
    assert (await client.get(path)).json() == doc
    status = (await client.get(f"{path}/status")).json()
    assert status == {
        "document_id": doc["id"],
        "process_status": "todo",
        "processing_status": "Todo",
    }
    patched = await client.patch(
        path,
        json={
            "name": "renamed.txt",
            "attributes": {"lang": "en", "year": 2024, "tags": ["a", "b"], "ok": True},
        },
    )
    assert patched.status_code == 200, patched.text
    assert patched.json()["name"] == "renamed.txt"
    assert patched.json()["attributes"] == {
        "lang": "en",
        "year": 2024,
        "tags": ["a", "b"],
        "ok": True,
    }
    cleared = (await client.put(path, json={"attributes": None})).json()
    assert cleared["attributes"] is None and cleared["name"] == "renamed.txt"

    # Not processed yet, but a small text: its text was read during the upload.
    assert (await client.get(f"{path}/text_content")).json() == {"text": TEXT.decode().rstrip()}
    link = urlsplit((await client.get(f"{path}/extracted-text-signed-url")).json())
    assert (await client.get(f"{link.path}?{link.query}")).text == TEXT.decode().rstrip()

    assert (await client.delete(path)).status_code == 204
    assert (await client.get(path)).status_code == 404
    assert (await client.delete(path)).status_code == 404
    library = (await client.get(f"/v1/libraries/{library_id}")).json()
    assert library["nb_documents"] == 0 and library["total_size"] == 0
    assert s.blob_files(app) == []


async def test_counters_follow_uploads_and_deletions(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    library_id = await s.create_library(client)
    sizes = [10, 200, 3000]
    docs = [await s.uploaded(client, library_id, b"x" * n, f"f{n}.txt") for n in sizes]
    library = (await client.get(f"/v1/libraries/{library_id}")).json()
    assert library["nb_documents"] == 3 and library["total_size"] == sum(sizes)
    await client.delete(f"/v1/libraries/{library_id}/documents/{docs[1]['id']}")
    library = (await client.get(f"/v1/libraries/{library_id}")).json()
    assert library["nb_documents"] == 2 and library["total_size"] == 3010
    # Deleting the library takes its documents and their blobs with it.
    deleted = (await client.delete(f"/v1/libraries/{library_id}")).json()
    assert deleted["nb_documents"] == 2
    assert s.blob_files(app) == []
    async with app.state.services.db.transaction() as work:
        left = await work.session.execute(sa.select(sa.func.count()).select_from(LibraryDocument))
        assert left.scalar_one() == 0


async def test_list_search_sort_filters_and_pages(shared_client: httpx.AsyncClient) -> None:
    library_id = await s.create_library(shared_client)
    names = ["beta.txt", "alpha.md", "gamma_1.txt", "delta.txt"]
    ids = {}
    for i, name in enumerate(names):
        ids[name] = (await s.uploaded(shared_client, library_id, b"y" * (i + 1), name))["id"]
    base = f"/v1/libraries/{library_id}/documents"
    await shared_client.patch(
        f"{base}/{ids['beta.txt']}", json={"attributes": {"lang": "en", "n": 1}}
    )
    await shared_client.patch(
        f"{base}/{ids['alpha.md']}", json={"attributes": {"lang": "fr", "n": 2.5}}
    )
    await shared_client.patch(
        f"{base}/{ids['gamma_1.txt']}", json={"attributes": {"lang": "1", "ok": True}}
    )

    listed = (await shared_client.get(base)).json()
    assert [d["name"] for d in listed["data"]] == list(reversed(names))  # newest first
    assert listed["pagination"]["total_items"] == 4
    by_name = (
        await shared_client.get(base, params={"sort_by": "name", "sort_order": "asc"})
    ).json()
    assert [d["name"] for d in by_name["data"]] == sorted(names)
    by_size = (
        await shared_client.get(base, params={"sort_by": "size", "sort_order": "desc"})
    ).json()
    assert [d["size"] for d in by_size["data"]] == [4, 3, 2, 1]
    paged = (await shared_client.get(base, params={"page_size": 3, "page": 1})).json()
    assert [d["name"] for d in paged["data"]] == ["beta.txt"]
    assert paged["pagination"] == {
        "total_items": 4,
        "total_pages": 2,
        "current_page": 1,
        "page_size": 3,
        "has_more": False,
    }
    searched = (await shared_client.get(base, params={"search": "_1"})).json()
    assert [d["name"] for d in searched["data"]] == ["gamma_1.txt"]

    async def filtered(value: object) -> list[str]:
        resp = await shared_client.get(base, params={"filters_attributes": json.dumps(value)})
        assert resp.status_code == 200, resp.text
        return sorted(d["name"] for d in resp.json()["data"])

    assert await filtered({"lang": "en"}) == ["beta.txt"]
    assert await filtered({"lang": ["en", "fr"]}) == ["alpha.md", "beta.txt"]
    assert await filtered({"n": 2.5}) == ["alpha.md"]
    assert await filtered({"n": 1}) == ["beta.txt"]
    assert await filtered({"lang": 1}) == []  # the text "1" is not the number 1
    assert await filtered({"ok": True}) == ["gamma_1.txt"]
    assert await filtered({"lang": "en", "n": 2.5}) == []
    assert await filtered({}) == sorted(names)


@pytest.mark.parametrize(
    "params",
    [
        {"sort_by": "hash"},
        {"sort_order": "sideways"},
        {"page_size": 0},
        {"page_size": 5000},
        {"page": -3},
        {"page": 2**63},
        {"filters_attributes": "not json"},
        {"filters_attributes": "[1]"},
        {"filters_attributes": '{"a": {"b": 1}}'},
        {"filters_attributes": '{"a\\") OR 1=1 --": 1}'},
        {"filters_attributes": '{"a": []}'},
        {"filters_attributes": "{" + ",".join(f'"k{i}": 1' for i in range(21)) + "}"},
        {"filters_attributes": "x" * 9000},
        {"search": "s" * 600},
    ],
)
async def test_list_bounds_are_4xx(
    shared_client: httpx.AsyncClient, params: dict[str, str | int]
) -> None:
    library_id = await s.create_library(shared_client)
    resp = await shared_client.get(f"/v1/libraries/{library_id}/documents", params=params)
    assert resp.status_code in (400, 422), resp.text


@pytest.mark.parametrize(
    "body",
    [
        {"name": ""},
        {"name": "n" * 513},
        {"name": "a\u0000b"},
        {"attributes": {f"k{i}": i for i in range(101)}},
        {"attributes": {"k": "v" * 70_000}},
        {"attributes": {"k": list(range(1001))}},
        {"attributes": {"k" * 300: 1}},
        {"attributes": {"": 1}},
        {"attributes": {"k": {"nested": 1}}},
        {"attributes": {"k": [1, "mixed"]}},
        {"attributes": {"k": None}},
        {"attributes": {"k": "a\u0000b"}},
        {"attributes": ["not", "a", "map"]},
        {"expires_at": "tomorrow"},
        {"expires_at": "0001-01-01T00:00:00+05:00"},
    ],
)
async def test_bad_updates_are_422(
    shared_client: httpx.AsyncClient, body: dict[str, object]
) -> None:
    library_id = await s.create_library(shared_client)
    doc = await s.uploaded(shared_client, library_id, TEXT)
    resp = await shared_client.patch(f"/v1/libraries/{library_id}/documents/{doc['id']}", json=body)
    assert resp.status_code == 422, resp.text


async def test_huge_attribute_document_is_refused_before_parsing(
    shared_client: httpx.AsyncClient,
) -> None:
    library_id = await s.create_library(shared_client)
    doc = await s.uploaded(shared_client, library_id, TEXT)
    body = b'{"attributes": {' + b",".join(b'"k%d": %d' % (i, i) for i in range(200_000)) + b"}}"
    resp = await shared_client.patch(
        f"/v1/libraries/{library_id}/documents/{doc['id']}",
        content=body,
        headers={"content-type": "application/json"},
    )
    assert resp.status_code == 422


async def test_upload_errors(app: FastAPI, client: httpx.AsyncClient) -> None:
    library_id = await s.create_library(client)
    url = f"/v1/libraries/{library_id}/documents"
    empty = await s.upload(client, library_id, b"", "empty.txt")
    assert empty.status_code == 400 and empty.json()["code"] == "empty_file"
    no_file = await client.post(url, data={"purpose": "x"}, files={"other": ("a", b"a")})
    assert no_file.status_code == 400
    two = await client.post(url, files=[("file", ("a.txt", b"a")), ("file", ("b.txt", b"b"))])
    assert two.status_code == 400 and two.json()["code"] == "invalid_multipart"
    json_body = await client.post(url, json={"file": "x"})
    assert json_body.status_code == 415
    broken = await client.post(
        url,
        content=b'--b\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nab',
        headers={"content-type": "multipart/form-data; boundary=b"},
    )
    assert broken.status_code == 400
    assert (await s.upload(client, "no-such-library", TEXT)).status_code == 404
    assert s.blob_files(app) == []
    library = (await client.get(f"/v1/libraries/{library_id}")).json()
    assert library["nb_documents"] == 0


async def test_upload_over_the_limit_is_413_and_keeps_nothing(
    database_url: str, tmp_path: Path
) -> None:
    settings = app_fixtures.test_settings(
        database_url, tmp_path / "data", library_max_document_bytes=1000
    )
    application = create_app(settings)
    lifespan = application.router.lifespan_context(application)
    async with lifespan, app_fixtures.make_client(application) as client:
        library_id = await s.create_library(client)
        assert (await s.upload(client, library_id, b"z" * 1000)).status_code == 201
        too_big = await s.upload(client, library_id, b"z" * 1001)
        assert too_big.status_code == 413
        # A body streamed without a Content-Length is counted as it comes.
        chunks = [
            b'--b\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\n',
            b"z" * 5000,
            b"\r\n--b--\r\n",
        ]

        async def stream() -> AsyncIterator[bytes]:
            for chunk in chunks:
                yield chunk

        streamed = await client.post(
            f"/v1/libraries/{library_id}/documents",
            content=stream(),
            headers={"content-type": "multipart/form-data; boundary=b"},
        )
        assert streamed.status_code == 413
        assert len(s.blob_files(application)) == 2  # the accepted one, and its text
        library = (await client.get(f"/v1/libraries/{library_id}")).json()
        assert library["nb_documents"] == 1 and library["total_size"] == 1000


async def test_text_documents_are_readable_right_after_upload_within_a_bound(
    database_url: str, tmp_path: Path
) -> None:
    """Text, Markdown, HTML and JSON up to `library_upload_text_max_bytes` are read during the
    upload (by the job's readers); a larger one, or a PDF, waits for its processing (409)."""
    settings = app_fixtures.test_settings(
        database_url, tmp_path / "data", library_upload_text_max_bytes=200
    )
    application = create_app(settings)
    lifespan = application.router.lifespan_context(application)
    async with lifespan, app_fixtures.make_client(application) as client:
        library_id = await s.create_library(client)
        read = {
            "n.md": (b"# Notes\n\nThe *quay* opened.\n", "# Notes\n\nThe quay opened."),
            "n.html": (b"<html><body><p>The <b>quay</b></p></body></html>", "The quay"),
            "n.json": (b'{"quay": "opened"}\r\n', '{"quay": "opened"}'),
        }
        waiting = {"big.txt": b"y" * 201, "r.pdf": b"%PDF-1.4\n" + b"x" * 50}
        for name, (content, expected) in read.items():
            doc = await s.uploaded(client, library_id, content, name)
            assert doc["process_status"] == "todo", name
            base = f"/v1/libraries/{library_id}/documents/{doc['id']}"
            assert (await client.get(f"{base}/text_content")).json() == {"text": expected}
        for name, content in waiting.items():
            doc = await s.uploaded(client, library_id, content, name)
            base = f"/v1/libraries/{library_id}/documents/{doc['id']}"
            for suffix in ("/text_content", "/extracted-text-signed-url", "/extracted-text"):
                resp = await client.get(base + suffix)
                assert resp.status_code == 409, (name, suffix)
                assert resp.json()["code"] == "document_not_processed"
        # Each text read is a blob of its own, beside the originals.
        assert len(s.blob_files(application)) == len(read) * 2 + len(waiting)


async def test_uploads_stream_past_the_json_body_limit(database_url: str, tmp_path: Path) -> None:
    """The upload route streams its body: the limit of JSON bodies does not apply to it."""
    settings = app_fixtures.test_settings(
        database_url, tmp_path / "data", max_json_request_bytes=2048
    )
    application = create_app(settings)
    lifespan = application.router.lifespan_context(application)
    async with lifespan, app_fixtures.make_client(application) as client:
        library_id = await s.create_library(client)
        resp = await s.upload(client, library_id, b"w" * 200_000, "big.txt")
        assert resp.status_code == 201 and resp.json()["size"] == 200_000
        # Other routes of the group keep the JSON limit.
        doc = f"/v1/libraries/{library_id}/documents/{resp.json()['id']}"
        big = await client.patch(doc, json={"name": "n" * 4000})
        assert big.status_code == 413


def _multipart(filename: bytes, content: bytes) -> bytes:
    return (
        b'--b\r\nContent-Disposition: form-data; name="file"; filename="'
        + filename
        + b'"\r\nContent-Type: text/plain\r\n\r\n'
        + content
        + b"\r\n--b--\r\n"
    )


async def test_names_from_hostile_filenames(shared_client: httpx.AsyncClient) -> None:
    library_id = await s.create_library(shared_client)
    for filename, expected in [
        (b"../../etc/passwd", "passwd"),
        (b"C:\\docs\\report.PDF", "report.PDF"),
        (b"a\x07b\x1bc.txt", "abc.txt"),
        (b"\xff\xfe.txt", None),
        (b"\xed\xa0\x80.txt", None),  # a lone surrogate, UTF-8 encoded
        (b"x" * 1000 + b".txt", None),
    ]:
        resp = await shared_client.post(
            f"/v1/libraries/{library_id}/documents",
            content=_multipart(filename, TEXT),
            headers={"content-type": "multipart/form-data; boundary=b"},
        )
        assert resp.status_code == 201, (filename, resp.text)
        name = resp.json()["name"]
        if expected is not None:
            assert name == expected
        assert 0 < len(name) <= 255
        name.encode("utf-8")  # valid text, whatever came


async def test_signed_link_opens_the_content_without_a_key(
    shared_app: FastAPI, shared_client: httpx.AsyncClient, shared_anon_client: httpx.AsyncClient
) -> None:
    library_id = await s.create_library(shared_client)
    doc = await s.uploaded(shared_client, library_id, TEXT, "page.html")
    path = f"/v1/libraries/{library_id}/documents/{doc['id']}"
    resp = await shared_client.get(f"{path}/signed-url")
    assert resp.status_code == 200
    url = resp.json()
    assert isinstance(url, str) and url.startswith(f"http://test{path}/content?expires=")
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    assert abs(int(query["expires"][0]) - (time.time() + 3600)) < 60
    opened = await shared_anon_client.get(f"{parts.path}?{parts.query}")
    assert opened.status_code == 200 and opened.content == TEXT
    assert opened.headers["content-type"] == "application/octet-stream"
    assert opened.headers["x-content-type-options"] == "nosniff"
    assert "page.html" in opened.headers["content-disposition"]
    # With a key, the same content; without either, 401.
    assert (await shared_client.get(f"{path}/content")).content == TEXT
    assert (await shared_anon_client.get(f"{path}/content")).status_code == 401

    expires, signature = query["expires"][0], query["signature"][0]
    other = await s.uploaded(shared_client, library_id, b"other")
    for target, params in [
        (f"{path}/content", {"expires": str(int(expires) + 1), "signature": signature}),
        (f"{path}/content", {"expires": expires, "signature": signature[:-2] + "AA"}),
        (f"{path}/content", {"expires": expires}),
        (f"{path}/content", {"expires": "9" * 5000, "signature": signature}),
        (f"{path}/content", {"expires": "²", "signature": "é"}),
        (f"{path}/extracted-text", {"expires": expires, "signature": signature}),
        (
            f"/v1/libraries/{library_id}/documents/{other['id']}/content",
            {"expires": expires, "signature": signature},
        ),
    ]:
        refused = await shared_anon_client.get(target, params=params)
        assert refused.status_code == 403, (target, params)
    past = int(time.time()) - 10
    message = f"libraries:content:{library_id}:{doc['id']}:{past}"
    expired = sign(shared_app.state.services.secret_key, message)
    late = await shared_anon_client.get(
        f"{path}/content", params={"expires": past, "signature": expired}
    )
    assert late.status_code == 403 and late.json()["code"] == "signature_expired"
    # A valid link of a deleted document: 404.
    await shared_client.delete(path)
    gone = await shared_anon_client.get(f"{parts.path}?{parts.query}")
    assert gone.status_code == 404


async def test_text_content_page_bounds(shared_client: httpx.AsyncClient) -> None:
    library_id = await s.create_library(shared_client)
    doc = await s.uploaded(shared_client, library_id, TEXT)
    path = f"/v1/libraries/{library_id}/documents/{doc['id']}/text_content"
    for params in ({"page_start": 2**70}, {"page_end": "x"}):
        resp = await shared_client.get(path, params=params)
        assert resp.status_code in (400, 422), params


async def test_expired_documents_vanish_and_are_deleted(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    library_id = await s.create_library(client)
    doc = await s.uploaded(client, library_id, TEXT)
    path = f"/v1/libraries/{library_id}/documents/{doc['id']}"
    # A date without a zone is UTC.
    naive = (utcnow() + timedelta(days=2)).replace(tzinfo=None).isoformat()
    updated = await client.patch(path, json={"expires_at": naive})
    assert updated.status_code == 200 and updated.json()["expires_at"].endswith("Z")
    soon = (utcnow() + timedelta(hours=1)).isoformat()
    updated = await client.patch(path, json={"expires_at": soon})
    assert updated.status_code == 200 and updated.json()["expires_at"] is not None
    past = utcnow() - timedelta(seconds=1)
    async with app.state.services.db.transaction() as work:
        await work.session.execute(
            sa.update(LibraryDocument)
            .where(LibraryDocument.id == doc["id"])
            .values(expires_at=past)
        )
        await work.session.execute(
            sa.update(Job).where(Job.kind == "libraries.expire").values(run_at=past)
        )
        # No processing here: only the expiry runs.
        await work.session.execute(sa.delete(Job).where(Job.kind == "libraries.process"))
    assert (await client.get(path)).status_code == 404
    listed = (await client.get(f"/v1/libraries/{library_id}/documents")).json()
    assert listed["data"] == []
    # The expiry was set twice: two jobs, run at once, remove the document once.
    await s.run_jobs(app)
    library = (await client.get(f"/v1/libraries/{library_id}")).json()
    assert library["nb_documents"] == 0 and library["total_size"] == 0
    assert s.blob_files(app) == []
