"""Search over what was said (issue 14, item 13): `request_text` and `response_text`, the text of
the request's and the response's messages, with every text operator their definitions
advertise, answered from a full-text index that the database keeps in sync with the events,
whoever writes them (the accounting recorder's batches, direct inserts)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import delete, insert, select, text

from maestrale.accounting.tables import ChatCompletionEvent
from maestrale.core.auth.principal import Tenant
from maestrale.core.ids import new_id
from maestrale.observability.events import service
from maestrale.observability.events.tables import ChatCompletionEventText
from maestrale.observability.fields import TEXT
from tests.observability.events_seed import make_event
from tests.support.app_fixtures import TenantKey, create_tenant, make_client

pytestmark = pytest.mark.both_databases("maestrale.observability.events.repository")

SEARCH = "/v1/observability/chat-completion-events/search"
IDS = "/v1/observability/chat-completion-events/search-ids"
FIELDS = "/v1/observability/chat-completion-fields"


def cond(field: str, op: str, value: Any) -> dict[str, Any]:
    return {"field": field, "op": op, "value": value}


async def chat(client: httpx.AsyncClient, correlation_id: str, messages: list[Any]) -> None:
    resp = await client.post(
        "/v1/chat/completions",
        json={"model": "maestrale-echo", "messages": messages},
        headers={"x-correlation-id": correlation_id},
    )
    assert resp.status_code == 200, resp.text


@pytest.fixture(scope="module")
def backend(request: pytest.FixtureRequest) -> str:
    """Module scope: the conversations below are said once per backend, on `shared_app`, for
    the tests that only search them."""
    return str(request.param)


@pytest.fixture(scope="module")
async def said(shared_app: FastAPI) -> TenantKey:
    """Three conversations through /v1/chat/completions (the echo engine answers), one in
    another workspace."""
    other = await create_tenant(shared_app.state.services.db)
    async with make_client(shared_app) as client:
        await chat(
            client,
            "refund",
            [
                {"role": "system", "content": "You are Terse."},
                {"role": "user", "content": "Where is my Refund? Order 100%_done"},
            ],
        )
        await chat(
            client,
            "chunks",
            [{"role": "user", "content": [{"type": "text", "text": "Bonjour Élodie, ça va ?"}]}],
        )
        await chat(
            client,
            "syntax",
            [{"role": "user", "content": '/respond say "quoted" NEAR(x) OR * -- ab'}],
        )
    async with make_client(shared_app, other.key) as foreign:
        await make_event(foreign, "foreign", "Where is my Refund? Order 100%_done", {})
    await shared_app.state.services.recorder.flush()
    return other


async def found(client: httpx.AsyncClient, filters: Any) -> set[str]:
    resp = await client.post(SEARCH, json={"search_params": {"filters": filters}})
    assert resp.status_code == 200, resp.text
    return {e["correlation_id"] for e in resp.json()["completion_events"]["results"]}


ALL = {"refund", "chunks", "syntax"}
REQ, RESP = "request_text", "response_text"

CASES: list[tuple[dict[str, Any], set[str]]] = [
    (cond(REQ, "contains", "Refund"), {"refund"}),
    (cond(REQ, "contains", "refund"), set()),
    (cond(REQ, "icontains", "REFUND"), {"refund"}),
    (cond(REQ, "notcontains", "Refund"), {"chunks", "syntax"}),
    (cond(REQ, "inotcontains", "rEfUnD"), {"chunks", "syntax"}),
    (cond(REQ, "startswith", "You are"), {"refund"}),
    (cond(REQ, "startswith", "Where"), set()),  # the system message comes first
    (cond(REQ, "istartswith", "you ARE"), {"refund"}),
    (cond(REQ, "startswith", "Bonjour"), {"chunks"}),
    (cond(REQ, "endswith", "100%_done"), {"refund"}),
    (cond(REQ, "iendswith", "100%_DONE"), {"refund"}),
    (cond(REQ, "endswith", "done "), set()),
    # Messages are one line apart.
    (cond(REQ, "contains", "Terse.\nWhere"), {"refund"}),
    # LIKE wildcards and the FTS5 query syntax are text like any other.
    (cond(REQ, "contains", "0%_d"), {"refund"}),
    (cond(REQ, "contains", "%"), {"refund"}),
    (cond(REQ, "contains", "0_%"), set()),
    (cond(REQ, "contains", '"quoted" NEAR(x) OR *'), {"syntax"}),
    (cond(REQ, "contains", '"'), {"syntax"}),
    (cond(REQ, "icontains", "near(X) or"), {"syntax"}),
    # Shorter than a trigram: no index, the same answers.
    (cond(REQ, "contains", "ab"), {"syntax"}),
    (cond(REQ, "contains", "ç"), {"chunks"}),
    (cond(REQ, "icontains", "Ab"), {"syntax"}),
    (cond(REQ, "contains", "Élodie, ça"), {"chunks"}),
    (cond(REQ, "contains", ""), ALL),
    (cond(REQ, "matches", r"Order [0-9]+%_"), {"refund"}),
    (cond(REQ, "matches", "^You are"), {"refund"}),
    (cond(REQ, "matches", "(?i)^BONJOUR"), {"chunks"}),
    (cond(RESP, "startswith", "echo: Where"), {"refund"}),
    (cond(RESP, "contains", "echo:"), {"refund", "chunks"}),
    (cond(RESP, "notcontains", "echo:"), {"syntax"}),
    (cond(RESP, "icontains", "A VA ?"), {"chunks"}),
    (cond(RESP, "endswith", "* -- ab"), {"syntax"}),
    (cond(RESP, "startswith", "/respond"), set()),
    (
        {"AND": [cond(REQ, "icontains", "refund"), cond("model", "eq", "maestrale-echo")]},
        {"refund"},
    ),
    (
        {"OR": [cond(RESP, "contains", "Bonjour"), cond("correlation_id", "eq", "syntax")]},
        {"chunks", "syntax"},
    ),
    (
        {"AND": [cond(REQ, "notcontains", "Refund"), cond(RESP, "icontains", "QUOTED")]},
        {"syntax"},
    ),
]


@pytest.fixture(params=["scan", "index"])
def strategy(request: pytest.FixtureRequest, backend: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """SQLite answers a page either by checking the newest events one by one or from the
    full-text index (ChatCompletionEventRepository.search): both must give the same answers.
    Postgres' planner makes that choice itself."""
    if request.param == "index":
        if backend == "postgres":
            pytest.skip("one strategy on Postgres")
        monkeypatch.setattr(service, "compile_scan", lambda *_: None)
    return str(request.param)


