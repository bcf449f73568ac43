"""The /v1/triggers group through the ASGI app: shapes, validation, filters of the list,
another workspace's 404s, and deliveries dispatched into agent conversations (builtin model)."""

from __future__ import annotations

from typing import Any

import httpx
import sqlalchemy as sa
from fastapi import FastAPI

from maestrale.core.jobs.queue import JobQueue
from maestrale.inbound.triggers.tables import TriggerEvent
from maestrale.inbound.triggers.tasks import KIND
from tests.inbound.trigger_support import (
    deliver,
    echo_agent,
    github_webhook,
    run_jobs,
    trigger_body,
)
from tests.support.app_fixtures import TenantKey, make_client

TRIGGER_KEYS = {
    "id",
    "creator_id",
    "workspace_id",
    "organization_id",
    "customer_id",
    "owner_type",
    "event_source",
    "handler",
    "action",
    "filters",
    "title",
}
EVENT_KEYS = {
    "event_id",
    "trigger_id",
    "source_id",
    "status",
    "received_at",
    "submitted_at",
    "triggered_at",
    "detail",
    "url",
}


async def _agent_trigger(
    client: httpx.AsyncClient, webhook: dict[str, Any], agent_id: str, **extra: Any
) -> dict[str, Any]:
    body = trigger_body(webhook["id"], "agents", agent_id, "start_agent_session", **extra)
    resp = await client.post("/v1/triggers", json=body)
    assert resp.status_code == 201, resp.text
    created: dict[str, Any] = resp.json()
    return created


async def test_crud_shapes_validation_and_list_filters(client: httpx.AsyncClient) -> None:
    webhook = await github_webhook(client)
    other_hook = await github_webhook(client, "other")
    agent_id = await echo_agent(client)
    created = await _agent_trigger(
        client, webhook, agent_id, filters="event_type == 'push' && repository.name == 'x'"
    )
    assert set(created) == TRIGGER_KEYS
    assert created["event_source"] == (await client.get(f"/v1/webhooks/{webhook['id']}")).json()
    assert created["action"] == {"primitive_id": agent_id, "type": "start_agent_session"}
    assert created["customer_id"] == created["organization_id"]
    assert (created["handler"], created["owner_type"]) == ("agents", "workspace")
    plain = await _agent_trigger(client, other_hook, agent_id)
    assert plain["filters"] is None

    refused = {
        "spaces": (trigger_body(webhook["id"], "spaces", "app", "build_app"), 400),
        "mismatch": (trigger_body(webhook["id"], "agents", agent_id, "start_workflow"), 400),
        "unknown webhook": (
            trigger_body("wh_nope", "agents", agent_id, "start_agent_session"),
            404,
        ),
        "unknown agent": (
            trigger_body(webhook["id"], "agents", "nope", "start_agent_session"),
            404,
        ),
        "unknown workflow": (
            trigger_body(webhook["id"], "workflows", "nope", "start_workflow"),
            404,
        ),
        "bad filter": (
            {
                **trigger_body(webhook["id"], "agents", agent_id, "start_agent_session"),
                "filters": "a ===",
            },
            422,
        ),
        "multiplying filter": (
            {
                **trigger_body(webhook["id"], "agents", agent_id, "start_agent_session"),
                "filters": "[@, @][] | [@, @][]",
            },
            422,
        ),
        "long filter": (
            {
                **trigger_body(webhook["id"], "agents", agent_id, "start_agent_session"),
                "filters": "a" * 5000,
            },
            422,
        ),
        "deep filter": (
            {
                **trigger_body(webhook["id"], "agents", agent_id, "start_agent_session"),
                "filters": "(" * 2000 + "a" + ")" * 2000,
            },
            422,
        ),
        "unknown action": ({**trigger_body(webhook["id"], "agents", agent_id, "launch")}, 422),
    }
    for name, (body, status) in refused.items():
        resp = await client.post("/v1/triggers", json=body)
        assert resp.status_code == status, (name, resp.text)
        assert resp.json(), name

    listed = (await client.get("/v1/triggers")).json()
    assert [t["id"] for t in listed] == [plain["id"], created["id"]]  # newest first
    for params, expected in [
        ({"event_source_id": webhook["id"]}, [created["id"]]),
        ({"handler": "workflows"}, []),
        ({"handler": "agents", "primitive_id": agent_id}, [plain["id"], created["id"]]),
        ({"primitive_id": "nope"}, []),
    ]:
        resp = await client.get("/v1/triggers", params=params)
        assert [t["id"] for t in resp.json()] == expected, params
    assert (await client.get("/v1/triggers", params={"handler": "bogus"})).status_code == 422

    got = await client.get(f"/v1/triggers/{created['id']}")
    assert got.json() == created
    events = await client.get(f"/v1/triggers/{created['id']}/events")
    assert events.json() == {"data": []}
    for limit in (0, 1001, 2**70):
        resp = await client.get(f"/v1/triggers/{created['id']}/events", params={"limit": limit})
        assert resp.status_code in (400, 422), limit
    deleted = await client.delete(f"/v1/triggers/{created['id']}")
    assert deleted.status_code == 204 and deleted.content == b""
    assert (await client.get(f"/v1/triggers/{created['id']}")).status_code == 404
    assert (await client.delete(f"/v1/triggers/{created['id']}")).status_code == 404


