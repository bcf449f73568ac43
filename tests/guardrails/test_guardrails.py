"""Guardrails over HTTP, on the echo moderation test double (`/flag CATEGORY [SCORE]`,
`/moderation-fail STATUS`): chat and agent completions, conversations (plain and streamed),
validation, `tool_confirmations`, and tenancy."""

from __future__ import annotations

import json
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import select

from maestrale.accounting.tables import ChatCompletionEvent, UsageRecord
from maestrale.core.auth.principal import Tenant
from tests.batch.support import chat_line, create_job, input_file, jsonl_file, run_jobs
from tests.support.app_fixtures import TenantKey, make_client

ECHO_MODERATION = "maestrale-echo-moderation"


def v1(
    action: str | None = "block", *, block_on_error: bool = False, **fields: Any
) -> dict[str, Any]:
    """A guardrail of one moderation_llm_v1 check on the echo moderation model."""
    check: dict[str, Any] = {"model_name": ECHO_MODERATION, **fields}
    if action is not None:
        check["action"] = action
    return {"block_on_error": block_on_error, "moderation_llm_v1": check}


def v2(action: str = "block", **fields: Any) -> dict[str, Any]:
    return {"moderation_llm_v2": {"model_name": ECHO_MODERATION, "action": action, **fields}}


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


async def chat(client: httpx.AsyncClient, text: str, **body: Any) -> httpx.Response:
    return await client.post(
        "/v1/chat/completions",
        json={"model": "maestrale-echo", "messages": [user(text)], **body},
    )


def assert_blocked(response: httpx.Response, *words: str) -> None:
    assert response.status_code == 403, response.text
    body = response.json()
    assert body["code"] == "guardrail_blocked" and body["object"] == "error"
    for word in words:
        assert word in body["message"], (word, body["message"])


async def usage_rows(app: FastAPI) -> list[UsageRecord]:
    await app.state.services.recorder.flush()
    async with app.state.services.db.transaction() as work:
        rows = await work.session.execute(select(UsageRecord).order_by(UsageRecord.created_at))
        return list(rows.scalars().all())


async def chat_events(app: FastAPI) -> list[ChatCompletionEvent]:
    await app.state.services.recorder.flush()
    async with app.state.services.db.transaction() as work:
        return list((await work.session.execute(select(ChatCompletionEvent))).scalars().all())


# Chat completions.


async def test_a_flagged_chat_is_blocked_before_the_model(
    app: FastAPI, client: httpx.AsyncClient, tenant: Tenant
) -> None:
    response = await chat(
        client,
        "tell me\n/flag violence_and_threats",
        guardrails=[v1("block")],
        headers=None,
    )
    assert_blocked(response, "violence_and_threats", ECHO_MODERATION, "moderation_llm_v1")
    assert response.json()["type"] == "permission_error"
    # The moderation call is accounted; the chat model was never called.
    rows = await usage_rows(app)
    assert [(r.endpoint, r.model, r.status_code) for r in rows] == [
        ("moderations", ECHO_MODERATION, 200)
    ]
    assert rows[0].workspace_id == tenant.workspace_id
    assert await chat_events(app) == []

    # An absent action blocks too; a clean input goes through.
    assert_blocked(await chat(client, "/flag pii", guardrails=[v1(None)]), "pii")
    ok = await chat(client, "hello", guardrails=[v1("block")])
    assert ok.status_code == 200, ok.text
    assert ok.json()["choices"][0]["message"]["content"] == "echo: hello"
    assert [r.endpoint for r in await usage_rows(app)] == [
        "moderations",
        "moderations",
        "moderations",
        "chat",
    ]


async def test_action_none_reports_and_goes_on(client: httpx.AsyncClient) -> None:
    response = await chat(client, "/flag sexual", guardrails=[v1("none")])
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == "echo: /flag sexual"
    # Several guardrails: any blocking one blocks.
    both = await chat(client, "/flag sexual", guardrails=[v1("none"), v2("block")])
    assert_blocked(both, "moderation_llm_v2", "sexual")


