"""The console's session and API proxy over HTTP (no visitor): sign-in, the cookie, the CSRF
check, the key swap, the end of a session with its key, and the security headers."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select, update

from maestrale.app import create_app
from maestrale.console.session import COOKIE
from maestrale.console.tables import ConsoleSession
from maestrale.core.clock import utcnow
from maestrale.core.db import Database
from maestrale.services import Services
from tests.support.app_fixtures import (
    ADMIN_KEY,
    API_KEY,
    create_owner_key,
    make_client,
)
from tests.support.app_fixtures import test_settings as make_settings

pytestmark = pytest.mark.both_databases("maestrale.console.repository")


def db_of(app: FastAPI) -> Database:
    services: Services = app.state.services
    return services.db


@pytest.fixture
async def visitor(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """A client with no key of its own, as a visitor is."""
    async with make_client(app, key=None) as c:
        yield c


async def sign_in(client: httpx.AsyncClient, api_key: str = API_KEY, admin_key: str = "") -> str:
    """Signs in with the form as a visitor does; returns the page's CSRF token."""
    answer = await client.post(
        "/console/session", data={"api_key": api_key, "admin_key": admin_key}
    )
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"] == "/console/playground"
    page = await client.get("/console/playground")
    assert page.status_code == 200
    match = re.search(r'<meta name="csrf-token" content="([^"]+)">', page.text)
    assert match is not None
    return match.group(1)


async def test_sign_in_sets_an_httponly_strict_cookie_that_holds_no_key(
    app: FastAPI, visitor: httpx.AsyncClient
) -> None:
    answer = await visitor.post("/console/session", data={"api_key": API_KEY})
    assert answer.status_code == 303
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=")
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie or "SameSite=Strict" in cookie
    assert "Path=/console" in cookie
    assert API_KEY not in cookie
    assert "Secure" not in cookie  # plain http here; https requests get Secure
    # The row keeps the key sealed, and the token only as its hash.
    token = visitor.cookies[COOKIE]
    async with db_of(app).transaction() as work:
        rows = (await work.session.execute(select(ConsoleSession))).scalars().all()
    assert len(rows) == 1
    assert rows[0].id != token
    assert API_KEY not in rows[0].api_key
    assert rows[0].admin_key is None


async def test_signing_in_again_replaces_the_session(
    app: FastAPI, visitor: httpx.AsyncClient
) -> None:
    first = await sign_in(visitor)
    old_cookie = visitor.cookies[COOKIE]
    second = await sign_in(visitor, admin_key=ADMIN_KEY)
    assert visitor.cookies[COOKIE] != old_cookie
    assert second != first
    async with db_of(app).transaction() as work:
        rows = (await work.session.execute(select(ConsoleSession))).scalars().all()
    assert len(rows) == 1
    assert rows[0].admin_key is not None


async def test_the_cookie_is_secure_over_https(app: FastAPI) -> None:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="https://test") as client:
        answer = await client.post("/console/session", data={"api_key": API_KEY})
        assert answer.status_code == 303
        assert "Secure" in answer.headers["set-cookie"]
        assert (await client.get("/console/playground")).status_code == 200


async def test_a_bad_key_shows_the_sign_in_page_again_with_the_reason(
    visitor: httpx.AsyncClient,
) -> None:
    answer = await visitor.post("/console/session", data={"api_key": "msk_nope"})
    assert answer.status_code == 401
    assert "This API key is not valid" in answer.text
    assert COOKIE not in answer.headers.get("set-cookie", "")
    admin_first = await visitor.post("/console/session", data={"api_key": ADMIN_KEY})
    assert "This is an admin key" in admin_first.text
    bad_admin = await visitor.post(
        "/console/session", data={"api_key": API_KEY, "admin_key": API_KEY}
    )
    assert bad_admin.status_code == 401
    assert "The admin key is not valid" in bad_admin.text


