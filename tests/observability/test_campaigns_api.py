"""Campaigns: create-and-start, the durable judging job (resumed without judging an event twice),
status, selected events, list, delete, errors and isolation."""

from __future__ import annotations

from collections import Counter
from typing import Any, cast

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from maestrale.accounting.tables import ChatCompletionEvent
from maestrale.core.jobs.worker import JobContext
from maestrale.observability.campaigns.tables import CampaignEvent
from maestrale.observability.campaigns.tasks import CampaignTasks
from maestrale.observability.judges import judging
from tests.batch.support import run_jobs
from tests.observability.events_seed import obs_error, seed_events
from tests.observability.test_judges_api import new_judge
from tests.support.app_fixtures import TenantKey, make_client
from tests.support.job_context import JobCtx

pytestmark = pytest.mark.both_databases("maestrale.observability.campaigns.repository")

CAMPAIGNS = "/v1/observability/campaigns"
ALL: dict[str, Any] = {"filters": None}


async def new_campaign(client: httpx.AsyncClient, judge_id: str, **kw: Any) -> dict[str, Any]:
    body = {
        "search_params": ALL,
        "judge_id": judge_id,
        "name": "tone review",
        "description": "weekly",
        "max_nb_events": 100,
        **kw,
    }
    resp = await client.post(CAMPAIGNS, json=body)
    assert resp.status_code == 201, resp.text
    campaign: dict[str, Any] = resp.json()
    return campaign


async def verdicts(app: FastAPI, campaign_id: str) -> list[CampaignEvent]:
    async with app.state.services.db.transaction() as work:
        stmt = select(CampaignEvent).where(CampaignEvent.campaign_id == campaign_id)
        return list((await work.session.execute(stmt.order_by(CampaignEvent.position))).scalars())


async def test_campaign_runs_to_completion(app: FastAPI, client: httpx.AsyncClient) -> None:
    await seed_events(app, client)
    judge = await new_judge(client)
    campaign = await new_campaign(client, judge["id"])
    assert campaign["judge"]["id"] == judge["id"] and campaign["search_params"] == ALL
    assert campaign["max_nb_events"] == 100 and campaign["deleted_at"] is None
    assert (await client.get(f"{CAMPAIGNS}/{campaign['id']}/status")).json() == {
        "status": "RUNNING"
    }
    resp = await client.get(
        f"{CAMPAIGNS}/{campaign['id']}/selected-events", params={"page_size": 2}
    )
    page = resp.json()["completion_events"]
    assert page["count"] == 3 and len(page["results"]) == 2 and page["previous"] is None
    assert [e["correlation_id"] for e in page["results"]] == ["CORR-c3", "corr-B2"]
    await run_jobs(app)
    assert (await client.get(f"{CAMPAIGNS}/{campaign['id']}/status")).json() == {
        "status": "COMPLETED"
    }
    rows = await verdicts(app, campaign["id"])
    assert [(r.answer, r.analysis, r.error) for r in rows] == [("polite", "echo", None)] * 3
    # Each judge call went through the gateway and was recorded.
    await app.state.services.recorder.flush()
    async with app.state.services.db.transaction() as work:
        stmt = select(ChatCompletionEvent).where(ChatCompletionEvent.source == "judge")
        assert len((await work.session.execute(stmt)).scalars().all()) == 3
    fetched = (await client.get(f"{CAMPAIGNS}/{campaign['id']}")).json()
    assert fetched["updated_at"] >= campaign["updated_at"]
    assert {**fetched, "updated_at": None} == {**campaign, "updated_at": None}


async def test_selection_filters_and_limit(app: FastAPI, client: httpx.AsyncClient) -> None:
    await seed_events(app, client)
    judge = await new_judge(client)
    flt = {"filters": {"field": "extra_fields.team", "op": "icontains", "value": "red"}}
    campaign = await new_campaign(client, judge["id"], search_params=flt, max_nb_events=1)
    resp = await client.get(f"{CAMPAIGNS}/{campaign['id']}/selected-events")
    page = resp.json()["completion_events"]
    assert page["count"] == 1 and page["results"][0]["correlation_id"] == "CORR-c3"