async def test_another_workspace_gets_404_everywhere(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    webhook = await github_webhook(client)
    agent_id = await echo_agent(client)
    mine = await _agent_trigger(client, webhook, agent_id)
    async with make_client(app, other.key) as theirs:
        for method, path in [
            ("GET", f"/v1/triggers/{mine['id']}"),
            ("DELETE", f"/v1/triggers/{mine['id']}"),
            ("GET", f"/v1/triggers/{mine['id']}/events"),
        ]:
            assert (await theirs.request(method, path)).status_code == 404, path
        assert (await theirs.get("/v1/triggers")).json() == []
        # My webhook and my agent are not theirs to bind.
        their_agent = await echo_agent(theirs)
        body = trigger_body(webhook["id"], "agents", their_agent, "start_agent_session")
        assert (await theirs.post("/v1/triggers", json=body)).status_code == 404
        their_hook = await github_webhook(theirs)
        body = trigger_body(their_hook["id"], "agents", agent_id, "start_agent_session")
        assert (await theirs.post("/v1/triggers", json=body)).status_code == 404
    assert (await client.get(f"/v1/triggers/{mine['id']}")).status_code == 200


async def test_delivery_starts_agent_conversation_once(
    app: FastAPI, client: httpx.AsyncClient, anon_client: httpx.AsyncClient
) -> None:
    webhook = await github_webhook(client)
    agent_id = await echo_agent(client)
    matching = await _agent_trigger(
        client, webhook, agent_id, filters="event_type == 'push' && repository.name == 'dashboard'"
    )
    other_repo = await _agent_trigger(client, webhook, agent_id, filters="repository.name == 'x'")
    failing = await _agent_trigger(client, webhook, agent_id, filters="abs(repository)")

    payload = {"ref": "refs/heads/main", "repository": {"name": "dashboard"}}
    resp = await deliver(anon_client, webhook, payload)
    assert resp.status_code == 200, resp.text
    await run_jobs(app)

    events = (await client.get(f"/v1/triggers/{matching['id']}/events")).json()["data"]
    assert len(events) == 1 and set(events[0]) == EVENT_KEYS
    event = events[0]
    assert event["status"] == "TRIGGERED", event
    assert event["submitted_at"] and event["triggered_at"] and event["detail"] is None
    conversation_id = event["url"].rsplit("/", 1)[1]
    assert event["url"] == f"/v1/conversations/{conversation_id}"
    conversation = await client.get(f"/v1/conversations/{conversation_id}")
    assert conversation.status_code == 200, conversation.text
    assert conversation.json()["agent_id"] == agent_id
    history = (await client.get(f"/v1/conversations/{conversation_id}/history")).json()
    text = str(history["entries"])
    assert "dashboard" in text and "echo:" in text

    # A filter that does not match records nothing; one that fails says why.
    assert (await client.get(f"/v1/triggers/{other_repo['id']}/events")).json() == {"data": []}
    failed = (await client.get(f"/v1/triggers/{failing['id']}/events")).json()["data"]
    assert [e["status"] for e in failed] == ["TRIGGER_FAILED"]
    assert "filter" in failed[0]["detail"] and failed[0]["url"] is None

    # The webhook's delivery records what it started.
    deliveries = (await client.get(f"/v1/webhooks/{webhook['id']}/deliveries")).json()["data"]
    assert deliveries[0]["id"] == event["source_id"]
    assert deliveries[0]["started"] == [
        {
            "trigger_id": matching["id"],
            "kind": "conversation",
            "id": conversation_id,
            "url": event["url"],
        }
    ]

    # The job again (a retry after a crash past the conversation, before TRIGGERED was
    # written): the conversation is found by its metadata, none is started again.
    services = app.state.services
    async with services.db.transaction() as work:
        await work.session.execute(
            sa.update(TriggerEvent)
            .where(TriggerEvent.id == event["event_id"])
            .values(status="SUBMITTED", url=None, started_id=None)
        )
        await JobQueue(services.db).enqueue(
            work.session,
            KIND,
            {"delivery_id": event["source_id"]},
            tenant=_tenant_of(matching),
        )
    await run_jobs(app)
    again = (await client.get(f"/v1/triggers/{matching['id']}/events")).json()["data"]
    assert [(e["status"], e["url"]) for e in again] == [("TRIGGERED", event["url"])]
    listed = (await client.get("/v1/conversations", params={"page_size": 100})).json()
    assert len(listed) == 1


async def test_deleted_webhook_stops_its_triggers_events_stay(
    app: FastAPI, client: httpx.AsyncClient, anon_client: httpx.AsyncClient
) -> None:
    webhook = await github_webhook(client)
    agent_id = await echo_agent(client)
    trigger = await _agent_trigger(client, webhook, agent_id)
    assert (await deliver(anon_client, webhook, {"n": 1})).status_code == 200
    await run_jobs(app)
    assert (await client.delete(f"/v1/webhooks/{webhook['id']}")).status_code == 204
    kept = await client.get(f"/v1/triggers/{trigger['id']}")
    assert kept.status_code == 200 and kept.json()["event_source"]["id"] == webhook["id"]
    events = (await client.get(f"/v1/triggers/{trigger['id']}/events")).json()["data"]
    assert [e["status"] for e in events] == ["TRIGGERED"]
    assert (await deliver(anon_client, webhook, {"n": 2})).status_code in (404, 410)


def _tenant_of(trigger: dict[str, Any]) -> Any:
    from maestrale.core.auth.principal import Tenant

    return Tenant(trigger["organization_id"], trigger["workspace_id"])


async def test_work_that_cannot_start_is_a_submission_failure(
    app: FastAPI, client: httpx.AsyncClient, anon_client: httpx.AsyncClient
) -> None:
    webhook = await github_webhook(client)
    agent_id = await echo_agent(client)
    trigger = await _agent_trigger(client, webhook, agent_id)
    assert (await client.delete(f"/v1/agents/{agent_id}")).status_code == 204
    assert (await deliver(anon_client, webhook, {"n": 1})).status_code == 200
    await run_jobs(app)
    [event] = (await client.get(f"/v1/triggers/{trigger['id']}/events")).json()["data"]
    assert event["status"] == "SUBMISSION_FAILED" and event["url"] is None
    assert agent_id in event["detail"], event
