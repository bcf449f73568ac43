"""The /v1/files group over HTTP: uploads and their statistics, the purpose rules, listing and
filters, download with ranges, deletion, tenancy and visibility."""

from __future__ import annotations

import hashlib
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from maestrale.core.auth.principal import Tenant
from tests.files.support import jsonl, upload, user_key
from tests.support.app_fixtures import TenantKey, make_client

pytestmark = pytest.mark.both_databases("maestrale.files.repository")

LINES = jsonl(
    '{"custom_id": "a", "body": {"messages": [{"role": "user", "content": "hi"}]}}',
    "",
    '{"custom_id": "b", "body": {"messages": [{"role": "user", "content": "ho"}]}}',
)


def blob_files(app: FastAPI) -> list[Path]:
    root = Path(app.state.settings.resolved_blob_dir)
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


async def test_upload_fills_the_file_and_round_trips(client: httpx.AsyncClient) -> None:
    resp = await upload(client, LINES, "requests.jsonl", purpose="batch")
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["object"] == "file"
    assert body["bytes"] == len(LINES)
    assert body["num_lines"] == 2  # the blank line is not a line of the file
    assert body["filename"] == "requests.jsonl"
    assert body["purpose"] == "batch"
    assert body["sample_type"] == "batch_request"
    assert body["source"] == "upload"
    assert body["visibility"] == "workspace"
    assert body["mimetype"] == "application/jsonl"
    assert body["signature"] == hashlib.sha256(LINES).hexdigest()
    assert body["expires_at"] is None
    assert isinstance(body["created_at"], int)

    got = await client.get(f"/v1/files/{body['id']}")
    assert got.status_code == 200
    assert got.json() == {**body, "deleted": False}

    content = await client.get(
        f"/v1/files/{body['id']}/content", headers={"Accept": "application/octet-stream"}
    )
    assert content.status_code == 200
    assert content.headers["content-type"] == "application/octet-stream"
    assert content.headers["content-disposition"].startswith(
        'attachment; filename="requests.jsonl"'
    )
    assert content.headers["accept-ranges"] == "bytes"
    assert content.content == LINES


async def test_upload_without_purpose_is_fine_tune_and_detects_sample_types(
    client: httpx.AsyncClient,
) -> None:
    instruct = await upload(client, jsonl('{"messages": [{"role": "user", "content": "x"}]}'))
    assert instruct.json()["purpose"] == "fine-tune"
    assert instruct.json()["sample_type"] == "instruct"
    pretrain = await upload(client, jsonl('{"text": "plain text"}'), "corpus.jsonl")
    assert pretrain.json()["sample_type"] == "pretrain"
    pdf = await upload(client, b"%PDF-1.4 binary\n\x00\x01", "scan.pdf", purpose="ocr")
    assert pdf.status_code == 200
    assert pdf.json()["num_lines"] is None
    assert pdf.json()["mimetype"] == "application/pdf"
    assert pdf.json()["sample_type"] == "ocr_input"
    other = await upload(client, b"abc", "notes.txt", purpose="audio")
    assert other.status_code == 200 and other.json()["purpose"] == "audio"


@pytest.mark.parametrize(
    ("content", "line", "why"),
    [
        (jsonl('{"messages": []}', '{"messages": []}', "{not json"), 3, "not valid JSON"),
        (jsonl('{"messages": []}', "[1, 2]"), 2, "not an object"),
        (b'{"a": 1}\n\n"text"\n', 3, "not an object"),
    ],
)
async def test_fine_tune_refuses_bad_jsonl_naming_the_line(
    app: FastAPI, client: httpx.AsyncClient, content: bytes, line: int, why: str
) -> None:
    resp = await upload(client, content, "train.jsonl", purpose="fine-tune")
    assert resp.status_code == 400
    assert resp.json()["code"] == "invalid_jsonl"
    assert f"line {line} " in resp.json()["message"] and why in resp.json()["message"]
    assert (await client.get("/v1/files")).json()["data"] == []
    assert blob_files(app) == []


