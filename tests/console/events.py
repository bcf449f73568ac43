"""Data for the console's observability tests, made through the public API of the live server:
chat completion events (the way production records them) tagged with a run marker, so that
tests sharing the server see their own events only."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx

from tests.support.app_fixtures import API_KEY

XSS = "<script>alert(1)</script> <img src=x onerror=alert(1)>"
HEADERS = {"Authorization": f"Bearer {API_KEY}"}
SEARCH_IDS = "/v1/observability/chat-completion-events/search-ids"


def marker() -> str:
    return f"run{uuid.uuid4().hex[:12]}"


def client(url: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=url, headers=HEADERS, timeout=60)


async def make_events(url: str, suite: str, texts: list[str]) -> list[str]:
    """One event per text (metadata `suite` and `n`), then their ids once recorded, newest
    first."""
    async with client(url) as api:
        for n, text in enumerate(texts):
            resp = await api.post(
                "/v1/chat/completions",
                json={
                    "model": "maestrale-echo",
                    "messages": [{"role": "user", "content": text}],
                    "metadata": {"suite": suite, "n": n},
                },
            )
            assert resp.status_code == 200, resp.text
        condition = {"field": "extra_fields.suite", "op": "eq", "value": suite}
        search: dict[str, Any] = {"search_params": {"filters": condition}}
        for _ in range(200):  # the recorder writes events in the background
            resp = await api.post(SEARCH_IDS, json=search)
            ids: list[str] = resp.json()["completion_event_ids"]
            if len(ids) >= len(texts):
                return ids
            await asyncio.sleep(0.1)
    raise AssertionError("the events were not recorded")
