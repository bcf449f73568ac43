"""File and image parts of a response's input: the model reads a file's text (an upload by
`file_id`, a `file_data` data: URL or base64, a `file_url`), sees an uploaded image, or the part
is refused with a 4xx naming it. The builtin echo model answers the text it read."""

from __future__ import annotations

import base64
from typing import Any

import httpx
from fastapi import FastAPI

from tests.batch.support import run_jobs
from tests.files.support import upload
from tests.libraries.ingest.samples import TITLE, text_pdf
from tests.support.app_fixtures import create_tenant, make_client

# The 8-byte PNG signature and a header chunk: an image by its bytes (what decides it here).
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x00" * 17


def message(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"model": "maestrale-echo", "input": [{"role": "user", "content": list(parts)}]}


async def uploaded(client: httpx.AsyncClient, content: bytes, filename: str) -> str:
    response = await upload(client, content, filename, purpose="user_data")
    assert response.status_code == 200, response.text
    file_id: str = response.json()["id"]
    return file_id


async def test_an_uploaded_file_is_read_by_the_model_of_its_workspace_only(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    file_id = await uploaded(client, b"The tide turns at noon.\r\n", "notes.txt")
    body = message(
        {"type": "input_text", "text": "Summarise:"},
        {"type": "input_file", "file_id": file_id},
    )
    answered = await client.post("/v1/responses", json=body)
    assert answered.status_code == 200, answered.text
    assert answered.json()["output_text"] == "echo: Summarise:\nnotes.txt\nThe tide turns at noon."

    other = await create_tenant(app.state.services.db)
    async with make_client(app, other.key) as theirs:
        refused = await theirs.post("/v1/responses", json=body)
    assert refused.status_code == 404
    assert refused.json()["code"] == "file_not_found"
    assert refused.json()["param"] == "input[0].content[1]"


async def test_file_data_as_a_data_url_or_base64_is_read(client: httpx.AsyncClient) -> None:
    pdf = base64.b64encode(text_pdf(pages=1)).decode()
    csv = base64.b64encode(b"city,tide\nGenoa,noon\n").decode()
    body = message(
        {"type": "input_file", "file_data": f"data:application/pdf;base64,{pdf}"},
        {"type": "input_file", "file_data": csv, "filename": "tides.csv"},
    )
    answered = await client.post("/v1/responses", json=body)
    assert answered.status_code == 200, answered.text
    text = answered.json()["output_text"]
    assert text.startswith("echo: file\n# ") and TITLE in text.split("\n")[1], text
    assert text.endswith("\ntides.csv\ncity,tide\nGenoa,noon")


async def test_a_url_to_a_private_address_is_refused_before_the_model(
    client: httpx.AsyncClient,
) -> None:
    for url in ("http://127.0.0.1:9/a.txt", "http://[::ffff:127.0.0.1]:9/a.txt"):
        body = message(
            {"type": "input_text", "text": "Read:"},
            {"type": "input_file", "file_url": url},
        )
        refused = await client.post("/v1/responses", json=body)
        assert refused.status_code == 400, refused.text
        assert refused.json()["code"] == "url_not_allowed"
        assert refused.json()["param"] == "input[0].content[1]"
    assert (await client.get("/v1/conversations")).json() == []


async def test_images_by_file_id_and_unreadable_files_are_refused(
    client: httpx.AsyncClient,
) -> None:
    image = await uploaded(client, PNG, "dot.png")
    text = await uploaded(client, b"not a picture", "a.txt")
    archive = base64.b64encode(b"PK\x05\x06" + b"\x00" * 18).decode()
    cases = [
        # The image is read, and refused by the model's check: the echo model has no vision.
        ({"type": "input_image", "file_id": image, "detail": "auto"}, "no vision capability"),
        ({"type": "input_image", "file_id": text, "detail": "auto"}, "a.txt is not an image"),
        ({"type": "input_file", "file_data": archive, "filename": "a.zip"}, "a ZIP archive"),
    ]
    for part, words in cases:
        refused = await client.post("/v1/responses", json=message(part))
        assert refused.status_code == 400, refused.text
        assert words in refused.json()["message"], refused.text
    assert refused.json()["param"] == "input[0].content[0]"
    assert (await client.get("/v1/conversations")).json() == []


async def test_a_background_response_reads_its_file_in_its_job(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    file_id = await uploaded(client, b"Read me later.", "later.txt")
    body = {**message({"type": "input_file", "file_id": file_id}), "background": True}
    queued = await client.post("/v1/responses", json=body)
    assert queued.status_code == 200, queued.text
    await run_jobs(app)
    done = (await client.get(f"/v1/responses/{queued.json()['id']}")).json()
    assert done["status"] == "completed", done
    assert done["output_text"] == "echo: later.txt\nRead me later."
