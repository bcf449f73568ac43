"""Helpers of the triggers' tests: webhooks signed as GitHub signs, agents on the builtin model,
deliveries, and the in-process worker that dispatches them."""

from __future__ import annotations

import hashlib
import hmac
import uuid
from typing import Any

import httpx
import orjson
from fastapi import FastAPI

from maestrale.core.jobs.worker import Worker

SECRET = "trigger-test-secret"


async def github_webhook(client: httpx.AsyncClient, name: str = "repo events") -> dict[str, Any]:
    resp = await client.post(
        "/v1/webhooks", json={"provider": "github", "name": name, "secret": SECRET}
    )
    assert resp.status_code == 201, resp.text
    body: dict[str, Any] = resp.json()
    return body


async def echo_agent(client: httpx.AsyncClient, name: str = "responder") -> str:
    resp = await client.post("/v1/agents", json={"model": "maestrale-echo", "name": name})
    assert resp.status_code in (200, 201), resp.text
    return str(resp.json()["id"])


def github_headers(body: bytes, event: str = "push", depth: int | None = None) -> dict[str, str]:
    signature = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    headers = {
        "X-Hub-Signature-256": f"sha256={signature}",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "Content-Type": "application/json",
    }
    if depth is not None:
        headers["X-Maestrale-Trigger-Depth"] = str(depth)
    return headers


async def deliver(
    client: httpx.AsyncClient,
    webhook: dict[str, Any],
    payload: Any,
    event: str = "push",
) -> httpx.Response:
    """A delivery signed as GitHub signs it, to the webhook's receiving path (`client` needs
    no API key there)."""
    body = payload if isinstance(payload, bytes) else orjson.dumps(payload)
    path = httpx.URL(webhook["url"]).path
    return await client.post(path, content=body, headers=github_headers(body, event))


async def run_jobs(app: FastAPI, timeout: float = 30) -> None:
    worker = Worker(
        app.state.services.db,
        app.state.services.job_registry,
        owner="test-worker",
        concurrency=2,
        lease_seconds=10,
        poll_seconds=0.05,
    )
    await worker.run_until_idle(timeout)


def trigger_body(
    webhook_id: str, handler: str, primitive_id: str, action: str, **extra: Any
) -> dict[str, Any]:
    return {
        "event_source_id": webhook_id,
        "handler": handler,
        "action": {"primitive_id": primitive_id, "type": action},
        "owner_type": "workspace",
        "title": "on push",
        **extra,
    }
