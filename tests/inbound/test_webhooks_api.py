"""Inbound webhooks through the ASGI app: the five SDK operations and their shapes, tenancy, the
signing secret read once and sealed, and the receiving URL verifying deliveries signed as GitHub,
Slack and Stripe sign them (each verified, tampered, replayed and stale one), with its limits."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from maestrale.app import create_app
from maestrale.core.jobs.tables import Job
from maestrale.inbound.webhooks.tables import Webhook, WebhookDelivery
from tests.support.app_fixtures import TenantKey, make_client
from tests.support.app_fixtures import test_settings as make_settings

SECRET = "It's a Secret to Everybody"
REQUIRED = {
    "id", "creator_id", "organization_id", "workspace_id", "owner_type", "provider", "name",
    "url", "http_method", "url_verified", "signature_hash_algorithm", "signature_header_name",
    "validity_period_second", "signature_extractor_regex", "timestamp_extractor_regex",
    "signature_payload_pattern", "signature_encoding", "success_status_code", "event_type_path",
    "expires_at", "created_at", "updated_at",
}  # fmt: skip


def _hex(secret: str, payload: bytes, digest: Any = hashlib.sha256) -> str:
    return hmac.new(secret.encode(), payload, digest).hexdigest()


async def _create(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    created = await client.post("/v1/webhooks", json={"name": "hook", "secret": SECRET, **body})
    assert created.status_code == 201, created.text
    out: dict[str, Any] = created.json()
    return out


async def _chunks(*parts: bytes) -> AsyncIterator[bytes]:
    for part in parts:
        yield part


def _path(hook: dict[str, Any]) -> str:
    return f"/v1/webhooks/{hook['id']}/receive"


async def _jobs(app: FastAPI) -> list[Job]:
    async with app.state.services.db.transaction() as work:
        found = await work.session.execute(select(Job).where(Job.kind == "inbound.delivery"))
        return list(found.scalars())


async def _deliveries(app: FastAPI, webhook_id: str) -> list[WebhookDelivery]:
    async with app.state.services.db.transaction() as work:
        found = await work.session.execute(
            select(WebhookDelivery).where(WebhookDelivery.webhook_id == webhook_id)
        )
        return list(found.scalars())


async def test_crud_and_shapes(client: httpx.AsyncClient, anon_client: httpx.AsyncClient) -> None:
    hook = await _create(client, provider="github")
    assert hook.keys() >= REQUIRED
    assert hook["url"] == f"http://test/v1/webhooks/{hook['id']}/receive"
    assert len(hook["id"]) >= 32 and hook["http_method"] == "POST"
    assert hook["owner_type"] == "workspace" and hook["success_status_code"] == 200
    assert hook["signature_header_name"] == "X-Hub-Signature-256"
    assert hook["signature_extractor_regex"] == "sha256=(.*)"
    assert hook["event_type_path"] == "headers.X-GitHub-Event"
    assert "secret" not in hook and hook["expires_at"] is None
    listed = (await client.get("/v1/webhooks")).json()
    assert [h["id"] for h in listed] == [hook["id"]]
    assert (await client.get(f"/v1/webhooks/{hook['id']}")).json() == hook
    assert (await client.delete(f"/v1/webhooks/{hook['id']}")).status_code == 204
    assert (await client.get(f"/v1/webhooks/{hook['id']}")).status_code == 404
    gone = await anon_client.post(_path(hook), content=b"{}")
    assert gone.status_code == 404 and gone.json()["code"] == "webhook_not_found"
    expired = await _create(client, provider="github", expires_at="2020-01-01T00:00:00Z")
    assert (await anon_client.post(_path(expired), content=b"{}")).status_code == 410


async def test_another_workspace_sees_nothing(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    hook = await _create(client, provider="github")
    async with make_client(app, other.key) as foreign:
        assert (await foreign.get("/v1/webhooks")).json() == []
        for call in (
            foreign.get(f"/v1/webhooks/{hook['id']}"),
            foreign.get(f"/v1/webhooks/{hook['id']}/signing-secret"),
            foreign.get(f"/v1/webhooks/{hook['id']}/deliveries"),
            foreign.delete(f"/v1/webhooks/{hook['id']}"),
        ):
            assert (await call).status_code == 404
    assert (await client.get(f"/v1/webhooks/{hook['id']}")).status_code == 200


@pytest.mark.parametrize(
    "body",
    [
        {"provider": "github", "signature_hash_algorithm": "md5"},
        {"provider": "github", "signature_encoding": "base32"},
        {"provider": "carrier-pigeon"},
        {"provider": "github", "signature_extractor_regex": r"(a)\1"},
        {"provider": "github", "signature_extractor_regex": "(a)(b)"},
        {"provider": "github", "signature_extractor_regex": "a" * 600},
        {"provider": "github", "signature_payload_pattern": "{body}.{nonce}"},
        {"provider": "github", "validity_period_second": 0},
        {"provider": "github", "validity_period_second": 86400 * 7 + 1},
        {"provider": "github", "success_status_code": 300},
        {"provider": "github", "name": "n" * 257},
        {"provider": "github", "event_type_path": "query.type"},
        {"provider": "custom"},  # no signature header
        {"provider": "github", "secret": None},
        # {timestamp} with nowhere to read it from
        {"provider": "custom", "signature_header_name": "S",
         "signature_payload_pattern": "{timestamp}.{body}"},
    ],
)  # fmt: skip
async def test_invalid_settings_are_422(client: httpx.AsyncClient, body: dict[str, Any]) -> None:
    response = await client.post("/v1/webhooks", json={"name": "hook", "secret": SECRET, **body})
    assert response.status_code == 422, response.text


async def test_signing_secret_once_and_sealed(app: FastAPI, client: httpx.AsyncClient) -> None:
    hook = await _create(client, provider="linear", encryption_key="enc-key")
    first = await client.get(f"/v1/webhooks/{hook['id']}/signing-secret")
    assert first.status_code == 200 and first.json() == {"signing_secret": SECRET}
    again = await client.get(f"/v1/webhooks/{hook['id']}/signing-secret")
    assert again.status_code == 409 and again.json()["code"] == "signing_secret_already_read"
    async with app.state.services.db.transaction() as work:
        row = await work.session.get(Webhook, hook["id"])
        assert row is not None and row.secret_sealed and row.encryption_key_sealed
        assert SECRET not in row.secret_sealed and "enc-key" not in row.encryption_key_sealed


async def test_github_delivery(app: FastAPI, client: httpx.AsyncClient) -> None:
    hook = await _create(client, provider="github")
    body = orjson.dumps({"action": "opened", "number": 7})
    headers = {
        "X-Hub-Signature-256": "sha256=" + _hex(SECRET, body),
        "X-GitHub-Event": "pull_request",
        "X-GitHub-Delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
        "Authorization": "Bearer not-kept",
    }
    async with make_client(app, None) as provider:
        accepted = await provider.post(_path(hook), content=body, headers=headers)
        assert accepted.status_code == 200, accepted.text
        tampered = await provider.post(_path(hook), content=body + b" ", headers=headers)
        assert tampered.status_code == 401 and tampered.json()["code"] == "bad_signature"
        replayed = await provider.post(_path(hook), content=body, headers=headers)
        assert replayed.status_code == 409 and replayed.json()["code"] == "replayed"
        # A redelivery: the same event id, signed anew over an equal body with another key order.
        other = orjson.dumps({"number": 7, "action": "opened"})
        again = {**headers, "X-Hub-Signature-256": "sha256=" + _hex(SECRET, other)}
        assert (await provider.post(_path(hook), content=other, headers=again)).status_code == 409
    jobs = await _jobs(app)
    delivery_id = accepted.json()["delivery_id"]
    assert [j.payload for j in jobs] == [{"delivery_id": delivery_id}]
    assert jobs[0].workspace_id == hook["workspace_id"]
    rows = {r.id: r for r in await _deliveries(app, hook["id"])}
    ok = rows[delivery_id]
    assert (ok.status, ok.verified, ok.event_type) == ("accepted", True, "pull_request")
    assert ok.event_id == headers["X-GitHub-Delivery"] and ok.body == body.decode()
    assert "authorization" not in ok.headers and ok.headers["x-github-event"] == "pull_request"
    refused = sorted(r.status for r in rows.values() if r.id != delivery_id)
    assert refused == ["bad_signature", "replayed", "replayed"]
    assert not any(r.verified for r in rows.values() if r.id != delivery_id)
    assert (await client.get(f"/v1/webhooks/{hook['id']}")).json()["url_verified"] is True
    page = (await client.get(f"/v1/webhooks/{hook['id']}/deliveries?limit=3")).json()
    assert len(page["data"]) == 3 and page["next_cursor"]
    assert page["data"][0]["received_at"] >= page["data"][-1]["received_at"]
    rest = await client.get(
        f"/v1/webhooks/{hook['id']}/deliveries", params={"cursor": page["next_cursor"]}
    )
    assert len(rest.json()["data"]) == 1 and rest.json()["next_cursor"] is None
    ids = {d["id"] for d in page["data"]} | {d["id"] for d in rest.json()["data"]}
    assert ids == set(rows)


def _slack(body: bytes, at: int, secret: str = SECRET) -> dict[str, str]:
    base = f"v0:{at}:".encode() + body
    return {"X-Slack-Signature": "v0=" + _hex(secret, base), "X-Slack-Request-Timestamp": str(at)}


async def test_slack_delivery(app: FastAPI, client: httpx.AsyncClient) -> None:
    hook = await _create(client, provider="slack")
    assert hook["validity_period_second"] == 300
    assert hook["signature_payload_pattern"] == "v0:{timestamp}:{body}"
    now = int(time.time())
    event = orjson.dumps(
        {"type": "event_callback", "event_id": "Ev1", "event": {"type": "app_mention"}}
    )
    async with make_client(app, None) as slack:
        ok = await slack.post(_path(hook), content=event, headers=_slack(event, now))
        assert ok.status_code == 200, ok.text
        # The same body signed at another time (a tampered timestamp) does not verify.
        moved = {**_slack(event, now), "X-Slack-Request-Timestamp": str(now + 1)}
        assert (await slack.post(_path(hook), content=event, headers=moved)).status_code == 401
        assert (
            await slack.post(_path(hook), content=event, headers=_slack(event, now))
        ).status_code == 409
        old = orjson.dumps({"type": "event_callback", "event_id": "Ev2"})
        stale = await slack.post(_path(hook), content=old, headers=_slack(old, now - 600))
        assert stale.status_code == 401 and stale.json()["code"] == "stale"
        check = orjson.dumps({"type": "url_verification", "challenge": "3eZbrw1aBm2rZgRNFdxV2"})
        answer = await slack.post(_path(hook), content=check, headers=_slack(check, now))
        assert answer.status_code == 200 and answer.json() == {"challenge": "3eZbrw1aBm2rZgRNFdxV2"}
    assert len(await _jobs(app)) == 1
    rows = {r.status: r for r in await _deliveries(app, hook["id"])}
    assert rows["accepted"].event_type == "app_mention" and rows["accepted"].event_id == "Ev1"
    assert {"stale", "bad_signature", "replayed", "url_verification"} <= rows.keys()


def _stripe(body: bytes, at: int, secret: str = SECRET) -> dict[str, str]:
    signature = _hex(secret, f"{at}.".encode() + body)
    return {"Stripe-Signature": f"t={at},v1={signature},v0=deadbeef"}


async def test_stripe_as_custom(app: FastAPI, client: httpx.AsyncClient) -> None:
    hook = await _create(
        client,
        provider="custom",
        signature_header_name="Stripe-Signature",
        signature_extractor_regex=r"v1=([0-9a-f]+)",
        timestamp_extractor_regex=r"t=(\d+)",
        signature_payload_pattern="{timestamp}.{body}",
        validity_period_second=300,
        event_type_path="body.type",
        success_status_code=202,
    )
    now = int(time.time())
    body = orjson.dumps({"id": "evt_1", "type": "payment_intent.succeeded"})
    async with make_client(app, None) as stripe:
        ok = await stripe.post(_path(hook), content=body, headers=_stripe(body, now))
        assert ok.status_code == 202, ok.text
        bad = _stripe(body, now, secret="whsec_other")
        assert (await stripe.post(_path(hook), content=body, headers=bad)).status_code == 401
        assert (
            await stripe.post(_path(hook), content=body, headers=_stripe(body, now))
        ).status_code == 409
        old = orjson.dumps({"id": "evt_2", "type": "charge.failed"})
        stale = await stripe.post(_path(hook), content=old, headers=_stripe(old, now - 301))
        assert stale.status_code == 401 and stale.json()["code"] == "stale"
    assert len(await _jobs(app)) == 1
    accepted = [r for r in await _deliveries(app, hook["id"]) if r.status == "accepted"]
    assert [(r.event_type, r.event_id) for r in accepted] == [("payment_intent.succeeded", "evt_1")]


async def test_base64_sha1_signature(app: FastAPI, client: httpx.AsyncClient) -> None:
    hook = await _create(
        client,
        provider="custom",
        signature_header_name="X-Signature",
        signature_hash_algorithm="sha1",
        signature_encoding="base64",
        event_type_path="body.kind",
    )
    body = b'{"kind": "ping"}'
    mac = base64.b64encode(hmac.new(SECRET.encode(), body, hashlib.sha1).digest()).decode()
    async with make_client(app, None) as sender:
        ok = await sender.post(_path(hook), content=body, headers={"X-Signature": mac})
        assert ok.status_code == 200, ok.text
        wrong = {"X-Signature": base64.b64encode(b"x" * 20).decode()}
        assert (await sender.post(_path(hook), content=body, headers=wrong)).status_code == 401
        # Bytes no text column takes (NUL, invalid UTF-8) are kept replaced, not a 500.
        hostile = b'{"kind": "\\ud800"}\x00\xff'
        mac = base64.b64encode(hmac.new(SECRET.encode(), hostile, hashlib.sha1).digest()).decode()
        kept = await sender.post(_path(hook), content=hostile, headers={"X-Signature": mac})
        assert kept.status_code == 200, kept.text
    bodies = [r.body or "" for r in await _deliveries(app, hook["id"]) if r.status == "accepted"]
    assert sorted(bodies, key=len) == [body.decode(), '{"kind": "\\ud800"}\ufffd\ufffd']


async def test_loop_cut(app: FastAPI, client: httpx.AsyncClient) -> None:
    hook = await _create(client, provider="linear")
    body = b'{"type": "Issue", "id": "a"}'
    signed = {"Linear-Signature": _hex(SECRET, body)}
    async with make_client(app, None) as sender:
        bad = await sender.post(
            _path(hook), content=body, headers={**signed, "X-Maestrale-Trigger-Depth": "x"}
        )
        assert bad.status_code == 400
        cut = await sender.post(
            _path(hook), content=body, headers={**signed, "X-Maestrale-Trigger-Depth": "3"}
        )
        assert cut.status_code == 508 and cut.json()["code"] == "loop_cut"
    assert await _jobs(app) == []
    assert [(r.status, r.depth) for r in await _deliveries(app, hook["id"])] == [("loop_cut", 3)]


async def test_notion_verification(app: FastAPI, client: httpx.AsyncClient) -> None:
    created = await client.post("/v1/webhooks", json={"name": "notion", "provider": "notion"})
    assert created.status_code == 201, created.text
    hook = created.json()
    early = await client.get(f"/v1/webhooks/{hook['id']}/signing-secret")
    assert early.status_code == 409 and early.json()["code"] == "signing_secret_not_received"
    async with make_client(app, None) as notion:
        token = orjson.dumps({"verification_token": "secret_tok3n"})
        assert (await notion.post(_path(hook), content=token)).status_code == 200
        secret = await client.get(f"/v1/webhooks/{hook['id']}/signing-secret")
        assert secret.json() == {"signing_secret": "secret_tok3n"}
        assert (await client.get(f"/v1/webhooks/{hook['id']}")).json()["url_verified"] is True
        # Another token cannot replace it; events are signed with it from then on.
        again = orjson.dumps({"verification_token": "other"})
        assert (await notion.post(_path(hook), content=again)).status_code == 401
        event = orjson.dumps({"id": "e1", "type": "page.created"})
        headers = {"X-Notion-Signature": "sha256=" + _hex("secret_tok3n", event)}
        assert (await notion.post(_path(hook), content=event, headers=headers)).status_code == 200
    assert len(await _jobs(app)) == 1


async def test_size_and_rate_limits(database_url: str, tmp_path: Path) -> None:
    settings = make_settings(
        database_url,
        tmp_path / "data",
        inbound_max_body_bytes=1024,
        inbound_burst=4,
        inbound_rate_per_second=0.01,
        inbound_refused_rows_per_minute=1,
    )
    app = create_app(settings)
    async with app.router.lifespan_context(app), make_client(app) as client:
        hook = await _create(client, provider="github")
        async with make_client(app, None) as sender:
            big = await sender.post(_path(hook), content=b"x" * 2048)
            assert big.status_code == 413
            chunked = await sender.post(_path(hook), content=_chunks(b"x" * 600, b"y" * 600))
            assert chunked.status_code == 413
            forged = {"X-Hub-Signature-256": "sha256=" + "0" * 64}
            for _ in range(2):
                refused = await sender.post(_path(hook), content=b"{}", headers=forged)
                assert refused.status_code == 401
            # The bucket held four deliveries, all spent above, refused as they were.
            flood = await sender.post(_path(hook), content=b"{}", headers=forged)
            assert flood.status_code == 429 and int(flood.headers["Retry-After"]) >= 1
        # Refused deliveries are recorded one a minute here: the second is only counted.
        assert [r.status for r in await _deliveries(app, hook["id"])] == ["bad_signature"]