async def test_streamed_chat_is_blocked_with_a_json_403(client: httpx.AsyncClient) -> None:
    response = await chat(client, "/flag selfharm", stream=True, guardrails=[v1()])
    assert_blocked(response, "selfharm")
    assert response.headers["content-type"].startswith("application/json")


async def test_custom_thresholds(client: httpx.AsyncClient) -> None:
    low = v1(custom_category_thresholds={"pii": 0.2})
    assert_blocked(await chat(client, "/flag pii 0.3", guardrails=[low]), "pii")
    # Under the model's own 0.5, with no threshold: not flagged.
    assert (await chat(client, "/flag pii 0.3", guardrails=[v1()])).status_code == 200
    # A threshold above the score overrides the model's flag.
    high = v1(custom_category_thresholds={"sexual": 0.95})
    assert (await chat(client, "/flag sexual 0.9", guardrails=[high])).status_code == 200
    # The threshold is reached at equality.
    assert_blocked(await chat(client, "/flag sexual 0.95", guardrails=[high]), "sexual")


async def test_ignore_other_categories(client: httpx.AsyncClient) -> None:
    only_pii = v1(custom_category_thresholds={"pii": 0.5}, ignore_other_categories=True)
    assert (await chat(client, "/flag sexual 1", guardrails=[only_pii])).status_code == 200
    assert_blocked(await chat(client, "/flag pii 0.6", guardrails=[only_pii]), "pii")
    others = v1(custom_category_thresholds={"pii": 0.5})
    assert_blocked(await chat(client, "/flag sexual 1", guardrails=[others]), "sexual")


async def test_v2_categories_on_a_v1_model(client: httpx.AsyncClient) -> None:
    dangerous = v2(custom_category_thresholds={"dangerous": 0.5})
    response = await chat(
        client, "/flag dangerous_and_criminal_content 0.6", guardrails=[dangerous]
    )
    assert_blocked(response, "dangerous", "moderation_llm_v2")
    jailbreak = v2(custom_category_thresholds={"jailbreaking": 0.5})
    refused = await chat(client, "hi", guardrails=[jailbreak])
    assert refused.status_code == 400, refused.text
    body = refused.json()
    assert body["code"] == "guardrail_category_unsupported" and "jailbreaking" in body["message"]


async def test_block_on_error(app: FastAPI, client: httpx.AsyncClient) -> None:
    failing = "/moderation-fail 503"
    blocked = await chat(client, failing, guardrails=[v1(block_on_error=True)])
    assert blocked.status_code == 403, blocked.text
    body = blocked.json()
    assert body["code"] == "guardrail_error" and ECHO_MODERATION in body["message"]

    passed = await chat(client, failing, guardrails=[v1(block_on_error=False)])
    assert passed.status_code == 200, passed.text
    assert passed.json()["choices"][0]["message"]["content"] == f"echo: {failing}"
    rows = await usage_rows(app)
    assert [(r.endpoint, r.status_code) for r in rows] == [
        ("moderations", 503),
        ("moderations", 503),
        ("chat", 200),
    ]


async def test_client_errors_of_the_moderation_call_stay_as_they_are(
    client: httpx.AsyncClient,
) -> None:
    unknown_model = {"block_on_error": True, "moderation_llm_v1": {"model_name": "no-such"}}
    unknown = await chat(client, "hi", guardrails=[unknown_model])
    assert unknown.status_code == 404 and unknown.json()["code"] == "model_not_found"
    not_moderation = {"moderation_llm_v1": {"model_name": "maestrale-echo"}}
    wrong = await chat(client, "hi", guardrails=[not_moderation])
    assert wrong.status_code == 400 and wrong.json()["code"] == "model_capability_missing"
    upstream_4xx = await chat(client, "/moderation-fail 422", guardrails=[v1(block_on_error=True)])
    assert upstream_4xx.status_code == 422


async def test_invalid_configurations_are_422(client: httpx.AsyncClient) -> None:
    for bad in (
        {},
        {"moderation_llm_v1": {"action": "warn"}},
        {"moderation_llm_v1": {"custom_category_thresholds": {"pii": 2}}},
    ):
        response = await chat(client, "hi", guardrails=[bad])
        assert response.status_code == 422, (bad, response.text)
        [first, *_] = response.json()["detail"]
        assert first["loc"][:3] == ["body", "guardrails", 0], first


