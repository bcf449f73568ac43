"""The /v1/conversations group over HTTP, driven by the builtin engine's directives."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from maestrale.accounting.tables import ChatCompletionEvent
from tests.support.app_fixtures import TenantKey, make_client

pytestmark = pytest.mark.both_databases("maestrale.conversations.repository")

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather of a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
ENTRY_KEYS = {"object", "type", "created_at", "completed_at", "id"}


async def post(client: httpx.AsyncClient, url: str, **body: Any) -> dict[str, Any]:
    response = await client.post(url, json=body)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


async def start(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    if "agent_id" not in body:
        body.setdefault("model", "maestrale-echo")
    return await post(client, "/v1/conversations", **body)


async def agent(client: httpx.AsyncClient, **fields: Any) -> dict[str, Any]:
    response = await client.post(
        "/v1/agents", json={"model": "maestrale-echo", "name": "helper", **fields}
    )
    assert response.status_code == 200, response.text
    created: dict[str, Any] = response.json()
    return created


async def test_model_conversation(app: FastAPI, client: httpx.AsyncClient) -> None:
    started = await start(
        client,
        inputs="hello",
        instructions="Be brief.",
        name="chat",
        metadata={"k": "v"},
        completion_args={"temperature": 0.1},
    )
    assert started["object"] == "conversation.response"
    conv_id = started["conversation_id"]
    assert conv_id.startswith("conv_")
    [output] = started["outputs"]
    assert ENTRY_KEYS | {"agent_id", "model", "role", "content"} <= set(output)
    assert output["type"] == "message.output" and output["object"] == "entry"
    assert output["content"] == "echo: hello" and output["model"] == "maestrale-echo"
    usage = started["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0

    appended = await post(client, f"/v1/conversations/{conv_id}", inputs="again")
    assert appended["conversation_id"] == conv_id
    assert appended["outputs"][0]["content"] == "echo: again"

    got = (await client.get(f"/v1/conversations/{conv_id}")).json()
    assert got["object"] == "conversation" and got["model"] == "maestrale-echo"
    assert "agent_id" not in got
    assert got["instructions"] == "Be brief." and got["completion_args"] == {"temperature": 0.1}
    assert got["name"] == "chat" and got["metadata"] == {"k": "v"} and got["tools"] == []

    history = (await client.get(f"/v1/conversations/{conv_id}/history")).json()
    assert history["object"] == "conversation.history"
    kinds = [(e["type"], e.get("content")) for e in history["entries"]]
    assert kinds == [
        ("message.input", "hello"),
        ("message.output", "echo: hello"),
        ("message.input", "again"),
        ("message.output", "echo: again"),
    ]
    assert history["entries"][0]["role"] == "user"
    messages = (await client.get(f"/v1/conversations/{conv_id}/messages")).json()
    assert messages["object"] == "conversation.messages"
    assert [m["id"] for m in messages["messages"]] == [e["id"] for e in history["entries"]]

    # Each model turn is a chat completion event correlated with the conversation.
    await app.state.services.recorder.flush()
    async with app.state.services.db.transaction() as work:
        events = (await work.session.execute(select(ChatCompletionEvent))).scalars().all()
    assert [e.correlation_id for e in events] == [conv_id, conv_id]
    assert events[1].request_messages[0] == {"role": "system", "content": "Be brief."}


async def test_function_call_round_trip(client: httpx.AsyncClient) -> None:
    started = await start(client, inputs='/call get_weather {"city": "Paris"}', tools=[WEATHER])
    [call] = started["outputs"]
    assert call["type"] == "function.call" and call["name"] == "get_weather"
    assert json.loads(call["arguments"]) == {"city": "Paris"}
    assert call["tool_call_id"]
    conv_id = started["conversation_id"]

    unknown = await client.post(
        f"/v1/conversations/{conv_id}",
        json={"inputs": [{"type": "function.result", "tool_call_id": "nope", "result": "x"}]},
    )
    assert unknown.status_code == 400 and unknown.json()["code"] == "unknown_tool_call"

    result = {"type": "function.result", "tool_call_id": call["tool_call_id"], "result": "22C"}
    answered = await post(client, f"/v1/conversations/{conv_id}", inputs=[result])
    assert [o["type"] for o in answered["outputs"]] == ["message.output"]
    assert answered["outputs"][0]["content"] == "tool get_weather returned: 22C"
    history = (await client.get(f"/v1/conversations/{conv_id}/history")).json()["entries"]
    assert [e["type"] for e in history] == [
        "message.input",
        "function.call",
        "function.result",
        "message.output",
    ]
    messages = (await client.get(f"/v1/conversations/{conv_id}/messages")).json()["messages"]
    assert [m["type"] for m in messages] == ["message.input", "message.output"]


async def test_agent_conversation(client: httpx.AsyncClient) -> None:
    helper = await agent(client, instructions="v1", tools=[WEATHER])
    await client.patch(f"/v1/agents/{helper['id']}", json={"instructions": "v2"})
    await client.put(f"/v1/agents/{helper['id']}/aliases", params={"alias": "stable", "version": 1})
    started = await start(client, agent_id=helper["id"], agent_version="stable", inputs="hi")
    assert started["outputs"][0]["agent_id"] == helper["id"]
    conv_id = started["conversation_id"]
    got = (await client.get(f"/v1/conversations/{conv_id}")).json()
    assert got["agent_id"] == helper["id"] and got["agent_version"] == 1
    assert "model" not in got
    called = await post(
        client, f"/v1/conversations/{conv_id}", inputs='/call get_weather {"city": "Oslo"}'
    )
    assert called["outputs"][0]["type"] == "function.call"

    current = await start(client, agent_id=helper["id"], inputs="hi")
    got = (await client.get(f"/v1/conversations/{current['conversation_id']}")).json()
    assert got["agent_version"] == 2
    listed = (await client.get("/v1/conversations")).json()
    assert [c["id"] for c in listed] == [current["conversation_id"], conv_id]
    sentinel = await client.get("/v1/conversations", params={"metadata": "~?~unset~?~sentinel~?~"})
    assert len(sentinel.json()) == 2


async def test_server_and_client_handoffs(client: httpx.AsyncClient) -> None:
    target = await agent(client, name="target")
    source = await agent(client, name="source", handoffs=[target["id"]])
    line = f"/call handoff_to_{target['id']} {{}}"
    served = await start(client, agent_id=source["id"], inputs=line)
    kinds = [o["type"] for o in served["outputs"]]
    assert kinds == ["agent.handoff", "message.output"]
    handoff = served["outputs"][0]
    assert handoff["previous_agent_id"] == source["id"]
    assert handoff["previous_agent_name"] == "source"
    assert handoff["next_agent_id"] == target["id"] and handoff["next_agent_name"] == "target"
    assert served["outputs"][1]["agent_id"] == target["id"]
    conv = (await client.get(f"/v1/conversations/{served['conversation_id']}")).json()
    assert conv["agent_id"] == target["id"]

    by_client = await start(client, agent_id=source["id"], inputs=line, handoff_execution="client")
    assert [o["type"] for o in by_client["outputs"]] == ["agent.handoff"]
    conv_id = by_client["conversation_id"]
    assert (await client.get(f"/v1/conversations/{conv_id}")).json()["agent_id"] == target["id"]
    goes_on = await post(client, f"/v1/conversations/{conv_id}", inputs="hello")
    assert goes_on["outputs"][0]["agent_id"] == target["id"]


async def test_handoff_loop_is_a_clear_error(client: httpx.AsyncClient) -> None:
    first = await agent(client, name="first")
    second = await agent(client, name="second", handoffs=[first["id"]])
    await client.patch(f"/v1/agents/{first['id']}", json={"handoffs": [second["id"]]})
    lines = f"/call handoff_to_{second['id']} {{}}\n/call handoff_to_{first['id']} {{}}"
    response = await client.post(
        "/v1/conversations", json={"agent_id": first["id"], "inputs": lines}
    )
    assert response.status_code == 400 and response.json()["code"] == "too_many_steps"
    assert (await client.get("/v1/conversations")).json() == []


async def test_restart_from_an_entry(client: httpx.AsyncClient) -> None:
    started = await start(client, inputs="one", metadata={"n": "1"})
    conv_id = started["conversation_id"]
    await post(client, f"/v1/conversations/{conv_id}", inputs="two")
    original = (await client.get(f"/v1/conversations/{conv_id}/history")).json()["entries"]
    restarted = await post(
        client,
        f"/v1/conversations/{conv_id}/restart",
        from_entry_id=original[1]["id"],
        inputs="three",
        metadata={"n": "2"},
    )
    new_id = restarted["conversation_id"]
    assert new_id != conv_id
    assert restarted["outputs"][0]["content"] == "echo: three"
    history = (await client.get(f"/v1/conversations/{new_id}/history")).json()["entries"]
    assert [e.get("content") for e in history] == ["one", "echo: one", "three", "echo: three"]
    assert {e["id"] for e in history}.isdisjoint({e["id"] for e in original})
    assert (await client.get(f"/v1/conversations/{new_id}")).json()["metadata"] == {"n": "2"}
    unchanged = (await client.get(f"/v1/conversations/{conv_id}/history")).json()["entries"]
    assert unchanged == original
    listed = await client.get("/v1/conversations", params={"metadata": '{"n": "2"}'})
    assert [c["id"] for c in listed.json()] == [new_id]

    missing = await client.post(
        f"/v1/conversations/{conv_id}/restart", json={"from_entry_id": "msg_nope", "inputs": "x"}
    )
    assert missing.status_code == 404 and missing.json()["code"] == "entry_not_found"
    foreign_entry = await client.post(
        f"/v1/conversations/{conv_id}/restart",
        json={"from_entry_id": history[0]["id"], "inputs": "x"},
    )
    assert foreign_entry.status_code == 404


async def test_restart_on_another_agent_version(client: httpx.AsyncClient) -> None:
    helper = await agent(client, instructions="v1")
    await client.patch(f"/v1/agents/{helper['id']}", json={"name": "renamed"})
    started = await start(client, agent_id=helper["id"], agent_version=1, inputs="hi")
    entries = (await client.get(f"/v1/conversations/{started['conversation_id']}/history")).json()[
        "entries"
    ]
    restarted = await post(
        client,
        f"/v1/conversations/{started['conversation_id']}/restart",
        from_entry_id=entries[0]["id"],
        agent_version=2,
    )
    got = (await client.get(f"/v1/conversations/{restarted['conversation_id']}")).json()
    assert got["agent_version"] == 2


async def test_store_false_keeps_nothing(client: httpx.AsyncClient) -> None:
    started = await start(client, inputs="secret", store=False)
    assert started["outputs"][0]["content"] == "echo: secret"
    response = await client.get(f"/v1/conversations/{started['conversation_id']}")
    assert response.status_code == 404
    kept = await start(client, inputs="kept")
    conv_id = kept["conversation_id"]
    await post(client, f"/v1/conversations/{conv_id}", inputs="not kept", store=False)
    history = (await client.get(f"/v1/conversations/{conv_id}/history")).json()["entries"]
    assert len(history) == 2


async def test_bad_requests(client: httpx.AsyncClient) -> None:
    web = await agent(client, tools=[{"type": "web_search"}])
    cases: list[tuple[dict[str, Any], int, str | None]] = [
        ({"model": "no-such-model", "inputs": "x"}, 404, None),
        ({"inputs": "x"}, 400, "invalid_target"),
        ({"model": "maestrale-echo", "agent_id": web["id"], "inputs": "x"}, 400, "invalid_target"),
        ({"agent_id": "ag_missing", "inputs": "x"}, 404, "agent_not_found"),
        ({"agent_id": web["id"], "inputs": "x"}, 400, "tool_unavailable"),
        ({"model": "maestrale-echo", "inputs": []}, 400, "invalid_inputs"),
        ({"model": "maestrale-echo", "inputs": [{"type": "agent.handoff"}]}, 400, "invalid_inputs"),
        (
            {"model": "maestrale-echo", "inputs": [{"role": "system", "content": "x"}]},
            400,
            "invalid_inputs",
        ),
        ({"model": "maestrale-echo"}, 422, None),
        ({"agent_id": web["id"], "agent_version": "nope", "inputs": "x"}, 404, None),
    ]
    for body, status, code in cases:
        response = await client.post("/v1/conversations", json=body)
        assert response.status_code == status, (body, response.text)
        if code is not None:
            assert response.json()["code"] == code, body
    assert (await client.get("/v1/conversations")).json() == []
    assert (await client.get("/v1/conversations/conv_nope")).status_code == 404
    assert (
        await client.post("/v1/conversations/conv_nope", json={"inputs": "x"})
    ).status_code == 404


async def test_delete(client: httpx.AsyncClient) -> None:
    conv_id = (await start(client, inputs="bye"))["conversation_id"]
    assert (await client.delete(f"/v1/conversations/{conv_id}")).status_code == 204
    assert (await client.get(f"/v1/conversations/{conv_id}/history")).status_code == 404
    assert (await client.delete(f"/v1/conversations/{conv_id}")).status_code == 404


async def test_another_workspace_gets_404_everywhere(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    started = await start(client, inputs="mine")
    conv_id = started["conversation_id"]
    entry_id = started["outputs"][0]["id"]
    base = f"/v1/conversations/{conv_id}"
    async with make_client(app, other.key) as foreign:
        calls = [
            foreign.get(base),
            foreign.post(base, json={"inputs": "x"}),
            foreign.get(f"{base}/history"),
            foreign.get(f"{base}/messages"),
            foreign.post(f"{base}/restart", json={"from_entry_id": entry_id, "inputs": "x"}),
            foreign.delete(base),
        ]
        for call in calls:
            response = await call
            assert response.status_code == 404, response.request.url
        assert (await foreign.get("/v1/conversations")).json() == []
    history = (await client.get(f"{base}/history")).json()["entries"]
    assert len(history) == 2


async def test_concurrent_appends_never_interleave(client: httpx.AsyncClient) -> None:
    conv_id = (await start(client, inputs="start"))["conversation_id"]
    url = f"/v1/conversations/{conv_id}"
    slow = client.post(url, json={"inputs": "/sleep 300\nslow"})
    fast = client.post(url, json={"inputs": "fast"})
    responses = await asyncio.gather(slow, fast)
    assert [r.status_code for r in responses] == [200, 200], [r.text for r in responses]
    history = (await client.get(f"{url}/history")).json()["entries"]
    contents = [e["content"] for e in history]
    assert len(contents) == 6
    # Each append's input is directly followed by its own answer.
    for position in (2, 4):
        question, answer = contents[position], contents[position + 1]
        assert answer.endswith(question.split("\n")[-1]), contents


async def test_appends_number_entries_and_touch_the_conversation(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """Entries are written by Core statements (no ORM objects): each append numbers its entries
    after the last, and the conversation's entry count and `updated_at` follow, also when a
    restart copies a history."""
    from maestrale.conversations.tables import Conversation, ConversationEntry

    started = await start(client, inputs="one")
    conv_id = started["conversation_id"]
    url = f"/v1/conversations/{conv_id}"
    before = (await client.get(url)).json()["updated_at"]
    await post(client, url, inputs="two")
    await post(client, url, inputs=[{"type": "message.input", "role": "user", "content": "3"}])
    after = (await client.get(url)).json()["updated_at"]
    assert after > before
    history = (await client.get(f"{url}/history")).json()["entries"]
    restarted = await post(client, f"{url}/restart", from_entry_id=history[3]["id"], inputs="again")
    async with app.state.services.db.transaction() as work:
        for cid, count in ((conv_id, 6), (restarted["conversation_id"], 6)):
            conversation = await work.session.get(Conversation, cid)
            assert conversation is not None and conversation.entry_count == count
            rows = await work.session.execute(
                select(ConversationEntry.seq, ConversationEntry.id)
                .where(ConversationEntry.conversation_id == cid)
                .order_by(ConversationEntry.seq)
            )
            seqs, ids = zip(*rows.all(), strict=True)
            assert list(seqs) == list(range(count))
            entries = (await client.get(f"/v1/conversations/{cid}/history")).json()["entries"]
            assert [e["id"] for e in entries] == list(ids)
    contents = [e["content"] for e in history]
    assert contents == ["one", "echo: one", "two", "echo: two", "3", "echo: 3"]


async def test_history_sends_the_entries_exactly_as_answered(client: httpx.AsyncClient) -> None:
    """History and messages splice the stored entries into the body: any text survives, and
    they are the entries the responses carried."""
    text = 'quotes " \\ and\nlines, \u2028 separators, accents é, emoji 🌬️, NUL-free ' + "x" * 2000
    started = await start(client, inputs=text, tools=[WEATHER])
    url = f"/v1/conversations/{started['conversation_id']}"
    called = await post(client, url, inputs='/call get_weather {"city": "Genova"}')
    answered = await post(
        client,
        url,
        inputs=[
            {
                "type": "function.result",
                "tool_call_id": called["outputs"][0]["tool_call_id"],
                "result": "tramontana ☁",
            }
        ],
    )
    response = await client.get(f"{url}/history")
    assert response.headers["content-type"] == "application/json"
    history = response.json()
    assert set(history) == {"object", "conversation_id", "entries"}
    assert history["conversation_id"] == started["conversation_id"]
    entries = history["entries"]
    assert entries[0]["content"] == text
    assert entries[1] == started["outputs"][0]
    assert entries[3] == called["outputs"][0]
    assert entries[4]["type"] == "function.result" and entries[4]["result"] == "tramontana ☁"
    assert entries[5:] == answered["outputs"]
    messages = (await client.get(f"{url}/messages")).json()
    assert set(messages) == {"object", "conversation_id", "messages"}
    assert [m["id"] for m in messages["messages"]] == [
        e["id"] for e in entries if e["type"] in ("message.input", "message.output")
    ]
