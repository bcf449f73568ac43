"""Judges: CRUD, filters, isolation, and live judging (raw messages, an event, a dataset record)
on the builtin engine, which answers a json_schema format deterministically."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from maestrale.accounting.tables import ChatCompletionEvent
from maestrale.completions import platform_calls
from maestrale.observability.judges import judging
from maestrale.observability.judges.schemas import ClassificationOutput, RegressionOutput
from tests.observability.events_seed import obs_error, seed_events
from tests.support.app_fixtures import TenantKey, make_client

pytestmark = pytest.mark.both_databases("maestrale.observability.judges.repository")

JUDGES = "/v1/observability/judges"

CLASSIFY = {
    "type": "CLASSIFICATION",
    "options": [
        {"value": "polite", "description": "courteous"},
        {"value": "rude", "description": "impolite"},
    ],
}
SCORE = {
    "type": "REGRESSION",
    "min": 1,
    "max": 5,
    "min_description": "useless",
    "max_description": "perfect",
}


def definition(
    name: str = "tone", output: dict[str, Any] | None = None, **kw: Any
) -> dict[str, Any]:
    return {
        "name": name,
        "description": "judges the tone",
        "model_name": "maestrale-echo",
        "output": output or CLASSIFY,
        "instructions": "Is the assistant polite?",
        "tools": [],
        **kw,
    }


async def new_judge(client: httpx.AsyncClient, **kw: Any) -> dict[str, Any]:
    resp = await client.post(JUDGES, json=definition(**kw))
    assert resp.status_code == 201, resp.text
    body: dict[str, Any] = resp.json()
    return body


async def test_judge_crud(client: httpx.AsyncClient) -> None:
    judge = await new_judge(client)
    assert judge["output"] == CLASSIFY and judge["tools"] == [] and judge["deleted_at"] is None
    assert judge["up_revision"] is None
    assert (await client.get(f"{JUDGES}/{judge['id']}")).json() == judge
    resp = await client.put(f"{JUDGES}/{judge['id']}", json=definition("tone", SCORE))
    assert resp.status_code == 204
    fetched = (await client.get(f"{JUDGES}/{judge['id']}")).json()
    assert fetched["output"] == {**SCORE, "min": 1.0, "max": 5.0}
    assert (await client.delete(f"{JUDGES}/{judge['id']}")).status_code == 204
    obs_error(await client.get(f"{JUDGES}/{judge['id']}"), 404, "JUDGE_NOT_FOUND")
    obs_error(
        await client.put(f"{JUDGES}/{judge['id']}", json=definition()), 404, "JUDGE_NOT_FOUND"
    )
    # The name is free again once the judge is deleted.
    await new_judge(client)


async def test_judge_revisions(client: httpx.AsyncClient) -> None:
    judge = await new_judge(client)
    assert (judge["down_revision"], judge["base_revision"]) == (None, None)
    url = f"{JUDGES}/{judge['id']}"
    obs_error(await client.put(url, json=definition()), 400, "JUDGE_DID_NOT_CHANGE")
    assert (await client.put(url, json=definition(instructions="v2"))).status_code == 204
    assert (await client.put(url, json=definition(instructions="v3"))).status_code == 204
    head = (await client.get(url)).json()
    assert head["instructions"] == "v3" and head["up_revision"] is None
    assert head["created_at"] == judge["created_at"]
    v2 = (await client.get(f"{JUDGES}/{head['down_revision']}")).json()
    assert v2["instructions"] == "v2" and v2["up_revision"] == judge["id"]
    v1 = (await client.get(f"{JUDGES}/{v2['down_revision']}")).json()
    assert v1["instructions"] == "Is the assistant polite?" and v1["up_revision"] == v2["id"]
    assert v1["down_revision"] is None
    assert head["base_revision"] == v2["base_revision"] == v1["base_revision"] == v1["id"]
    # Only the latest revision is listed, changed or deleted; the name stays the judge's.
    listed = (await client.get(JUDGES)).json()["judges"]
    assert [j["id"] for j in listed["results"]] == [judge["id"]]
    obs_error(
        await client.put(f"{JUDGES}/{v1['id']}", json=definition(instructions="v4")),
        409,
        "JUDGE_ALREADY_HAS_NEW_VERSION",
    )
    obs_error(await client.delete(f"{JUDGES}/{v1['id']}"), 409, "JUDGE_ALREADY_HAS_NEW_VERSION")
    assert (await client.delete(url)).status_code == 204
    for rid in (v1["id"], v2["id"], judge["id"]):
        obs_error(await client.get(f"{JUDGES}/{rid}"), 404, "JUDGE_NOT_FOUND")


async def test_judge_names_filters_and_pages(client: httpx.AsyncClient) -> None:
    await new_judge(client, name="tone")
    second = await new_judge(client, name="score", output=SCORE)
    obs_error(await client.post(JUDGES, json=definition("tone")), 409, "JUDGE_NAME_ALREADY_EXISTS")
    obs_error(
        await client.put(f"{JUDGES}/{second['id']}", json=definition("tone")),
        409,
        "JUDGE_NAME_ALREADY_EXISTS",
    )
    page = (await client.get(JUDGES, params={"page_size": 1})).json()["judges"]
    assert page["count"] == 2 and [j["name"] for j in page["results"]] == ["score"]
    resp = await client.get(JUDGES, params={"type_filter": ["CLASSIFICATION"]})
    assert [j["name"] for j in resp.json()["judges"]["results"]] == ["tone"]
    resp = await client.get(JUDGES, params={"model_filter": ["other-model"]})
    assert resp.json()["judges"]["count"] == 0
    resp = await client.get(JUDGES, params={"q": "SCO"})
    assert [j["name"] for j in resp.json()["judges"]["results"]] == ["score"]
    obs_error(await client.get(JUDGES, params={"type_filter": "X"}), 422, "VALIDATION_ERROR")


BAD_DEFINITIONS = [
    definition(tools=["web_search"]),
    definition(output={"type": "CLASSIFICATION", "options": []}),
    definition(output={**CLASSIFY, "options": [CLASSIFY["options"][0]] * 2}),
    definition(output={**SCORE, "min": 5, "max": 1}),
    definition(output={"type": "OTHER"}),
    definition(name=""),
]


@pytest.mark.parametrize("body", BAD_DEFINITIONS)
async def test_bad_definitions_are_422(client: httpx.AsyncClient, body: dict[str, Any]) -> None:
    obs_error(await client.post(JUDGES, json=body), 422, "VALIDATION_ERROR")


async def test_live_judging_of_messages(app: FastAPI, client: httpx.AsyncClient) -> None:
    judge = await new_judge(client)
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    resp = await client.post(f"{JUDGES}/{judge['id']}/live-judging", json={"messages": messages})
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"analysis": "echo", "answer": "polite"}
    scorer = await new_judge(client, name="score", output=SCORE)
    resp = await client.post(
        f"{JUDGES}/{scorer['id']}/live-judging",
        json={"messages": messages, "properties": {"lang": "en"}},
    )
    assert resp.json() == {"analysis": "echo", "answer": 1.0}
    # The judge's calls went through the gateway: recorded as events of source "judge".
    await app.state.services.recorder.flush()
    async with app.state.services.db.transaction() as work:
        events = (
            (
                await work.session.execute(
                    select(ChatCompletionEvent).where(ChatCompletionEvent.source == "judge")
                )
            )
            .scalars()
            .all()
        )
    assert len(events) == 2
    assert "Is the assistant polite?" in events[0].request_messages[0]["content"]
    obs_error(
        await client.post(f"{JUDGES}/missing/live-judging", json={"messages": messages}),
        404,
        "JUDGE_NOT_FOUND",
    )
    obs_error(
        await client.post(f"{JUDGES}/{judge['id']}/live-judging", json={"messages": []}),
        422,
        "VALIDATION_ERROR",
    )


async def test_live_judging_of_event_and_record(app: FastAPI, client: httpx.AsyncClient) -> None:
    await seed_events(app, client)
    resp = await client.post(
        "/v1/observability/chat-completion-events/search", json={"search_params": {"filters": None}}
    )
    event_id = resp.json()["completion_events"]["results"][0]["event_id"]
    url = f"/v1/observability/chat-completion-events/{event_id}/live-judging"
    resp = await client.post(url, json={"judge_definition": definition(output=SCORE)})
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"analysis": "echo", "answer": 1.0}
    obs_error(
        await client.post(
            "/v1/observability/chat-completion-events/missing/live-judging",
            json={"judge_definition": definition()},
        ),
        404,
        "SEARCH_NOT_FOUND",
    )
    resp = await client.post("/v1/observability/datasets", json={"name": "d", "description": "d"})
    ds = resp.json()["id"]
    resp = await client.post(
        f"/v1/observability/datasets/{ds}/records",
        json={"payload": {"messages": [{"role": "user", "content": "x"}]}},
    )
    record_url = f"/v1/observability/dataset-records/{resp.json()['id']}/live-judging"
    resp = await client.post(record_url, json={"judge_definition": definition()})
    assert resp.json() == {"analysis": "echo", "answer": "polite"}
    obs_error(
        await client.post(record_url, json={"judge_definition": definition(model_name="nope")}),
        400,
        "VALIDATION_ERROR",
    )


async def test_invalid_model_answers_are_retried_then_502(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    replies = iter(["not json", '{"analysis": "a", "answer": "maybe"}', '{"answer": "rude"}'])
    calls = 0

    async def fake_complete(*args: Any) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        return {"choices": [{"message": {"content": next(replies)}}]}

    monkeypatch.setattr(platform_calls, "complete_chat", fake_complete)
    judge = await new_judge(client)
    resp = await client.post(
        f"{JUDGES}/{judge['id']}/live-judging",
        json={"messages": [{"role": "user", "content": "x"}]},
    )
    message = obs_error(resp, 502, "JUDGE_MISTRAL_API_ERROR")
    assert calls == 3
    assert "not JSON" in message and "'maybe'" in message and "analysis" in message


def test_check_answer() -> None:
    classify = ClassificationOutput.model_validate(CLASSIFY)
    score = RegressionOutput.model_validate(SCORE)
    assert judging.check_answer('{"analysis": "a", "answer": "rude"}', classify).answer == "rude"
    assert judging.check_answer('{"analysis": "a", "answer": 4.5}', score).answer == 4.5
    cases: list[tuple[str | None, ClassificationOutput | RegressionOutput]] = [
        ('{"analysis": "a", "answer": 6}', score),
        ('{"analysis": "a", "answer": true}', score),
        ('{"analysis": "a", "answer": "3"}', score),
        ('{"analysis": "a", "answer": "meh"}', classify),
        ("[1]", classify),
        (None, classify),
    ]
    for content, output in cases:
        with pytest.raises(ValueError, match=r"answer|JSON|text|analysis"):
            judging.check_answer(content, output)


async def test_judges_are_isolated(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    judge = await new_judge(client)
    async with make_client(app, other.key) as foreign:
        assert (await foreign.get(JUDGES)).json()["judges"]["count"] == 0
        obs_error(await foreign.get(f"{JUDGES}/{judge['id']}"), 404, "JUDGE_NOT_FOUND")
        obs_error(await foreign.delete(f"{JUDGES}/{judge['id']}"), 404, "JUDGE_NOT_FOUND")
        obs_error(
            await foreign.post(
                f"{JUDGES}/{judge['id']}/live-judging",
                json={"messages": [{"role": "user", "content": "x"}]},
            ),
            404,
            "JUDGE_NOT_FOUND",
        )
        # The same name is free in another workspace.
        assert (await foreign.post(JUDGES, json=definition())).status_code == 201