async def test_campaign_errors_list_delete(app: FastAPI, client: httpx.AsyncClient) -> None:
    await seed_events(app, client)
    judge = await new_judge(client)
    body = {"search_params": ALL, "judge_id": judge["id"], "name": "c", "description": "d"}
    obs_error(
        await client.post(CAMPAIGNS, json={**body, "judge_id": "nope", "max_nb_events": 5}),
        404,
        "JUDGE_NOT_FOUND",
    )
    nothing = {"filters": {"field": "model", "op": "eq", "value": "none"}}
    obs_error(
        await client.post(CAMPAIGNS, json={**body, "search_params": nothing, "max_nb_events": 5}),
        400,
        "CAMPAIGN_NO_MATCHING_EVENTS",
    )
    bad = {"filters": {"field": "nope", "op": "eq", "value": 1}}
    obs_error(
        await client.post(CAMPAIGNS, json={**body, "search_params": bad, "max_nb_events": 5}),
        400,
        "SEARCH_BAD_REQUEST",
    )
    obs_error(
        await client.post(CAMPAIGNS, json={**body, "max_nb_events": 0}), 422, "VALIDATION_ERROR"
    )
    first = await new_campaign(client, judge["id"], name="first")
    await new_campaign(client, judge["id"], name="second")
    page = (await client.get(CAMPAIGNS, params={"page_size": 1})).json()["campaigns"]
    assert page["count"] == 2 and page["results"][0]["name"] == "second" and page["next"]
    assert (await client.get(CAMPAIGNS, params={"q": "FIR"})).json()["campaigns"]["count"] == 1
    assert (await client.delete(f"{CAMPAIGNS}/{first['id']}")).status_code == 204
    for suffix in ("", "/status", "/selected-events"):
        obs_error(await client.get(f"{CAMPAIGNS}/{first['id']}{suffix}"), 404, "CAMPAIGN_NOT_FOUND")
    obs_error(await client.delete(f"{CAMPAIGNS}/{first['id']}"), 404, "CAMPAIGN_NOT_FOUND")
    # The deleted campaign's job stops without judging.
    await run_jobs(app)
    assert all(r.judged_at is None for r in await verdicts(app, first["id"]))


