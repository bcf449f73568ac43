"""The official SDK (mistralai 2.8.0) drives chat completion events and fields on a live server."""

from __future__ import annotations

import time
import uuid

import pytest
from mistralai.client import Mistral
from mistralai.client.errors import ObservabilityError

from tests.conformance.conftest import LiveServer, only_before_3


@only_before_3
def test_events_search_fetch_ids_and_fields(live_server: LiveServer) -> None:
    sdk = Mistral(api_key=live_server.api_key, server_url=live_server.url)
    tag = uuid.uuid4().hex
    for i in range(3):
        sdk.chat.complete(
            model="maestrale-echo",
            messages=[{"role": "user", "content": f"event {i}"}],
            metadata={"run": tag, "i": i},
        )
    events = sdk.beta.observability.chat_completion_events
    flt = {"filters": {"field": "extra_fields.run", "op": "eq", "value": tag}}
    # Events are recorded in the background: wait until all three are searchable.

    deadline = time.monotonic() + 10
    while True:
        ids = events.search_ids(search_params=flt).completion_event_ids
        if len(ids) == 3 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert len(ids) == 3
    page = events.search(
        search_params={
            "filters": {
                "AND": [
                    {"field": "extra_fields.run", "op": "eq", "value": tag},
                    {"field": "extra_fields.i", "op": "gte", "value": 1},
                ]
            }
        },
        page_size=1,
    )
    first = page.completion_events.results
    assert len(first) == 1 and first[0].extra_fields["i"] == 2
    assert page.completion_events.cursor
    page = events.search(search_params=flt, page_size=5, cursor=page.completion_events.cursor)
    assert {e.event_id for e in page.completion_events.results} <= set(ids)
    event = events.fetch(event_id=first[0].event_id)
    similar = events.fetch_similar_events(event_id=event.event_id).completion_events.results
    assert event.event_id not in {e.event_id for e in similar}
    assert {e.event_id for e in similar} & set(ids)  # "event 0" and "event 1" share words
    assert event.request_messages == [{"role": "user", "content": "event 2"}]
    assert event.nb_messages == 2
    verdict = events.judge(
        event_id=event.event_id,
        judge_definition={
            "name": "inline",
            "description": "",
            "model_name": "maestrale-echo",
            "output": {
                "type": "REGRESSION",
                "min": 1,
                "max": 3,
                "min_description": "bad",
                "max_description": "good",
            },
            "instructions": "Rate the answer.",
            "tools": [],
        },
    )
    assert verdict.answer == 1

    fields = events.fields.list()
    names = {f.name for f in fields.field_definitions}
    assert {"created_at", "model", "extra_fields.run"} <= names
    options = events.fields.fetch_options(field_name="extra_fields.run", operator="eq")
    assert tag in (options.options or [])
    counts = events.fields.fetch_option_counts(field_name="extra_fields.run", filter_params=flt)
    assert [(c.value, c.count) for c in counts.counts] == [(tag, 3)]

    with pytest.raises(ObservabilityError) as info:
        events.fetch(event_id="missing")
    assert info.value.data.detail.error_code == "SEARCH_NOT_FOUND"
    with pytest.raises(ObservabilityError) as info:
        events.search(search_params={"filters": {"field": "nope", "op": "eq", "value": 1}})
    assert info.value.data.detail.error_code == "SEARCH_BAD_REQUEST"
    assert "nope" in info.value.data.detail.message


def test_datasets_and_records(live_server: LiveServer) -> None:
    sdk = Mistral(api_key=live_server.api_key, server_url=live_server.url)
    datasets = sdk.beta.observability.datasets
    ds = datasets.create(name=f"golden-{uuid.uuid4().hex[:6]}", description="reference answers")
    assert ds.deleted_at is None
    assert datasets.fetch(dataset_id=ds.id).name == ds.name
    updated = datasets.update(dataset_id=ds.id, description="updated")
    assert updated.description == "updated"
    assert ds.id in {d.id for d in datasets.list(page_size=100).datasets.results}
    payload = {
        "messages": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]
    }
    rec = datasets.create_record(dataset_id=ds.id, payload=payload, properties={"topic": "math"})
    assert rec.source == "DIRECT_INPUT"
    records = datasets.records
    records.update_properties(dataset_record_id=rec.id, properties={"topic": "arithmetic"})
    records.update_payload(dataset_record_id=rec.id, payload={"messages": payload["messages"][:1]})
    fetched = records.fetch(dataset_record_id=rec.id)
    assert fetched.properties == {"topic": "arithmetic"} and len(fetched.payload["messages"]) == 1
    other = datasets.create_record(dataset_id=ds.id, payload=payload)
    page = datasets.list_records(dataset_id=ds.id, page=1, page_size=1).records
    assert page.count == 2 and len(page.results) == 1
    records.bulk_delete(dataset_record_ids=[other.id])
    records.delete(dataset_record_id=rec.id)
    assert datasets.list_records(dataset_id=ds.id).records.count == 0
    datasets.delete(dataset_id=ds.id)
    with pytest.raises(ObservabilityError) as info:
        datasets.fetch(dataset_id=ds.id)
    assert info.value.data.detail.error_code == "DATASET_NOT_FOUND"


