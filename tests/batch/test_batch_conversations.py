"""Batch jobs on `/v1/conversations`: each line starts a conversation on the job's model or agent,
answered, stored, limited and accounted as the live endpoint would (and, as everywhere in the
tests, with no database connection held while the model runs)."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import sqlalchemy as sa
from fastapi import FastAPI

from maestrale.accounting.tables import ChatCompletionEvent, UsageRecord
from tests.batch.support import ECHO, create_job, input_file, jsonl_file, run_jobs

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def line(custom_id: str, **body: Any) -> str:
    return orjson.dumps({"custom_id": custom_id, "body": body}).decode()


async def test_conversation_lines_on_a_model(app: FastAPI, client: httpx.AsyncClient) -> None:
    file_id = await input_file(
        client,
        line("hello", inputs="hello", name="first", metadata={"k": "v"}),
        line("call", inputs='/call get_weather {"city": "Paris"}', tools=[WEATHER]),
        line("unstored", inputs="/respond not kept", store=False),
        line("agent-in-line", inputs="x", agent_id="ag_ignored", model="other"),
        line("bad-args", inputs="x", completion_args={"temperature": 9}),
        line("no-inputs", name="nothing"),
    )
    job = await create_job(client, endpoint="/v1/conversations", input_files=[file_id])
    await run_jobs(app)
    done = (await client.get(f"/v1/batch/jobs/{job['id']}")).json()
    assert done["status"] == "SUCCESS"
    assert (done["succeeded_requests"], done["failed_requests"]) == (4, 2)

    outputs = {o["custom_id"]: o for o in await jsonl_file(client, done["output_file"])}
    errors = {e["custom_id"]: e for e in await jsonl_file(client, done["error_file"])}
    assert set(outputs) == {"hello", "call", "unstored", "agent-in-line"}
    hello = outputs["hello"]["response"]
    assert hello["status_code"] == 200
    assert hello["body"]["object"] == "conversation.response"
    [answer] = hello["body"]["outputs"]
    assert answer["type"] == "message.output" and answer["content"] == "echo: hello"
    assert answer["model"] == ECHO
    [call] = outputs["call"]["response"]["body"]["outputs"]
    assert call["type"] == "function.call" and call["name"] == "get_weather"
    # The job's model wins over a line's model or agent.
    assert outputs["agent-in-line"]["response"]["body"]["outputs"][0]["model"] == ECHO
    assert errors["bad-args"]["response"]["status_code"] in (400, 422)
    assert errors["no-inputs"]["response"]["status_code"] == 422

    # Conversations are stored as the live endpoint stores them (but with `store: false`).
    conversation_id = hello["body"]["conversation_id"]
    got = (await client.get(f"/v1/conversations/{conversation_id}")).json()
    assert got["model"] == ECHO and got["name"] == "first" and got["metadata"] == {"k": "v"}
    history = (await client.get(f"/v1/conversations/{conversation_id}/history")).json()
    assert [e["type"] for e in history["entries"]] == ["message.input", "message.output"]
    unstored = outputs["unstored"]["response"]["body"]["conversation_id"]
    assert (await client.get(f"/v1/conversations/{unstored}")).status_code == 404
    # A stored conversation goes on as any other.
    appended = await client.post(f"/v1/conversations/{conversation_id}", json={"inputs": "more"})
    assert appended.json()["outputs"][0]["content"] == "echo: more"

    # Accounted as batch calls, each event with its job and line.
    await app.state.services.recorder.flush()
    async with app.state.services.db.transaction() as work:
        usage = (
            await work.session.execute(
                sa.select(UsageRecord.source, UsageRecord.correlation_id).where(
                    UsageRecord.source == "batch"
                )
            )
        ).all()
        events = (
            (
                await work.session.execute(
                    sa.select(ChatCompletionEvent).where(
                        ChatCompletionEvent.correlation_id == conversation_id
                    )
                )
            )
            .scalars()
            .all()
        )
    assert len(usage) == 4
    assert events[0].extra_fields["batch_id"] == job["id"]
    assert events[0].extra_fields["custom_id"] == "hello"


async def test_conversation_lines_on_an_agent(app: FastAPI, client: httpx.AsyncClient) -> None:
    created = await client.post(
        "/v1/agents",
        json={"model": ECHO, "name": "helper", "instructions": "Be brief."},
    )
    assert created.status_code == 200, created.text
    agent = created.json()
    job = await create_job(
        client,
        endpoint="/v1/conversations",
        model=None,
        agent_id=agent["id"],
        requests=[
            {"custom_id": "a", "body": {"inputs": "hi"}},
            {"custom_id": "b", "body": {"inputs": "there", "model": "ignored"}},
        ],
    )
    assert job["agent_id"] == agent["id"] and job["model"] is None
    listed = (await client.get("/v1/batch/jobs", params={"agent_id": agent["id"]})).json()
    assert [j["id"] for j in listed["data"]] == [job["id"]]
    await run_jobs(app)
    done = (await client.get(f"/v1/batch/jobs/{job['id']}", params={"inline": "true"})).json()
    assert done["status"] == "SUCCESS" and done["succeeded_requests"] == 2
    by_id = {o["custom_id"]: o["response"]["body"] for o in done["outputs"]}
    assert by_id["a"]["outputs"][0]["content"] == "echo: hi"
    assert by_id["b"]["outputs"][0]["agent_id"] == agent["id"]
    got = (await client.get(f"/v1/conversations/{by_id['a']['conversation_id']}")).json()
    assert got["agent_id"] == agent["id"]