async def test_resumed_campaign_judges_each_event_once(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    await seed_events(app, client)
    judge = await new_judge(client)
    campaign = await new_campaign(client, judge["id"])
    calls: Counter[str] = Counter()
    real = judging.run_judge
    died = False

    async def flaky(gateway: Any, caller: Any, definition: Any, messages: Any, *a: Any) -> Any:
        nonlocal died
        calls[messages[0]["content"]] += 1
        if sum(calls.values()) == 2 and not died:
            died = True
            raise RuntimeError("worker killed")
        return await real(gateway, caller, definition, messages, *a)

    monkeypatch.setattr(judging, "run_judge", flaky)
    tasks = CampaignTasks(app.state.services.platform_calls)
    ctx = cast(JobContext, JobCtx(app.state.services.db, {"campaign_id": campaign["id"]}))
    with pytest.raises(RuntimeError):
        await tasks.run(ctx)
    rows = await verdicts(app, campaign["id"])
    assert [r.judged_at is not None for r in rows] == [True, False, False]
    assert (await client.get(f"{CAMPAIGNS}/{campaign['id']}/status")).json()["status"] == "RUNNING"
    result = await tasks.run(ctx)
    assert result == {"status": "COMPLETED", "judged": 2}
    # The event being judged when the worker died is judged again (nothing was committed for
    # it); every other event exactly once.
    assert calls == Counter({"gamma three": 1, "beta two": 2, "alpha one": 1})
    assert all(r.answer == "polite" for r in await verdicts(app, campaign["id"]))
    assert (await client.get(f"{CAMPAIGNS}/{campaign['id']}/status")).json()[
        "status"
    ] == "COMPLETED"


async def test_last_attempt_failure_marks_the_campaign_failed(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    await seed_events(app, client)
    campaign = await new_campaign(client, (await new_judge(client))["id"])

    async def broken(*args: Any) -> Any:
        raise RuntimeError("database gone")

    monkeypatch.setattr(judging, "run_judge", broken)
    ctx = cast(
        JobContext, JobCtx(app.state.services.db, {"campaign_id": campaign["id"]}, attempt=5)
    )
    with pytest.raises(RuntimeError):
        await CampaignTasks(app.state.services.platform_calls).run(ctx)
    assert (await client.get(f"{CAMPAIGNS}/{campaign['id']}/status")).json()["status"] == "FAILED"


async def test_campaigns_are_isolated(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    await seed_events(app, client)
    judge = await new_judge(client)
    campaign = await new_campaign(client, judge["id"])
    async with make_client(app, other.key) as foreign:
        assert (await foreign.get(CAMPAIGNS)).json()["campaigns"]["count"] == 0
        obs_error(await foreign.get(f"{CAMPAIGNS}/{campaign['id']}"), 404, "CAMPAIGN_NOT_FOUND")
        obs_error(
            await foreign.get(f"{CAMPAIGNS}/{campaign['id']}/selected-events"),
            404,
            "CAMPAIGN_NOT_FOUND",
        )
        obs_error(await foreign.delete(f"{CAMPAIGNS}/{campaign['id']}"), 404, "CAMPAIGN_NOT_FOUND")
        # Another workspace's judge cannot be used; its own events are not selected here.
        obs_error(
            await foreign.post(
                CAMPAIGNS,
                json={
                    "search_params": ALL,
                    "judge_id": judge["id"],
                    "name": "x",
                    "description": "",
                    "max_nb_events": 5,
                },
            ),
            404,
            "JUDGE_NOT_FOUND",
        )


async def test_import_a_campaign_into_a_dataset(app: FastAPI, client: httpx.AsyncClient) -> None:
    await seed_events(app, client)
    judge = await new_judge(client)
    campaign = await new_campaign(client, judge["id"])
    resp = await client.post("/v1/observability/datasets", json={"name": "d", "description": ""})
    dataset_id = resp.json()["id"]
    url = f"/v1/observability/datasets/{dataset_id}/imports/from-campaign"
    await run_jobs(app)  # the campaign is judged
    resp = await client.post(url, json={"campaign_id": campaign["id"]})
    assert resp.status_code == 202, resp.text
    task = resp.json()
    assert task["status"] == "RUNNING" and task["dataset_id"] == dataset_id
    await run_jobs(app)
    task = (await client.get(f"/v1/observability/datasets/{dataset_id}/tasks/{task['id']}")).json()
    assert (task["status"], task["message"]) == ("COMPLETED", "imported 3 records")
    records = (await client.get(f"/v1/observability/datasets/{dataset_id}/records")).json()
    results = records["records"]["results"]
    assert records["records"]["count"] == 3
    assert sorted(r["payload"]["messages"][0]["content"] for r in results) == [
        "alpha one",
        "beta two",
        "gamma three",
    ]
    first = results[0]
    assert first["source"] == "EXPLORER"
    assert first["payload"]["messages"][1]["role"] == "assistant"
    assert first["properties"]["answer"] == "polite"
    assert first["properties"]["campaign_id"] == campaign["id"]
    obs_error(await client.post(url, json={"campaign_id": "nope"}), 404, "CAMPAIGN_NOT_FOUND")
    obs_error(
        await client.post(
            "/v1/observability/datasets/nope/imports/from-campaign",
            json={"campaign_id": campaign["id"]},
        ),
        404,
        "DATASET_NOT_FOUND",
    )
    # Events not judged (yet) or whose judging failed are skipped, and the task says so.
    async with app.state.services.db.transaction() as work:
        rows = (
            await work.session.execute(select(CampaignEvent).order_by(CampaignEvent.position))
        ).all()
        rows[0][0].judged_at, rows[1][0].error = None, "engine down"
    resp = await client.post("/v1/observability/datasets", json={"name": "e", "description": ""})
    second = resp.json()["id"]
    resp = await client.post(
        f"/v1/observability/datasets/{second}/imports/from-campaign",
        json={"campaign_id": campaign["id"]},
    )
    await run_jobs(app)
    task = (
        await client.get(f"/v1/observability/datasets/{second}/tasks/{resp.json()['id']}")
    ).json()
    assert task["message"] == "imported 1 record; skipped 2 (1 judging failed, 1 not judged yet)"
