"""Chat completion events created the way production creates them: through /v1/chat/completions."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import FastAPI

SEED: list[tuple[str, str, dict[str, Any]]] = [
    ("corr-A1", "alpha one", {"team": "red", "score": 5, "flag": True, "tags": ["a", "b"]}),
    ("corr-B2", "beta two", {"team": "blue", "score": 2.5}),
    ("CORR-c3", "gamma three", {"team": "Red"}),
]


async def make_event(
    client: httpx.AsyncClient, correlation_id: str, text: str, metadata: dict[str, Any]
) -> None:
    resp = await client.post(
        "/v1/chat/completions",
        json={
            "model": "maestrale-echo",
            "messages": [{"role": "user", "content": text}],
            "metadata": metadata,
        },
        headers={"x-correlation-id": correlation_id},
    )
    assert resp.status_code == 200, resp.text


async def seed_events(app: FastAPI, client: httpx.AsyncClient) -> None:
    for correlation_id, text, metadata in SEED:
        await make_event(client, correlation_id, text, metadata)
    await app.state.services.recorder.flush()


def obs_error(resp: httpx.Response, status: int, code: str) -> str:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) == {"detail"} and set(body["detail"]) == {"message", "error_code"}, body
    assert body["detail"]["error_code"] == code, body
    message: str = body["detail"]["message"]
    return message
