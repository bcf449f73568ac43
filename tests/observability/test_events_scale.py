"""The bounded-cost paths of events at scale: search-ids in chunks, options from an index or a
recent window, and the keyset order the indexes serve."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import insert

from maestrale.accounting.tables import ChatCompletionEvent
from maestrale.core.auth.principal import Tenant
from maestrale.core.ids import new_id
from maestrale.observability.events import repository
from tests.support.app_fixtures import TenantKey

SEARCH = "/v1/observability/chat-completion-events/search"
IDS = "/v1/observability/chat-completion-events/search-ids"
FIELDS = "/v1/observability/chat-completion-fields"
START = datetime(2026, 1, 1, tzinfo=UTC)


def row(tenant: Tenant, minute: int, model: str, team: str | None) -> dict[str, Any]:
    return {
        "id": new_id(),
        "organization_id": tenant.organization_id,
        "workspace_id": tenant.workspace_id,
        "correlation_id": f"c-{minute}",
        "model": model,
        "extra_fields": {"team": team} if team else {},
        "created_at": START + timedelta(minutes=minute),
    }


@pytest.fixture
async def events(app: FastAPI, tenant: Tenant, other: TenantKey) -> list[dict[str, Any]]:
    """Eleven events here (two share a created_at), newest last; three in another workspace."""
    mine = [row(tenant, m, f"model-{m % 4}", f"team-{m}") for m in range(10)]
    mine.append({**row(tenant, 9, "model-1", "team-twin"), "correlation_id": "c-9b"})
    foreign = [row(other.tenant, m, "foreign-model", "foreign-team") for m in range(3)]
    async with app.state.services.db.transaction() as work:
        await work.session.execute(insert(ChatCompletionEvent), mine + foreign)
    return mine


def newest_first(rows: list[dict[str, Any]]) -> list[str]:
    return [r["id"] for r in sorted(rows, key=lambda r: (r["created_at"], r["id"]), reverse=True)]


async def test_search_ids_streams_across_chunks(
    events: list[dict[str, Any]], client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(repository, "ID_CHUNK", 3)  # 11 ids: chunks of 3, 3, 3 and 2
    resp = await client.post(IDS, json={"search_params": {"filters": None}})
    assert resp.status_code == 200, resp.text
    assert resp.json()["completion_event_ids"] == newest_first(events)
    team = {"field": "model", "op": "eq", "value": "model-1"}
    resp = await client.post(IDS, json={"search_params": {"filters": team}})
    assert resp.json()["completion_event_ids"] == newest_first(
        [e for e in events if e["model"] == "model-1"]
    )


async def test_cursor_pages_follow_the_index_order(
    events: list[dict[str, Any]], client: httpx.AsyncClient
) -> None:
    """Pages of 2 over a model filter (ix_cce_ws_model_created) and over everything, through
    the tie on created_at: every id once, in (created_at, id) descending order."""
    for filters, expected in (
        (None, newest_first(events)),
        (
            {"field": "model", "op": "includes", "value": ["model-1", "model-2"]},
            newest_first([e for e in events if e["model"] in ("model-1", "model-2")]),
        ),
    ):
        seen: list[str] = []
        cursor = None
        while True:
            params: dict[str, Any] = {"page_size": 2, **({"cursor": cursor} if cursor else {})}
            resp = await client.post(
                SEARCH, json={"search_params": {"filters": filters}}, params=params
            )
            page = resp.json()["completion_events"]
            seen += [e["event_id"] for e in page["results"]]
            cursor = page["cursor"]
            if not cursor:
                break
        assert seen == expected


async def test_model_options_by_loose_index_scan(
    events: list[dict[str, Any]], client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    resp = await client.get(f"{FIELDS}/model/options", params={"operator": "eq"})
    assert resp.json() == {"options": ["model-0", "model-1", "model-2", "model-3"]}
    monkeypatch.setattr(repository, "MAX_OPTIONS", 2)
    resp = await client.get(f"{FIELDS}/model/options", params={"operator": "eq"})
    assert resp.json() == {"options": ["model-0", "model-1"]}


async def test_extra_options_come_from_the_recent_window(
    events: list[dict[str, Any]], client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"{FIELDS}/extra_fields.team/options"
    resp = await client.get(url, params={"operator": "eq"})
    assert resp.json()["options"] == sorted({e["extra_fields"]["team"] for e in events})
    # The 3 newest events: minute 9 twice and minute 8 (the twin ties at minute 9).
    monkeypatch.setattr(repository, "OPTION_WINDOW", 3)
    resp = await client.get(url, params={"operator": "eq"})
    assert resp.json()["options"] == ["team-8", "team-9", "team-twin"]
    # Option counts stay exact over the whole workspace.
    resp = await client.post(f"{FIELDS}/model/options-counts", json={"filter_params": None})
    counts = {c["value"]: c["count"] for c in resp.json()["counts"]}
    assert counts == {"model-0": 3, "model-1": 4, "model-2": 2, "model-3": 2}