async def test_fine_tune_files_are_judged_by_content_not_name(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    # The TypeScript SDK's README uploads a Blob, named "blob", with no purpose (fine-tune).
    blob = await upload(client, jsonl('{"messages": []}', '{"messages": []}'), "blob")
    assert blob.status_code == 200, blob.text
    assert blob.json()["purpose"] == "fine-tune" and blob.json()["num_lines"] == 2
    bad = await upload(client, jsonl('{"messages": []}', "not json"), "blob")
    assert bad.status_code == 400 and bad.json()["code"] == "invalid_jsonl"
    assert bad.json()["message"].startswith("blob: line 2 is not valid JSON")
    empty = await upload(client, b"\n\n", "train.jsonl", purpose="fine-tune")
    assert empty.status_code == 400 and "no lines" in empty.json()["message"]
    assert len(blob_files(app)) == 1


async def test_purpose_after_the_file_part_is_honoured(client: httpx.AsyncClient) -> None:
    # curl -F file=@x -F purpose=... sends the file first.
    boundary = "b0undary"
    body = (
        f"--{boundary}\r\n"
        'Content-Disposition: form-data; name="file"; filename="dir/../reqs.jsonl"\r\n'
        "Content-Type: application/x-ndjson\r\n\r\n"
        '{"custom_id": "1", "body": {}}\n'
        f"\r\n--{boundary}\r\n"
        'Content-Disposition: form-data; name="purpose"\r\n\r\n'
        "batch"
        f"\r\n--{boundary}--\r\n"
    ).encode()
    resp = await client.post(
        "/v1/files",
        content=body,
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    assert resp.status_code == 200, resp.text
    assert resp.json()["purpose"] == "batch"
    assert resp.json()["num_lines"] == 1
    assert resp.json()["filename"] == "reqs.jsonl"  # no directories
    assert resp.json()["mimetype"] == "application/x-ndjson"


async def test_malformed_uploads_are_4xx(app: FastAPI, client: httpx.AsyncClient) -> None:
    not_multipart = await client.post("/v1/files", json={"file": "x"})
    assert not_multipart.status_code == 415
    no_file = await client.post("/v1/files", data={"purpose": "batch"}, files={"x": ("", b"")})
    assert no_file.status_code == 400
    two = await client.post(
        "/v1/files", files=[("file", ("a.jsonl", b"{}\n")), ("file", ("b.jsonl", b"{}\n"))]
    )
    assert two.status_code == 400
    bad_visibility = await upload(client, LINES, purpose="batch", visibility="everyone")
    assert bad_visibility.status_code == 422
    assert bad_visibility.json()["detail"][0]["loc"] == ["body", "visibility"]
    bad_expiry = await upload(client, LINES, purpose="batch", expiry="soon")
    assert bad_expiry.status_code == 422
    truncated = await client.post(
        "/v1/files",
        content=b'--x\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nabc',
        headers={"Content-Type": "multipart/form-data; boundary=x"},
    )
    assert truncated.status_code == 400
    assert blob_files(app) == []


async def test_list_pages_and_filters(client: httpx.AsyncClient) -> None:
    ids = []
    for i in range(3):
        resp = await upload(client, LINES, f"batch-{i}.jsonl", purpose="batch")
        ids.append(resp.json()["id"])
    ocr = (await upload(client, b"%PDF", "scan_1.pdf", purpose="ocr")).json()["id"]
    everything = (await client.get("/v1/files")).json()
    assert everything["object"] == "list" and everything["total"] == 4
    assert [f["id"] for f in everything["data"]] == [ocr, *reversed(ids)]  # newest first
    page = (await client.get("/v1/files", params={"page": 1, "page_size": 3})).json()
    assert [f["id"] for f in page["data"]] == [ids[0]] and page["total"] == 4
    no_total = (await client.get("/v1/files", params={"include_total": "false"})).json()
    assert no_total["total"] is None and len(no_total["data"]) == 4
    batch = (await client.get("/v1/files", params={"purpose": "batch"})).json()
    assert batch["total"] == 3
    search = (await client.get("/v1/files", params={"search": "batch-1"})).json()
    assert [f["id"] for f in search["data"]] == [ids[1]]
    underscore = (await client.get("/v1/files", params={"search": "n_1"})).json()
    assert underscore["total"] == 1  # `_` matches itself, not any character
    by_type = await client.get(
        "/v1/files", params=[("sample_type", "ocr_input"), ("sample_type", "instruct")]
    )
    assert [f["id"] for f in by_type.json()["data"]] == [ocr]
    by_mime = await client.get("/v1/files", params={"mimetypes": "application/pdf"})
    assert by_mime.json()["total"] == 1
    by_source = await client.get("/v1/files", params={"source": "service"})
    assert by_source.json()["total"] == 0
    assert (await client.get("/v1/files", params={"page_size": 0})).status_code == 400


async def test_ranges(client: httpx.AsyncClient) -> None:
    data = bytes(range(256)) * 4
    file_id = (await upload(client, data, "bytes.bin", purpose="ocr")).json()["id"]
    url = f"/v1/files/{file_id}/content"
    part = await client.get(url, headers={"Range": "bytes=10-19"})
    assert part.status_code == 206
    assert part.content == data[10:20]
    assert part.headers["content-range"] == f"bytes 10-19/{len(data)}"
    assert part.headers["content-length"] == "10"
    tail = await client.get(url, headers={"Range": "bytes=-5"})
    assert tail.status_code == 206 and tail.content == data[-5:]
    rest = await client.get(url, headers={"Range": "bytes=1000-"})
    assert rest.status_code == 206 and rest.content == data[1000:]
    beyond = await client.get(url, headers={"Range": "bytes=5000-6000"})
    assert beyond.status_code == 416
    assert beyond.headers["content-range"] == f"bytes */{len(data)}"
    several = await client.get(url, headers={"Range": "bytes=0-1,5-6"})
    assert several.status_code == 200 and several.content == data


async def test_unicode_file_names_download(client: httpx.AsyncClient) -> None:
    file_id = (await upload(client, b"x", "résumé été.txt", purpose="ocr")).json()["id"]
    resp = await client.get(f"/v1/files/{file_id}/content")
    disposition = resp.headers["content-disposition"]
    assert 'filename="resume ete.txt"' in disposition
    assert "filename*=UTF-8''r%C3%A9sum%C3%A9%20%C3%A9t%C3%A9.txt" in disposition


async def test_delete_removes_row_and_blob(app: FastAPI, client: httpx.AsyncClient) -> None:
    file_id = (await upload(client, LINES, purpose="batch")).json()["id"]
    assert len(blob_files(app)) == 1
    resp = await client.delete(f"/v1/files/{file_id}")
    assert resp.status_code == 200
    assert resp.json() == {"id": file_id, "object": "file", "deleted": True}
    assert blob_files(app) == []
    assert (await client.get(f"/v1/files/{file_id}")).status_code == 404
    assert (await client.get(f"/v1/files/{file_id}/content")).status_code == 404
    assert (await client.delete(f"/v1/files/{file_id}")).status_code == 404


async def test_another_workspace_sees_nothing(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    file_id = (await upload(client, LINES, purpose="batch")).json()["id"]
    async with make_client(app, other.key) as theirs:
        assert (await theirs.get("/v1/files")).json() == {"object": "list", "data": [], "total": 0}
        for method, path in [
            ("GET", f"/v1/files/{file_id}"),
            ("GET", f"/v1/files/{file_id}/content"),
            ("GET", f"/v1/files/{file_id}/url"),
            ("DELETE", f"/v1/files/{file_id}"),
        ]:
            resp = await theirs.request(method, path)
            assert resp.status_code == 404, (method, path)
            assert resp.json()["code"] == "file_not_found"
    assert (await client.get(f"/v1/files/{file_id}")).status_code == 200


async def test_user_visibility(app: FastAPI, client: httpx.AsyncClient, tenant: Tenant) -> None:
    alice = await user_key(app.state.services.db, tenant, "alice@example.com")
    bob = await user_key(app.state.services.db, tenant, "bob@example.com")
    async with make_client(app, alice) as a, make_client(app, bob) as b:
        private = (await upload(a, LINES, purpose="batch", visibility="user")).json()
        shared = (await upload(a, LINES, purpose="batch")).json()
        assert private["visibility"] == "user"
        assert {f["id"] for f in (await a.get("/v1/files")).json()["data"]} == {
            private["id"],
            shared["id"],
        }
        assert [f["id"] for f in (await b.get("/v1/files")).json()["data"]] == [shared["id"]]
        assert (await b.get(f"/v1/files/{private['id']}")).status_code == 404
        assert (await b.get(f"/v1/files/{private['id']}/content")).status_code == 404
        assert (await b.delete(f"/v1/files/{private['id']}")).status_code == 404
        # Another key of the workspace's owner is another user too.
        assert (await client.get(f"/v1/files/{private['id']}")).status_code == 404
        assert (await a.get(f"/v1/files/{private['id']}/content")).content == LINES


async def test_control_characters_do_not_reach_the_database(client: httpx.AsyncClient) -> None:
    boundary = "nul"
    body = (
        f"--{boundary}\r\n"
        'Content-Disposition: form-data; name="file"; filename="a\x00b.jsonl"\r\n'
        "Content-Type: text/pl\x00ain\r\n\r\n"
        '{"x": 1}\n'
        f"\r\n--{boundary}\r\n"
        'Content-Disposition: form-data; name="purpose"\r\n\r\nbatch'
        f"\r\n--{boundary}--\r\n"
    ).encode()
    resp = await client.post(
        "/v1/files",
        content=body,
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
    )
    assert resp.status_code == 200, resp.text
    assert resp.json()["filename"] == "ab.jsonl"
    assert resp.json()["mimetype"] == "text/plain"


async def test_an_absurd_content_length_is_no_server_error(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/v1/files",
        headers={"content-length": "9" * 5000, "content-type": "multipart/form-data; boundary=x"},
        content=b"--x--\r\n",
    )
    assert 400 <= response.status_code < 500, response.text