async def test_unknown_configuration_fields_are_ignored(client: httpx.AsyncClient) -> None:
    """Forward compatible (docs/architecture.md §1): a newer SDK's category or option is no 422."""
    newer = {
        "moderation_llm_v1": {
            "model_name": ECHO_MODERATION,
            "custom_category_thresholds": {"violence": 0.5, "pii": 0.99},
            "explain": True,
        },
        "audit": "all",
    }
    response = await chat(client, "/flag pii 0.9", guardrails=[newer])
    assert response.status_code == 200, response.text  # pii 0.9 is under its 0.99 threshold


# Batch lines run the endpoint's path.


async def test_batch_lines_are_guarded(app: FastAPI, client: httpx.AsyncClient) -> None:
    file_id = await input_file(
        client,
        chat_line("clean", "hello", guardrails=[v1()]),
        chat_line("flagged", "/flag pii", guardrails=[v1()]),
    )
    job = await create_job(client, input_files=[file_id])
    await run_jobs(app)
    done = (await client.get(f"/v1/batch/jobs/{job['id']}")).json()
    [output] = await jsonl_file(client, done["output_file"])
    [error] = await jsonl_file(client, done["error_file"])
    assert output["custom_id"] == "clean" and output["response"]["status_code"] == 200
    assert error["custom_id"] == "flagged" and error["response"]["status_code"] == 403
    assert error["response"]["body"]["code"] == "guardrail_blocked"
    rows = [r for r in await usage_rows(app) if r.correlation_id == job["id"]]
    assert sorted((r.endpoint, r.source) for r in rows) == [
        ("chat", "batch"),
        ("moderations", "batch"),
        ("moderations", "batch"),
    ]


# Agents.


async def test_agent_guardrails_are_stored_in_wire_shape_and_validated(
    client: httpx.AsyncClient,
) -> None:
    created = await client.post(
        "/v1/agents",
        json={"model": "maestrale-echo", "name": "guarded", "guardrails": [v1()]},
    )
    assert created.status_code == 200, created.text
    expected = [
        {
            "block_on_error": False,
            "moderation_llm_v1": {
                "model_name": ECHO_MODERATION,
                "ignore_other_categories": False,
                "action": "block",
            },
        }
    ]
    assert created.json()["guardrails"] == expected
    agent_id = created.json()["id"]
    assert (await client.get(f"/v1/agents/{agent_id}")).json()["guardrails"] == expected

    bad = await client.post(
        "/v1/agents",
        json={
            "model": "maestrale-echo",
            "name": "bad",
            "guardrails": [{"moderation_llm_v1": {"action": "maybe"}}],
        },
    )
    assert bad.status_code == 422, bad.text
    assert bad.json()["detail"][0]["loc"][:3] == ["body", "guardrails", 0]
    bad_update = await client.patch(
        f"/v1/agents/{agent_id}", json={"guardrails": [{"block_on_error": True}]}
    )
    assert bad_update.status_code == 422, bad_update.text
    cleared = await client.patch(f"/v1/agents/{agent_id}", json={"guardrails": None})
    assert cleared.status_code == 200 and cleared.json()["guardrails"] is None


