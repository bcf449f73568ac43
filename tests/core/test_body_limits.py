"""Request size limits: a JSON body over its route's limit is a 413 with a JSON error body before
anything parses it (declared or chunked); uploads keep their own, larger limit; lists over their
item limit are a 413 before their items are validated."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from maestrale.app import create_app
from maestrale.config import Settings
from maestrale.core.sizes import MAX_CONVERSATION_INPUTS, MAX_EMBEDDING_INPUTS, MAX_MESSAGES
from maestrale.engines.builtin.directives import MAX_SLEEP_MS, parse_directives
from tests.support import app_fixtures
from tests.support.app_fixtures import ADMIN_KEY, make_client

LIMIT = 64 * 1024


@pytest.fixture
async def small(database_url: str, tmp_path: Path) -> AsyncIterator[FastAPI]:
    """An app whose JSON routes take at most 64 KiB (OCR: a 1 MiB document inline)."""
    settings = app_fixtures.test_settings(
        database_url,
        tmp_path / "data",
        max_json_request_bytes=LIMIT,
        fetch_max_bytes=1024 * 1024,
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


def assert_too_large(response: httpx.Response, code: str = "payload_too_large") -> None:
    assert response.status_code == 413, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["object"] == "error" and body["code"] == code, body


def test_json_bodies_get_a_much_smaller_default_than_uploads() -> None:
    settings = Settings()
    assert settings.max_json_request_bytes * 16 <= settings.max_request_bytes
    limits = settings.body_limits
    assert limits.of("/v1/chat/completions") == (settings.max_json_request_bytes, False)
    assert limits.of("/v1/files") == (settings.max_request_bytes, True)
    assert limits.of("/v1/audio/transcriptions/") == (settings.max_request_bytes, True)
    # OCR takes a document inline (base64) as large as the URLs it fetches.
    assert limits.of("/v1/ocr")[0] > settings.fetch_max_bytes * 4 // 3


async def test_the_default_limit_refuses_a_large_chat_body(client: httpx.AsyncClient) -> None:
    # Not even JSON: refused before anything parses it (else this would be a 422).
    body = b"[" * (Settings().max_json_request_bytes + 1)
    response = await client.post(
        "/v1/chat/completions", content=body, headers={"content-type": "application/json"}
    )
    assert_too_large(response)


@pytest.mark.parametrize(
    "path", ["/v1/chat/completions", "/v1/embeddings", "/v1/conversations", "/v1/agents"]
)
async def test_declared_and_chunked_bodies_over_the_limit(small: FastAPI, path: str) -> None:
    body = b'{"x": "' + b"a" * LIMIT + b'"}'
    async with make_client(small) as client:
        declared = await client.post(
            path, content=body, headers={"content-type": "application/json"}
        )
        assert_too_large(declared)

        async def chunks() -> AsyncIterator[bytes]:
            for start in range(0, len(body), 4096):
                yield body[start : start + 4096]

        chunked = await client.post(
            path, content=chunks(), headers={"content-type": "application/json"}
        )
        assert "content-length" not in chunked.request.headers
        assert_too_large(chunked)
        # Under the limit, the same route parses and answers as usual.
        fine = await client.post(path, json={"x": "a"})
        assert fine.status_code == 422, fine.text


async def test_a_chunked_body_under_the_limit_is_read_whole(small: FastAPI) -> None:
    text = "b " * (LIMIT // 4)

    async def chunks() -> AsyncIterator[bytes]:
        body = (
            f'{{"model": "maestrale-echo", "messages": [{{"role": "user", "content": "{text}"}}]}}'
        )
        for start in range(0, len(body), 1000):
            yield body[start : start + 1000].encode()

    async with make_client(small) as client:
        response = await client.post(
            "/v1/chat/completions", content=chunks(), headers={"content-type": "application/json"}
        )
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == "echo: " + text.strip()


async def test_uploads_and_inline_documents_keep_their_larger_limits(small: FastAPI) -> None:
    async with make_client(small) as client:
        upload = await client.post(
            "/v1/files",
            files={"file": ("big.jsonl", b'{"a": 1}\n' * (LIMIT // 4))},
            data={"purpose": "batch"},
        )
        assert upload.status_code == 200, upload.text
        assert upload.json()["bytes"] > LIMIT
        document = "data:application/pdf;base64," + "A" * (2 * LIMIT)
        ocr = await client.post(
            "/v1/ocr",
            json={
                "model": "no-such-ocr",
                "document": {"type": "document_url", "document_url": document},
            },
        )
        assert ocr.status_code != 413, ocr.text


async def test_observability_routes_answer_in_their_own_shape(small: FastAPI) -> None:
    async with make_client(small) as client:
        response = await client.post(
            "/v1/observability/datasets",
            content=b"{" * (LIMIT + 1),
            headers={"content-type": "application/json"},
        )
    assert response.status_code == 413
    assert set(response.json()["detail"]) == {"message", "error_code"}


async def test_admin_routes_have_the_json_limit(small: FastAPI) -> None:
    async with make_client(small, None) as client:
        response = await client.post(
            "/v1/admin/workspaces",
            content=b"{" * (LIMIT + 1),
            headers={"content-type": "application/json", "x-api-key": ADMIN_KEY},
        )
    assert_too_large(response)


def tiny(count: int) -> list[dict[str, Any]]:
    return [{"role": "user", "content": "x"}] * count


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/chat/completions", {"model": "maestrale-echo", "messages": tiny(MAX_MESSAGES + 1)}),
        ("/v1/agents/completions", {"agent_id": "ag_x", "messages": tiny(MAX_MESSAGES + 1)}),
        (
            "/v1/embeddings",
            {"model": "maestrale-embed", "input": ["x"] * (MAX_EMBEDDING_INPUTS + 1)},
        ),
        (
            "/v1/conversations",
            {"model": "maestrale-echo", "inputs": tiny(MAX_CONVERSATION_INPUTS + 1)},
        ),
        ("/v1/conversations/conv_x", {"inputs": tiny(MAX_CONVERSATION_INPUTS + 1)}),
    ],
    ids=["chat", "agent completions", "embeddings", "conversation start", "append"],
)
async def test_too_many_items_is_a_413(
    client: httpx.AsyncClient, path: str, body: dict[str, Any]
) -> None:
    assert_too_large(await client.post(path, json=body), "too_many_items")


async def test_item_limits_leave_room(client: httpx.AsyncClient) -> None:
    inputs = ["x"] * MAX_EMBEDDING_INPUTS
    response = await client.post(
        "/v1/embeddings", json={"model": "maestrale-embed", "input": inputs}
    )
    assert response.status_code == 200, response.text
    assert len(response.json()["data"]) == MAX_EMBEDDING_INPUTS


def test_builtin_sleep_is_capped() -> None:
    # The builtin contract (README): `/sleep MS` waits at most a minute, whatever MS says.
    assert MAX_SLEEP_MS == 60_000
    assert parse_directives("/sleep 1e300").sleep_ms == MAX_SLEEP_MS
    assert parse_directives("/sleep 40000\n/sleep 40000").sleep_ms == MAX_SLEEP_MS
    assert parse_directives("/sleep 1e999").text == "/sleep 1e999"  # not a number: text
