"""Schedules on Temporal: create, read, list, update, pause, resume, trigger, delete; runs of a
schedule executing on a worker; tenancy; invalid specs; the official SDK."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from mistralai.client import Mistral
from temporalio.client import Client

from tests.support.app_fixtures import API_KEY, create_tenant, make_client
from tests.workflows.plain_worker import register, running_worker

pytestmark = pytest.mark.both_databases("maestrale.workflows.schedules.repository")

YEARLY = "0 0 1 1 *"


def _queue() -> str:
    return f"dep-{uuid.uuid4().hex[:8]}"


async def create(client: httpx.AsyncClient, **body: Any) -> httpx.Response:
    schedule = body.pop("schedule", {"input": {"x": 1}, "cron_expressions": [YEARLY]})
    return await client.post(
        "/v1/workflows/schedules",
        json={"workflow_identifier": "echo", "schedule": schedule, **body},
    )


async def described(client: httpx.AsyncClient, schedule_id: str) -> dict[str, Any]:
    response = await client.get(f"/v1/workflows/schedules/{schedule_id}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def wait_for_run(client: httpx.AsyncClient, schedule_id: str, runs: int = 1) -> list[Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        recent = (await described(client, schedule_id))["recent_executions"]
        if len(recent) >= runs:
            return list(recent)
        await asyncio.sleep(0.3)
    raise AssertionError(f"schedule {schedule_id} started no run")


async def test_lifecycle(wf_client: httpx.AsyncClient) -> None:
    queue = _queue()
    await register(wf_client, queue)
    schedule = {
        "input": {"x": 1},
        "cron_expressions": [YEARLY],
        "intervals": [{"every": "PT1H", "offset": "PT5M"}],
        "time_zone_name": "Europe/Paris",
        "jitter": 30,
        "policy": {"overlap": 2, "pause_on_failure": True},
        "max_executions": 5,
    }
    response = await create(wf_client, schedule=schedule, deployment_name=queue)
    assert response.status_code == 201, response.text
    schedule_id = response.json()["schedule_id"]
    body = await described(wf_client, schedule_id)
    assert body["schedule_id"] == schedule_id and body["workflow_name"] == "echo"
    assert body["deployment_name"] == queue and body["input"] == {"x": 1}
    assert body["cron_expressions"] == [YEARLY]
    assert body["intervals"] == [{"every": "PT1H", "offset": "PT5M"}]
    assert body["jitter"] == "PT30S" and body["time_zone_name"] == "Europe/Paris"
    policy = {"catchup_window_seconds": 31536000, "overlap": 2, "pause_on_failure": True}
    assert body["policy"] == policy
    assert body["paused"] is False and body["remaining_executions"] == 5
    # No more future runs than the 5 it may still start.
    assert len(body["future_executions"]) == 5 and body["recent_executions"] == []

    listed = (await wf_client.get("/v1/workflows/schedules")).json()
    assert schedule_id in [s["schedule_id"] for s in listed["schedules"]]
    assert listed["next_page_token"] is None

    base = f"/v1/workflows/schedules/{schedule_id}"
    pause = await wf_client.post(f"{base}/pause", json={"note": "hold"})
    assert pause.status_code == 204 and pause.content == b""
    body = await described(wf_client, schedule_id)
    assert body["paused"] is True and body["note"] == "hold"
    paused = await wf_client.get("/v1/workflows/schedules", params={"status": "paused"})
    assert [s["schedule_id"] for s in paused.json()["schedules"]] == [schedule_id]
    active = await wf_client.get("/v1/workflows/schedules", params={"status": "active"})
    assert schedule_id not in active.text

    update = await wf_client.patch(
        f"/v1/workflows/schedules/{schedule_id}",
        json={"schedule": {"cron_expressions": ["0 12 * * MON-FRI"], "input": {"y": 2}}},
    )
    assert update.status_code == 200 and update.json() == {"schedule_id": schedule_id}
    body = await described(wf_client, schedule_id)
    assert body["cron_expressions"] == ["0 12 * * MON-FRI"] and body["input"] == {"y": 2}
    # What the update did not name is kept: the intervals, the policy, the pause.
    assert body["intervals"] == [{"every": "PT1H", "offset": "PT5M"}]
    assert body["policy"]["overlap"] == 2 and body["paused"] is True

    resume = await wf_client.post(f"/v1/workflows/schedules/{schedule_id}/resume")
    assert resume.status_code == 204
    assert (await described(wf_client, schedule_id))["paused"] is False

    delete = await wf_client.delete(f"/v1/workflows/schedules/{schedule_id}")
    assert delete.status_code == 204
    gone = await wf_client.get(f"/v1/workflows/schedules/{schedule_id}")
    assert gone.status_code == 404 and gone.json()["code"] == "WF_1200"
    again = await wf_client.delete(f"/v1/workflows/schedules/{schedule_id}")
    assert again.status_code == 404


async def test_triggered_and_interval_runs_execute_on_the_worker(
    wf_client: httpx.AsyncClient, temporal_address: str, namespace: str
) -> None:
    queue = _queue()
    await register(wf_client, queue)
    schedule_id = f"nightly-{uuid.uuid4().hex[:8]}"
    response = await create(wf_client, schedule={"input": {"shout": "hi"}}, schedule_id=schedule_id)
    assert response.status_code == 201, response.text
    temporal = await Client.connect(temporal_address, namespace=namespace)
    async with running_worker(temporal_address, namespace, queue):
        trigger = await wf_client.post(f"/v1/workflows/schedules/{schedule_id}/trigger", json={})
        assert trigger.status_code == 204
        (run,) = await wait_for_run(wf_client, schedule_id)
        execution_id = run["execution_id"]
        assert execution_id.startswith(f"{schedule_id}-")
        handle = temporal.get_workflow_handle(execution_id)
        assert await asyncio.wait_for(handle.result(), 20) == {"result": "HI"}
        # The official worker's first activity indexes the run; then the API serves it.
        info = await handle.describe()
        registered = await wf_client.post(
            "/v1/workflows/executions/register",
            json={
                "temporal_workflow_id": execution_id,
                "temporal_run_id": info.run_id,
                "workflow_name": "echo",
                "task_queue": queue,
                "execution_token_hash": "0" * 64,
            },
        )
        assert registered.status_code == 200, registered.text
        got = await wf_client.get(f"/v1/workflows/executions/{execution_id}")
        assert got.json()["status"] == "COMPLETED" and got.json()["result"] == {"result": "HI"}

        # Every second: runs come by themselves.
        update = await wf_client.patch(
            f"/v1/workflows/schedules/{schedule_id}",
            json={"schedule": {"intervals": [{"every": 1}]}},
        )
        assert update.status_code == 200, update.text
        await wait_for_run(wf_client, schedule_id, runs=3)
        await wf_client.delete(f"/v1/workflows/schedules/{schedule_id}")


async def test_another_workspace_cannot_see_or_touch_a_schedule(
    wf_app: FastAPI, wf_client: httpx.AsyncClient
) -> None:
    await register(wf_client, _queue())
    schedule_id = f"mine-{uuid.uuid4().hex[:8]}"
    assert (await create(wf_client, schedule_id=schedule_id)).status_code == 201
    other = await create_tenant(wf_app.state.services.db, f"other-{uuid.uuid4().hex[:6]}")
    async with make_client(wf_app, other.key) as stranger:
        base = f"/v1/workflows/schedules/{schedule_id}"
        for method, path, payload in (
            ("GET", base, None),
            ("PATCH", base, {"schedule": {"input": 1}}),
            ("POST", f"{base}/pause", {}),
            ("POST", f"{base}/resume", {}),
            ("POST", f"{base}/trigger", {}),
            ("DELETE", base, None),
        ):
            response = await stranger.request(method, path, json=payload)
            assert response.status_code == 404, (method, path, response.text)
            assert response.json()["code"] == "WF_1200"
        assert (await stranger.get("/v1/workflows/schedules")).json()["schedules"] == []
        # Its own workflow of the same name under the same schedule id: the id is taken.
        await register(stranger, _queue())
        taken = await create(stranger, schedule_id=schedule_id)
        assert taken.status_code == 409, taken.text
    body = await described(wf_client, schedule_id)
    assert body["paused"] is False and body["input"] == {"x": 1}
    await wf_client.delete(f"/v1/workflows/schedules/{schedule_id}")


async def test_invalid_schedules_are_refused_without_a_500(wf_client: httpx.AsyncClient) -> None:
    await register(wf_client, _queue())
    schedule_id = f"bad-{uuid.uuid4().hex[:8]}"
    for cron in ("61 * * * *", "not a cron", "* * * * * * * *"):
        response = await create(
            wf_client, schedule={"input": None, "cron_expressions": [cron]}, schedule_id=schedule_id
        )
        assert response.status_code == 400, (cron, response.text)
        assert response.json()["code"] == "WF_1201"
    # A refused creation leaves the id free.
    assert (await create(wf_client, schedule_id=schedule_id)).status_code == 201
    invalid: list[dict[str, Any]] = [
        {"input": None, "time_zone_name": "Mars/Olympus"},
        {"input": None, "intervals": [{"every": 0}]},
        {"input": None, "intervals": [{"every": "forever"}]},
        {"input": None, "intervals": [{"every": 1e300}]},
        {"input": None, "calendars": [{"hour": [{"start": 2**40}]}]},
        {"input": None, "policy": {"overlap": 9}},
        {"input": None, "max_executions": 0},
        {"input": None, "cron_expressions": ["x" * 300]},
        {"input": None, "start_at": "2030-01-01T00:00:00Z", "end_at": "2029-01-01T00:00:00Z"},
    ]
    for schedule in invalid:
        response = await create(wf_client, schedule=schedule)
        assert response.status_code == 422, (schedule, response.text)
    window = await wf_client.patch(
        f"/v1/workflows/schedules/{schedule_id}",
        json={"schedule": {"start_at": "2031-01-01T00:00:00Z"}},
    )
    assert window.status_code == 200, window.text
    backwards = await wf_client.patch(
        f"/v1/workflows/schedules/{schedule_id}",
        json={"schedule": {"end_at": "2030-01-01T00:00:00Z"}},
    )
    assert backwards.status_code == 400 and backwards.json()["code"] == "WF_1201"
    nameless = await wf_client.post("/v1/workflows/schedules", json={"schedule": {"input": None}})
    assert nameless.status_code == 422
    unknown = await create(wf_client, workflow_identifier="nope")
    assert unknown.status_code == 404 and unknown.json()["code"] == "WF_1100"
    for token in ("garbage!", "e30"):
        listed = await wf_client.get("/v1/workflows/schedules", params={"next_page_token": token})
        assert listed.status_code == 400, listed.text
    await wf_client.delete(f"/v1/workflows/schedules/{schedule_id}")


async def test_schedule_a_registration(wf_client: httpx.AsyncClient) -> None:
    queue = _queue()
    refs = (await register(wf_client, queue))["workflow_registration_refs"]
    response = await wf_client.post(
        "/v1/workflows/schedules",
        json={
            "workflow_version_id": refs[0]["workflow_registration_id"],
            "schedule": {"input": None, "intervals": [{"every": "P1D"}]},
        },
    )
    assert response.status_code == 201, response.text
    schedule_id = response.json()["schedule_id"]
    body = await described(wf_client, schedule_id)
    assert body["deployment_name"] == queue and body["workflow_name"] == "echo"
    assert body["input"] is None and body["intervals"] == [{"every": "P1D", "offset": None}]
    await wf_client.delete(f"/v1/workflows/schedules/{schedule_id}")
    unknown = await wf_client.post(
        "/v1/workflows/schedules",
        json={"workflow_registration_id": str(uuid.uuid4()), "schedule": {"input": None}},
    )
    assert unknown.status_code == 404


async def test_list_pages(wf_client: httpx.AsyncClient) -> None:
    await register(wf_client, _queue())
    prefix = f"page-{uuid.uuid4().hex[:6]}"
    made = [f"{prefix}-{n}" for n in range(3)]
    for schedule_id in made:
        assert (await create(wf_client, schedule_id=schedule_id)).status_code == 201
    seen: list[str] = []
    token = None
    for _ in range(10):
        params: dict[str, Any] = {"page_size": 2, "workflow_name": "echo"}
        if token:
            params["next_page_token"] = token
        page = (await wf_client.get("/v1/workflows/schedules", params=params)).json()
        seen += [s["schedule_id"] for s in page["schedules"]]
        token = page["next_page_token"]
        if not token:
            break
    assert [s for s in seen if s.startswith(prefix)] == made
    # `search` (3.x): a prefix of the workflow's name, case-insensitive.
    found = (await wf_client.get("/v1/workflows/schedules", params={"search": "EC"})).json()
    assert {s["schedule_id"] for s in found["schedules"]} >= set(made)
    none = (await wf_client.get("/v1/workflows/schedules", params={"search": "cho"})).json()
    assert none["schedules"] == []
    for schedule_id in made:
        await wf_client.delete(f"/v1/workflows/schedules/{schedule_id}")


@pytest.mark.timeout(90)
async def test_official_sdk(wf_app: FastAPI, wf_client: httpx.AsyncClient) -> None:
    queue = _queue()
    await register(wf_client, queue)
    transport = httpx.AsyncClient(transport=httpx.ASGITransport(app=wf_app), base_url="http://test")
    async with transport:
        sdk = Mistral(api_key=API_KEY, server_url="http://test", async_client=transport)
        schedules = sdk.workflows.schedules
        created = await schedules.schedule_workflow_async(
            workflow_identifier="echo",
            deployment_name=queue,
            schedule={
                "input": {"q": 1},
                "cron_expressions": [YEARLY],
                "intervals": [{"every": "PT2H"}],
                "calendars": [{"hour": [{"start": 9, "end": 17}], "comment": "office"}],
            },
        )
        schedule_id = created.schedule_id
        one = await schedules.get_schedule_async(schedule_id=schedule_id)
        assert one.workflow_name == "echo" and one.paused is False and one.input == {"q": 1}
        assert one.cron_expressions == [YEARLY]
        assert one.calendars and one.calendars[0].comment == "office"
        listed = await schedules.get_schedules_async(page_size=50)
        assert listed is not None
        assert schedule_id in [s.schedule_id for s in listed.result.schedules]
        await schedules.pause_schedule_async(schedule_id=schedule_id, note="later")
        assert (await schedules.get_schedule_async(schedule_id=schedule_id)).note == "later"
        await schedules.resume_schedule_async(schedule_id=schedule_id)
        updated = await schedules.update_schedule_async(
            schedule_id=schedule_id, schedule={"max_executions": 3}
        )
        assert updated.schedule_id == schedule_id
        one = await schedules.get_schedule_async(schedule_id=schedule_id)
        assert one.remaining_executions == 3 and one.cron_expressions == [YEARLY]
        await schedules.trigger_schedule_async(schedule_id=schedule_id, overlap=6)
        await schedules.unschedule_workflow_async(schedule_id=schedule_id)


def test_durations_are_written_in_days_and_time() -> None:
    """Long durations are written as days (`P2707DT15H`), never as years (`P7Y152D`, which RFC
    3339 refuses): the schema fuzz found the list answering a form its schema does not allow."""
    from datetime import timedelta

    from maestrale.workflows.schedules.schemas import ScheduleInterval, iso_duration

    interval = ScheduleInterval(every=timedelta(days=2707, hours=15), offset=timedelta(0))
    assert interval.model_dump(mode="json") == {"every": "P2707DT15H", "offset": "PT0S"}
    assert iso_duration(timedelta(seconds=90)) == "PT1M30S"
    assert ScheduleInterval.model_validate({"every": "P2707DT15H"}).every == timedelta(
        days=2707, hours=15
    )
