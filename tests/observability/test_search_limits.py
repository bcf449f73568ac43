"""Hostile searches (issue 14, item 2): a regular expression with catastrophic backtracking, an
oversized or unsupported pattern, and a search that outlives its time budget each get a clear
answer in the group's error shape, and the server stays live meanwhile."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import insert

from maestrale.accounting.tables import ChatCompletionEvent
from maestrale.app import create_app
from maestrale.core.db import Database
from maestrale.core.ids import new_id
from maestrale.observability.filters import MAX_PATTERN_LENGTH
from tests.observability.events_seed import make_event, obs_error
from tests.support.app_fixtures import default_tenant, make_client
from tests.support.app_fixtures import test_settings as make_settings

pytestmark = pytest.mark.both_databases()

SEARCH = "/v1/observability/chat-completion-events/search"
IDS = "/v1/observability/chat-completion-events/search-ids"
COUNTS = "/v1/observability/chat-completion-fields/model/options-counts"
# A liveness bound, not a benchmark: Python's backtracking engine took ~40 s on this input and
# held the GIL all along, so nothing else (not even /health) ran before it finished.
LIVE = 10.0
CATASTROPHIC = "^(a+)+$"


def cond(field: str, op: str, value: Any) -> dict[str, Any]:
    return {"field": field, "op": op, "value": value}


def body(filters: Any) -> dict[str, Any]:
    return {"search_params": {"filters": filters}}


async def test_catastrophic_regex_answers_and_health_stays_live(
    app: FastAPI, client: httpx.AsyncClient, anon_client: httpx.AsyncClient
) -> None:
    await make_event(client, "corr-redos", "a" * 30 + "!", {"probe": "a" * 30 + "!"})
    await make_event(client, "corr-plain", "aaaa", {"probe": "aaaa"})
    await app.state.services.recorder.flush()
    started = time.monotonic()
    searching = asyncio.create_task(
        client.post(SEARCH, json=body(cond("extra_fields.probe", "matches", CATASTROPHIC)))
    )
    await asyncio.sleep(0.5)  # the search is in the database by now (or done)
    health = await anon_client.get("/health")
    health_seconds = time.monotonic() - started
    resp = await searching
    search_seconds = time.monotonic() - started
    assert health.status_code == 200
    assert health_seconds < LIVE and search_seconds < LIVE, (health_seconds, search_seconds)
    assert resp.status_code == 200, resp.text
    found = {e["correlation_id"] for e in resp.json()["completion_events"]["results"]}
    assert found == {"corr-plain"}
    # The same on the messages' text, and through search-ids.
    resp = await client.post(IDS, json=body(cond("request_text", "matches", CATASTROPHIC)))
    assert resp.status_code == 200, resp.text
    assert len(resp.json()["completion_event_ids"]) == 1


@pytest.mark.parametrize(
    ("pattern", "needle"),
    [
        ("a" * (MAX_PATTERN_LENGTH + 1), f"at most {MAX_PATTERN_LENGTH} characters"),
        (r"(a)\1", "regular expression"),  # backreferences: no linear-time engine has them
        ("(?=a)", "regular expression"),
        ("a{1001}", "regular expression"),
    ],
)
async def test_unsupported_patterns_are_400(
    client: httpx.AsyncClient, pattern: str, needle: str
) -> None:
    for field in ("correlation_id", "extra_fields.probe", "request_text"):
        resp = await client.post(SEARCH, json=body(cond(field, "matches", pattern)))
        assert needle in obs_error(resp, 400, "SEARCH_BAD_REQUEST")


async def test_a_pattern_postgres_refuses_is_a_400_there(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """RE2 runs `(?i:...)` groups; Postgres' engine takes options only at the start."""
    await make_event(client, "corr-x", "abc", {"probe": "aBc"})
    await app.state.services.recorder.flush()
    for field in ("extra_fields.probe", "request_text"):
        resp = await client.post(SEARCH, json=body(cond(field, "matches", "a(?i:B)c")))
        if app.state.services.db.is_sqlite:
            assert resp.status_code == 200, resp.text
            assert len(resp.json()["completion_events"]["results"]) == 1
        else:
            assert "regular expression" in obs_error(resp, 400, "SEARCH_BAD_REQUEST")


@pytest.fixture
async def budget_app(database_url: str, tmp_path: Path) -> AsyncIterator[FastAPI]:
    settings = make_settings(database_url, tmp_path / "data", observability_search_timeout=30.0)
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


async def test_a_search_past_its_budget_is_a_clear_408(budget_app: FastAPI) -> None:
    services = budget_app.state.services
    tenant = await default_tenant(services.db)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    rows = [
        {
            "id": new_id(),
            "organization_id": tenant.organization_id,
            "workspace_id": tenant.workspace_id,
            "correlation_id": f"c-{i}",
            "model": "m",
            "request_messages": [{"role": "user", "content": f"question number {i} " * 4}],
            "extra_fields": {"probe": f"value-{i}"},
            "created_at": start + timedelta(seconds=i),
        }
        for i in range(5000)
    ]
    async with services.db.transaction() as work:
        await work.session.execute(insert(ChatCompletionEvent), rows)
    slow = body(
        {
            "OR": [
                cond("extra_fields.probe", "matches", "^nothing-[0-9]+x$"),
                cond("request_text", "matches", "number [0-9]+z"),
            ]
        }
    )
    async with make_client(budget_app) as client:
        services.settings.observability_search_timeout = 0.001
        for path in (SEARCH, IDS, COUNTS):
            payload = slow if path != COUNTS else {"filter_params": slow["search_params"]}
            message = obs_error(await client.post(path, json=payload), 408, "DATABASE_TIMEOUT")
            assert "time budget" in message
        # The connection is not left with the budget: a search with room answers.
        services.settings.observability_search_timeout = 30.0
        resp = await client.post(SEARCH, json=slow, params={"page_size": 1})
        assert resp.status_code == 200, resp.text
        assert resp.json()["completion_events"]["results"] == []
        resp = await client.post(SEARCH, json=body(None), params={"page_size": 1})
        assert resp.json()["completion_events"]["results"][0]["correlation_id"] == "c-4999"


class _RegexError(Exception):
    """A driver error as Postgres raises it for a regular expression (SQLSTATE 2201B)."""

    sqlstate = "2201B"


@pytest.mark.parametrize(
    ("message", "status", "code"),
    [
        # the statement timeout struck while Postgres ran the expression (REG_CANCEL)
        ("invalid regular expression: operation cancelled", 408, "DATABASE_TIMEOUT"),
        ("invalid regular expression: parentheses () not balanced", 400, "SEARCH_BAD_REQUEST"),
    ],
)
async def test_a_regex_cancelled_by_the_budget_is_a_timeout(
    db: Database, message: str, status: int, code: str
) -> None:
    from maestrale.observability.budget import search_budget
    from maestrale.observability.errors import ObservabilityError

    async with db.transaction() as work:
        with pytest.raises(ObservabilityError) as caught:
            async with search_budget(work.session, 5.0):
                raise _RegexError(message)
    assert (caught.value.status_code, caught.value.error_code) == (status, code)