async def test_pages_need_a_session(visitor: httpx.AsyncClient) -> None:
    assert (await visitor.get("/console")).headers["location"] == "/console/playground"
    for path in ("/console/playground", "/console/admin/keys", "/console/files"):
        answer = await visitor.get(path)
        assert answer.status_code == 303, path
        assert answer.headers["location"].startswith("/console/sign-in")


async def test_the_proxy_refuses_without_a_session_and_without_the_csrf_header(
    visitor: httpx.AsyncClient,
) -> None:
    no_session = await visitor.get("/console/api/v1/models", headers={"x-csrf-token": "x"})
    assert no_session.status_code == 401
    assert no_session.json()["code"] == "console_session_expired"
    csrf = await sign_in(visitor)
    for headers in ({}, {"x-csrf-token": "wrong"}):
        refused = await visitor.get("/console/api/v1/models", headers=headers)
        assert refused.status_code == 403
        assert refused.json()["code"] == "console_csrf_failed"
    posted = await visitor.post(
        "/console/api/v1/chat/completions",
        json={"model": "maestrale-echo", "messages": [{"role": "user", "content": "hi"}]},
    )
    assert posted.status_code == 403
    # A page of another site can send neither the cookie (SameSite) nor the token; even with
    # both, an Origin that is not this server's is refused.
    cross = await visitor.get(
        "/console/api/v1/models",
        headers={"x-csrf-token": csrf, "origin": "https://evil.example"},
    )
    assert cross.status_code == 403
    assert cross.json()["code"] == "console_cross_site"


async def test_the_proxy_calls_the_public_api_with_the_session_s_key(
    visitor: httpx.AsyncClient,
) -> None:
    csrf = await sign_in(visitor)
    headers = {"x-csrf-token": csrf}
    models = await visitor.get("/console/api/v1/models", headers=headers)
    assert models.status_code == 200
    assert "maestrale-echo" in {m["id"] for m in models.json()["data"]}
    chat = await visitor.post(
        "/console/api/v1/chat/completions",
        headers=headers,
        json={"model": "maestrale-echo", "messages": [{"role": "user", "content": "hello"}]},
    )
    assert chat.status_code == 200
    assert chat.json()["choices"][0]["message"]["content"] == "echo: hello"
    # The API's own errors pass through as they are.
    missing = await visitor.get("/console/api/v1/files/nope", headers=headers)
    assert missing.status_code == 404
    assert missing.json()["object"] == "error"
    # The browser's own auth headers are not passed on: the session's key is the one used.
    forged = await visitor.get(
        "/console/api/v1/models",
        headers={**headers, "authorization": "Bearer msk_forged", "x-api-key": "msa_forged"},
    )
    assert forged.status_code == 200
    # Only /v1 paths are proxied.
    other = await visitor.get("/console/api/health", headers=headers)
    assert other.status_code == 404


async def test_the_proxy_streams_server_sent_events(visitor: httpx.AsyncClient) -> None:
    csrf = await sign_in(visitor)
    body = {
        "model": "maestrale-echo",
        "stream": True,
        "messages": [{"role": "user", "content": "one two three"}],
    }
    chunks = []
    async with visitor.stream(
        "POST", "/console/api/v1/chat/completions", headers={"x-csrf-token": csrf}, json=body
    ) as answer:
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith("text/event-stream")
        async for line in answer.aiter_lines():
            if line.startswith("data: "):
                chunks.append(line[6:])
    assert chunks[-1] == "[DONE]"
    assert len(chunks) > 3  # one chunk a token, not one buffered answer