async def test_agent_completion_applies_agent_and_request_guardrails(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    guarded = await client.post(
        "/v1/agents", json={"model": "maestrale-echo", "name": "g", "guardrails": [v1()]}
    )
    plain = await client.post("/v1/agents", json={"model": "maestrale-echo", "name": "p"})

    async def complete(agent_id: str, text: str, **body: Any) -> httpx.Response:
        return await client.post(
            "/v1/agents/completions",
            json={"agent_id": agent_id, "messages": [user(text)], **body},
        )

    assert_blocked(await complete(guarded.json()["id"], "/flag hate_and_discrimination"), "hate")
    streamed = await complete(guarded.json()["id"], "/flag law", stream=True)
    assert_blocked(streamed, "law")
    ok = await complete(guarded.json()["id"], "hello")
    assert ok.status_code == 200 and ok.json()["choices"][0]["message"]["content"] == "echo: hello"
    # The request's guardrails apply on top of the agent's (none here).
    assert (await complete(plain.json()["id"], "/flag law")).status_code == 200
    assert_blocked(await complete(plain.json()["id"], "/flag law", guardrails=[v1()]), "law")
    invalid = await complete(plain.json()["id"], "hi", guardrails=[{"moderation_llm_v9": {}}])
    assert invalid.status_code == 422, invalid.text
    # Only the unguarded "/flag law" reached the model.
    reached = [e for e in await chat_events(app) if "/flag" in str(e.request_messages)]
    assert len(reached) == 1


# Conversations.


async def start(client: httpx.AsyncClient, **body: Any) -> httpx.Response:
    if "agent_id" not in body:
        body.setdefault("model", "maestrale-echo")
    return await client.post("/v1/conversations", json=body)


async def test_model_conversation_start_and_append(client: httpx.AsyncClient) -> None:
    blocked = await start(client, inputs="/flag violence_and_threats", guardrails=[v1()])
    assert_blocked(blocked, "violence_and_threats")
    assert (await client.get("/v1/conversations")).json() == []  # nothing stored

    started = await start(client, inputs="hello", guardrails=[v1(), v1("none")])
    assert started.status_code == 200, started.text
    body = started.json()
    [first, second] = body["guardrails"]
    assert first == {
        "guardrail": "moderation_llm_v1",
        "model": ECHO_MODERATION,
        "action": "block",
        "blocked": False,
        "flagged_categories": [],
        "error": None,
        "category_scores": first["category_scores"],
    }
    assert set(first["category_scores"]) >= {"pii", "sexual", "law"}
    assert second["action"] == "none"
    conv_id = body["conversation_id"]
    got = (await client.get(f"/v1/conversations/{conv_id}")).json()
    assert got["guardrails"][0]["moderation_llm_v1"]["model_name"] == ECHO_MODERATION

    # Appends are checked against the conversation's guardrails, on the new input only.
    appended = await client.post(f"/v1/conversations/{conv_id}", json={"inputs": "/flag pii 0.7"})
    assert_blocked(appended, "pii")
    history = (await client.get(f"/v1/conversations/{conv_id}/history")).json()["entries"]
    assert len(history) == 2  # the blocked input was not stored
    again = await client.post(f"/v1/conversations/{conv_id}", json={"inputs": "fine"})
    assert again.status_code == 200, again.text
    reported = again.json()["guardrails"][1]
    assert reported["action"] == "none" and reported["flagged_categories"] == []

    # action none: flagged, reported, answered.
    noted = await start(client, inputs="/flag financial", guardrails=[v1("none")])
    assert noted.status_code == 200, noted.text
    [result] = noted.json()["guardrails"]
    assert result["flagged_categories"] == ["financial"] and result["blocked"] is False
    assert result["category_scores"]["financial"] == 0.9


async def test_no_guardrails_no_results(client: httpx.AsyncClient) -> None:
    started = await start(client, inputs="/flag pii")
    assert started.status_code == 200 and started.json()["guardrails"] is None
    conv_id = started.json()["conversation_id"]
    appended = await client.post(f"/v1/conversations/{conv_id}", json={"inputs": "again"})
    assert appended.status_code == 200 and appended.json()["guardrails"] is None


async def test_block_on_error_in_a_conversation(client: httpx.AsyncClient) -> None:
    failing = "/moderation-fail 502"
    blocked = await start(client, inputs=failing, guardrails=[v1(block_on_error=True)])
    assert blocked.status_code == 403 and blocked.json()["code"] == "guardrail_error"
    passed = await start(client, inputs=failing, guardrails=[v1(block_on_error=False)])
    assert passed.status_code == 200, passed.text
    [result] = passed.json()["guardrails"]
    assert result["error"] and result["blocked"] is False and result["category_scores"] == {}


async def test_agent_conversation_uses_the_agent_version_guardrails(
    client: httpx.AsyncClient,
) -> None:
    law_only = v1(custom_category_thresholds={"law": 0.3}, ignore_other_categories=True)
    created = await client.post(
        "/v1/agents", json={"model": "maestrale-echo", "name": "g", "guardrails": [law_only]}
    )
    agent_id = created.json()["id"]
    assert_blocked(await start(client, agent_id=agent_id, inputs="/flag law 0.4"), "law")
    started = await start(client, agent_id=agent_id, inputs="hello")
    assert started.status_code == 200, started.text
    assert started.json()["guardrails"][0]["blocked"] is False
    conv_id = started.json()["conversation_id"]
    appended = await client.post(f"/v1/conversations/{conv_id}", json={"inputs": "/flag law"})
    assert_blocked(appended, "law")

    # The conversation's own guardrails apply after the agent's.
    own = await start(client, agent_id=agent_id, inputs="/flag pii", guardrails=[v1()])
    assert_blocked(own, "pii")
    with_own = await start(client, agent_id=agent_id, inputs="hi", guardrails=[v1("none")])
    assert len(with_own.json()["guardrails"]) == 2
    own_id = with_own.json()["conversation_id"]
    later = await client.post(f"/v1/conversations/{own_id}", json={"inputs": "/flag sexual"})
    assert later.status_code == 200, later.text
    assert later.json()["guardrails"][1]["flagged_categories"] == ["sexual"]

    # A new agent version without guardrails: conversations pinned to the old one keep them.
    await client.patch(f"/v1/agents/{agent_id}", json={"guardrails": None})
    assert_blocked(
        await client.post(f"/v1/conversations/{conv_id}", json={"inputs": "/flag law"}), "law"
    )
    assert (await start(client, agent_id=agent_id, inputs="/flag law")).status_code == 200


async def test_a_server_handoff_checks_the_inputs_with_the_next_agents_guardrails(
    client: httpx.AsyncClient,
) -> None:
    async def agent(name: str, **fields: Any) -> str:
        created = await client.post(
            "/v1/agents", json={"model": "maestrale-echo", "name": name, **fields}
        )
        assert created.status_code == 200, created.text
        agent_id: str = created.json()["id"]
        return agent_id

    strict = await agent("strict", guardrails=[v1()])
    lenient = await agent("lenient", handoffs=[strict], guardrails=[v1("none")])
    line = f"/call handoff_to_{strict} {{}}"
    blocked = await start(client, agent_id=lenient, inputs=f"{line}\n/flag pii")
    assert_blocked(blocked, "pii")  # the lenient agent only reported it; the strict one blocks
    assert (await client.get("/v1/conversations")).json() == []

    served = await start(client, agent_id=lenient, inputs=line)
    assert served.status_code == 200, served.text
    assert [o["type"] for o in served.json()["outputs"]] == ["agent.handoff", "message.output"]
    assert [r["action"] for r in served.json()["guardrails"]] == ["none", "block"]
    # No handoff, no check by the strict agent's guardrails.
    alone = await start(client, agent_id=lenient, inputs="/flag pii")
    assert alone.status_code == 200 and len(alone.json()["guardrails"]) == 1


async def test_restart_checks_its_inputs(client: httpx.AsyncClient) -> None:
    started = await start(client, inputs="hello", guardrails=[v1()])
    conv_id = started.json()["conversation_id"]
    history = (await client.get(f"/v1/conversations/{conv_id}/history")).json()["entries"]
    url = f"/v1/conversations/{conv_id}/restart"
    first = history[0]["id"]
    blocked = await client.post(url, json={"from_entry_id": first, "inputs": "/flag pii"})
    assert_blocked(blocked, "pii")
    # The restart's own guardrails replace the conversation's.
    relaxed = await client.post(
        url, json={"from_entry_id": first, "inputs": "/flag pii", "guardrails": [v1("none")]}
    )
    assert relaxed.status_code == 200, relaxed.text
    assert relaxed.json()["guardrails"][0]["flagged_categories"] == ["pii"]
    new_id = relaxed.json()["conversation_id"]
    got = (await client.get(f"/v1/conversations/{new_id}")).json()
    assert got["guardrails"][0]["moderation_llm_v1"]["action"] == "none"
    bad = await client.post(url, json={"from_entry_id": first, "guardrails": [{}]})
    assert bad.status_code == 422


async def test_streamed_conversations_are_blocked_before_the_stream(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    blocked = await start(client, inputs="/flag sexual", guardrails=[v1()], stream=True)
    assert_blocked(blocked, "sexual")
    assert blocked.headers["content-type"].startswith("application/json")

    before = len(await usage_rows(app))
    started = await start(client, inputs="hello", guardrails=[v1()], stream=True)
    assert started.status_code == 200, started.text
    frames = [
        json.loads(line[6:]) for line in started.text.splitlines() if line.startswith("data: ")
    ]
    conv_id = frames[0]["conversation_id"]
    assert frames[-1]["type"] == "conversation.response.done"
    # The moderation ran once (before the stream), not again inside it.
    rows = (await usage_rows(app))[before:]
    assert [r.endpoint for r in rows] == ["moderations", "chat"]

    appended = await client.post(
        f"/v1/conversations/{conv_id}", json={"inputs": "/flag pii", "stream": True}
    )
    assert_blocked(appended, "pii")
    history = (await client.get(f"/v1/conversations/{conv_id}/history")).json()["entries"]
    restarted = await client.post(
        f"/v1/conversations/{conv_id}/restart",
        json={"from_entry_id": history[0]["id"], "inputs": "/flag law", "stream": True},
    )
    assert_blocked(restarted, "law")
    fine = await client.post(
        f"/v1/conversations/{conv_id}", json={"inputs": "fine", "stream": True}
    )
    assert fine.status_code == 200 and "conversation.response.done" in fine.text


# tool_confirmations.


async def test_tool_confirmations_are_refused(client: httpx.AsyncClient) -> None:
    started = await start(client, inputs="hello")
    conv_id = started.json()["conversation_id"]
    url = f"/v1/conversations/{conv_id}"
    for stream in (False, True):
        refused = await client.post(
            url,
            json={
                "inputs": "go on",
                "stream": stream,
                "tool_confirmations": [{"tool_call_id": "call_42", "confirmation": "allow"}],
            },
        )
        assert refused.status_code == 400, refused.text
        body = refused.json()
        assert body["code"] == "tool_call_not_pending" and "call_42" in body["message"]
        assert body["param"] == "tool_confirmations"
    invalid = await client.post(
        url, json={"tool_confirmations": [{"tool_call_id": "c", "confirmation": "maybe"}]}
    )
    assert invalid.status_code == 422
    history = (await client.get(f"{url}/history")).json()["entries"]
    assert len(history) == 2  # nothing was appended
    empty = await client.post(url, json={"inputs": "more", "tool_confirmations": []})
    assert empty.status_code == 200, empty.text


# Tenancy.


async def test_other_workspaces_are_not_affected(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    started = await start(client, inputs="hello", guardrails=[v1()])
    conv_id = started.json()["conversation_id"]
    async with make_client(app, other.key) as theirs:
        # Their own conversation has no guardrails: the same input goes through.
        mine_blocked = await client.post(
            f"/v1/conversations/{conv_id}", json={"inputs": "/flag pii"}
        )
        assert_blocked(mine_blocked, "pii")
        foreign = await theirs.post(f"/v1/conversations/{conv_id}", json={"inputs": "/flag pii"})
        assert foreign.status_code == 404
        own = await start(theirs, inputs="/flag pii")
        assert own.status_code == 200 and own.json()["guardrails"] is None
        blocked = await chat(theirs, "/flag pii", guardrails=[v1()])
        assert_blocked(blocked, "pii")
    rows = await usage_rows(app)
    moderations = [r for r in rows if r.endpoint == "moderations"]
    assert [r.workspace_id for r in moderations] == [
        started_ws := moderations[0].workspace_id,
        started_ws,
        other.tenant.workspace_id,
    ]