def test_judges_and_live_judging(live_server: LiveServer) -> None:
    sdk = Mistral(api_key=live_server.api_key, server_url=live_server.url)
    judges = sdk.beta.observability.judges
    name = f"tone-{uuid.uuid4().hex[:6]}"
    output = {
        "type": "CLASSIFICATION",
        "options": [
            {"value": "polite", "description": "courteous"},
            {"value": "rude", "description": "impolite"},
        ],
    }
    judge = judges.create(
        name=name,
        description="tone",
        model_name="maestrale-echo",
        output=output,
        instructions="Is the assistant polite?",
        tools=[],
    )
    assert judges.fetch(judge_id=judge.id).name == name
    assert judge.id in {j.id for j in judges.list(page_size=100).judges.results}
    verdict = judges.judge_conversation(
        judge_id=judge.id, messages=[{"role": "user", "content": "hi"}]
    )
    assert verdict.analysis == "echo" and verdict.answer == "polite"
    judges.update(
        judge_id=judge.id,
        name=name,
        description="score",
        model_name="maestrale-echo",
        output={
            "type": "REGRESSION",
            "min": 0,
            "max": 10,
            "min_description": "bad",
            "max_description": "good",
        },
        instructions="Rate the answer.",
        tools=[],
    )
    verdict = judges.judge_conversation(
        judge_id=judge.id, messages=[{"role": "user", "content": "hi"}]
    )
    assert verdict.answer == 0
    datasets = sdk.beta.observability.datasets
    ds = datasets.create(name=f"judged-{name}", description="")
    rec = datasets.create_record(
        dataset_id=ds.id, payload={"messages": [{"role": "user", "content": "x"}]}
    )
    definition = {
        "name": "inline",
        "description": "",
        "model_name": "maestrale-echo",
        "output": output,
        "instructions": "Judge it.",
        "tools": [],
    }
    assert (
        datasets.records.judge(dataset_record_id=rec.id, judge_definition=definition).answer
        == "polite"
    )
    judges.delete(judge_id=judge.id)
    with pytest.raises(ObservabilityError) as info:
        judges.fetch(judge_id=judge.id)
    assert info.value.data.detail.error_code == "JUDGE_NOT_FOUND"


@only_before_3
def test_campaign_runs_and_imports_into_a_dataset(live_server: LiveServer) -> None:
    sdk = Mistral(api_key=live_server.api_key, server_url=live_server.url)
    tag = uuid.uuid4().hex
    for i in range(4):
        sdk.chat.complete(
            model="maestrale-echo",
            messages=[{"role": "user", "content": f"campaign {i}"}],
            metadata={"campaign_run": tag},
        )
    flt = {"filters": {"field": "extra_fields.campaign_run", "op": "eq", "value": tag}}
    events = sdk.beta.observability.chat_completion_events
    deadline = time.monotonic() + 10
    while len(events.search_ids(search_params=flt).completion_event_ids) < 4:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    judge = sdk.beta.observability.judges.create(
        name=f"campaign-judge-{tag[:6]}",
        description="",
        model_name="maestrale-echo",
        output={
            "type": "REGRESSION",
            "min": 0,
            "max": 1,
            "min_description": "no",
            "max_description": "yes",
        },
        instructions="Is it fine?",
        tools=[],
    )
    campaigns = sdk.beta.observability.campaigns
    campaign = campaigns.create(
        search_params=flt, judge_id=judge.id, name=f"c-{tag[:6]}", description="", max_nb_events=3
    )
    assert campaign.judge.id == judge.id and campaign.max_nb_events == 3
    deadline = time.monotonic() + 30
    while campaigns.fetch_status(campaign_id=campaign.id).status != "COMPLETED":
        assert time.monotonic() < deadline
        time.sleep(0.2)
    selected = campaigns.list_events(campaign_id=campaign.id).completion_events
    assert selected.count == 3
    assert campaign.id in {c.id for c in campaigns.list(page_size=100).campaigns.results}
    datasets = sdk.beta.observability.datasets
    ds = datasets.create(name=f"from-{tag[:6]}", description="")
    task = datasets.import_from_campaign(dataset_id=ds.id, campaign_id=campaign.id)
    deadline = time.monotonic() + 30
    while task.status == "RUNNING":  # the import is a task run by the worker
        assert time.monotonic() < deadline
        time.sleep(0.2)
        task = datasets.fetch_task(dataset_id=ds.id, task_id=task.id)
    assert task.status == "COMPLETED"
    records = datasets.list_records(dataset_id=ds.id).records
    assert records.count == 3
    assert {r.properties["answer"] for r in records.results} == {0}
    campaigns.delete(campaign_id=campaign.id)
    with pytest.raises(ObservabilityError) as info:
        campaigns.fetch(campaign_id=campaign.id)
    assert info.value.data.detail.error_code == "CAMPAIGN_NOT_FOUND"