async def test_admin_paths_get_the_admin_key_only_when_signed_in_with_one(
    visitor: httpx.AsyncClient,
) -> None:
    csrf = await sign_in(visitor)
    refused = await visitor.get("/console/api/v1/admin/workspaces", headers={"x-csrf-token": csrf})
    assert refused.status_code == 403
    assert refused.json()["code"] == "console_admin_key_missing"
    assert (
        '<meta name="console-admin" content="0">' in (await visitor.get("/console/playground")).text
    )
    csrf = await sign_in(visitor, admin_key=ADMIN_KEY)
    assert (
        '<meta name="console-admin" content="1">' in (await visitor.get("/console/playground")).text
    )
    spaces = await visitor.get("/console/api/v1/admin/workspaces", headers={"x-csrf-token": csrf})
    assert spaces.status_code == 200
    assert spaces.json()["items"]


async def test_a_revoked_key_ends_the_session(app: FastAPI, visitor: httpx.AsyncClient) -> None:
    async with make_client(app, key=None) as admin:
        admin.headers["x-api-key"] = ADMIN_KEY
        created = await create_owner_key(admin)
        csrf = await sign_in(visitor, api_key=created["key"])
        headers = {"x-csrf-token": csrf}
        assert (await visitor.get("/console/api/v1/models", headers=headers)).status_code == 200
        revoked = await admin.delete(f"/v1/admin/api-keys/{created['key_id']}")
        assert revoked.status_code in (200, 204), revoked.text
    # The API's 401 is passed on, and the session is gone with it.
    answer = await visitor.get("/console/api/v1/models", headers=headers)
    assert answer.status_code == 401
    assert answer.json()["code"] == "invalid_api_key"
    again = await visitor.get("/console/api/v1/models", headers=headers)
    assert again.json()["code"] == "console_session_expired"
    page = await visitor.get("/console/playground")
    assert page.status_code == 303
    assert page.headers["location"] == "/console/sign-in?expired=1"
    sign_in_page = await visitor.get(page.headers["location"])
    assert "Your session ended (key expired or revoked): sign in again." in sign_in_page.text


async def test_a_page_load_after_the_key_was_revoked_goes_to_sign_in_with_the_message(
    app: FastAPI, visitor: httpx.AsyncClient
) -> None:
    async with make_client(app, key=None) as admin:
        admin.headers["x-api-key"] = ADMIN_KEY
        created = await create_owner_key(admin)
        await sign_in(visitor, api_key=created["key"])
        await admin.delete(f"/v1/admin/api-keys/{created['key_id']}")
    page = await visitor.get("/console/files")
    assert page.headers["location"] == "/console/sign-in?expired=1"


async def test_an_expired_session_is_refused_and_removed(
    app: FastAPI, visitor: httpx.AsyncClient
) -> None:
    csrf = await sign_in(visitor)
    async with db_of(app).transaction() as work:
        await work.session.execute(
            update(ConsoleSession).values(expires_at=utcnow() - timedelta(seconds=1))
        )
    answer = await visitor.get("/console/api/v1/models", headers={"x-csrf-token": csrf})
    assert answer.status_code == 401
    assert answer.json()["code"] == "console_session_expired"
    async with db_of(app).transaction() as work:
        assert (await work.session.execute(select(ConsoleSession))).first() is None
    page = await visitor.get("/console/playground")
    assert page.headers["location"] == "/console/sign-in?expired=1"


async def test_sign_out_needs_the_csrf_token_and_ends_the_session(
    visitor: httpx.AsyncClient,
) -> None:
    csrf = await sign_in(visitor)
    refused = await visitor.post("/console/session/delete", data={"csrf_token": "wrong"})
    assert refused.status_code == 403
    assert (await visitor.get("/console/playground")).status_code == 200
    out = await visitor.post("/console/session/delete", data={"csrf_token": csrf})
    assert out.status_code == 303
    assert out.headers["location"] == "/console/sign-in?signed_out=1"
    assert f'{COOKIE}=""' in out.headers["set-cookie"] or "Max-Age=0" in out.headers["set-cookie"]
    # The old token is dead even if a copy of the cookie survives.
    assert (await visitor.get("/console/playground")).status_code == 303