@pytest.mark.parametrize(("filters", "expected"), CASES)
async def test_message_text_operators(
    said: TenantKey,
    shared_client: httpx.AsyncClient,
    strategy: str,
    filters: dict[str, Any],
    expected: set[str],
) -> None:
    assert await found(shared_client, filters) == expected
    resp = await shared_client.post(IDS, json={"search_params": {"filters": filters}})
    assert len(resp.json()["completion_event_ids"]) == len(expected)


async def test_fields_advertise_the_text_operators_and_each_works(
    said: TenantKey, shared_client: httpx.AsyncClient
) -> None:
    by_name = {f["name"]: f for f in (await shared_client.get(FIELDS)).json()["field_definitions"]}
    for name in (REQ, RESP):
        field = by_name[name]
        assert field["type"] == "TEXT" and field["group"] == "content"
        assert field["supported_operators"] == list(TEXT)
        for op in field["supported_operators"]:
            resp = await shared_client.post(
                SEARCH, json={"search_params": {"filters": cond(name, op, "Where")}}
            )
            assert resp.status_code == 200, (name, op, resp.text)
        resp = await shared_client.post(
            SEARCH, json={"search_params": {"filters": cond(name, "eq", 1)}}
        )
        assert resp.status_code == 400


async def test_search_ids_and_isolation(
    shared_app: FastAPI, said: TenantKey, shared_client: httpx.AsyncClient
) -> None:
    resp = await shared_client.post(
        IDS, json={"search_params": {"filters": cond(REQ, "icontains", "where is my")}}
    )
    assert resp.status_code == 200, resp.text
    assert len(resp.json()["completion_event_ids"]) == 1
    async with make_client(shared_app, said.key) as foreign:
        assert await found(foreign, cond(REQ, "contains", "Refund")) == {"foreign"}


async def test_the_index_follows_inserts_updates_and_deletes(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    db = app.state.services.db
    events = [
        {
            "id": new_id(),
            "organization_id": tenant.organization_id,
            "workspace_id": tenant.workspace_id,
            "correlation_id": f"bulk-{i}",
            "model": "m",
            "request_messages": [{"role": "user", "content": f"needle-{i} in a haystack"}],
            # Not what a recorder writes: the text is then empty, never an error.
            "response_messages": {"not": "a list"} if i == 1 else [{"content": 5}, "x", None],
        }
        for i in range(3)
    ]
    async with db.transaction() as work:
        await work.session.execute(insert(ChatCompletionEvent), events)
    assert await found(client, cond(REQ, "contains", "needle-1 in")) == {"bulk-1"}
    assert await found(client, cond(RESP, "contains", "")) == {"bulk-0", "bulk-1", "bulk-2"}
    async with db.transaction() as work:
        event = await work.session.get(ChatCompletionEvent, events[1]["id"])
        assert event is not None
        event.request_messages = [{"role": "user", "content": "now a different thread"}]
    assert await found(client, cond(REQ, "contains", "needle-1 in")) == set()
    assert await found(client, cond(REQ, "icontains", "DIFFERENT thread")) == {"bulk-1"}
    async with db.transaction() as work:
        await work.session.execute(
            delete(ChatCompletionEvent).where(ChatCompletionEvent.id == events[0]["id"])
        )
        left = await work.session.scalars(select(ChatCompletionEventText.event_id))
        assert set(left) == {events[1]["id"], events[2]["id"]}
        if db.is_sqlite:
            check = "INSERT INTO chat_completion_event_texts_fts(chat_completion_event_texts_fts) "
            await work.session.execute(text(check + "VALUES ('integrity-check')"))
    assert await found(client, cond(REQ, "contains", "needle-")) == {"bulk-2"}