async def test_console_responses_carry_a_strict_csp(visitor: httpx.AsyncClient) -> None:
    csrf = await sign_in(visitor)
    for answer in (
        await visitor.get("/console/sign-in"),
        await visitor.get("/console/playground"),
        await visitor.get("/console/static/js/app.js"),
        await visitor.get("/console/static/console.css"),
        await visitor.get("/console/api/v1/models", headers={"x-csrf-token": csrf}),
        await visitor.get("/console/api/v1/models"),
    ):
        csp = answer.headers["content-security-policy"]
        assert "script-src 'self'" in csp
        assert "unsafe-inline" not in csp
        assert "frame-ancestors 'none'" in csp
        assert answer.headers["x-content-type-options"] == "nosniff"
    page = await visitor.get("/console/playground")
    assert page.headers["cache-control"] == "no-store"
    assert "<script>" not in page.text  # no inline script: the module is a file
    js = await visitor.get("/console/static/js/app.js")
    assert "javascript" in js.headers["content-type"]


async def test_the_shell_escapes_the_path_s_id(visitor: httpx.AsyncClient) -> None:
    await sign_in(visitor)
    page = await visitor.get('/console/conversations/"><img src=x onerror=alert(1)>')
    assert page.status_code == 200
    assert "<img src=x" not in page.text
    assert 'data-id="&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"' in page.text


async def test_json_sign_in(visitor: httpx.AsyncClient) -> None:
    answer = await visitor.post(
        "/console/session", json={"api_key": API_KEY, "admin_key": ADMIN_KEY}
    )
    assert answer.status_code == 201
    assert answer.json()["admin"] is True
    bad = await visitor.post("/console/session", json={"api_key": "nope"})
    assert bad.status_code == 401
    assert bad.json()["code"] == "console_sign_in_refused"


async def test_no_key_reaches_the_logs(
    visitor: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level("DEBUG")
    csrf = await sign_in(visitor, admin_key=ADMIN_KEY)
    await visitor.get("/console/api/v1/models", headers={"x-csrf-token": csrf})
    await visitor.get("/console/api/v1/admin/workspaces", headers={"x-csrf-token": csrf})
    assert API_KEY not in caplog.text
    assert ADMIN_KEY not in caplog.text


async def test_uploads_stream_through_the_proxy_under_the_upload_limit(
    database_url: str, tmp_path: Path
) -> None:
    """The proxy's outer request is not held to the JSON body limit: the inner call to /v1/files
    applies the upload limit (and JSON routes keep theirs)."""
    settings = make_settings(
        database_url, tmp_path / "data", max_json_request_bytes=1024, max_request_bytes=64 * 1024
    )
    application = create_app(settings)
    async with (
        application.router.lifespan_context(application),
        make_client(application, key=None) as client,
    ):
        csrf = await sign_in(client)
        headers = {"x-csrf-token": csrf}
        body = b"x" * 20_000
        files = {"file": ("big.txt", body, "text/plain")}
        done = await client.post(
            "/console/api/v1/files", headers=headers, files=files, data={"purpose": "ocr"}
        )
        assert done.status_code in (200, 201), done.text
        assert done.json()["bytes"] == len(body)
        content = await client.get(
            f"/console/api/v1/files/{done.json()['id']}/content",
            headers={**headers, "accept": "application/octet-stream", "range": "bytes=0-9"},
        )
        assert content.status_code == 206
        assert content.content == b"x" * 10
        too_big = {"file": ("huge.txt", b"x" * 70_000, "text/plain")}
        refused = await client.post("/console/api/v1/files", headers=headers, files=too_big)
        assert refused.status_code == 413
        big_json = await client.post(
            "/console/api/v1/chat/completions",
            headers=headers,
            json={
                "model": "maestrale-echo",
                "messages": [{"role": "user", "content": "y" * 2000}],
            },
        )
        assert big_json.status_code == 413
