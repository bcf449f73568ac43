"""Tools the server runs in conversations (connector tools): the builtin model's `/call` of one
is run by Maestrale, recorded as a `tool.execution` entry and streamed as
`tool.execution.started` / `.delta` / `.done`; the model goes on with the result. The tools are
the test's own (`toolbox_fixture`), behind the same `ToolboxFactory` contract as connectors."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from mistralai.client import Mistral
from mistralai.client import models as m
from sqlalchemy import select

from maestrale.accounting.tables import ChatCompletionEvent
from maestrale.conversations.targets import Target
from tests.conversations.toolbox_fixture import (
    CONNECTOR,
    FixtureToolboxes,
    call,
    events,
    history,
    install,
    post,
    start,
)
from tests.support.app_fixtures import API_KEY

ENTRY_KEYS = {
    "object",
    "type",
    "created_at",
    "completed_at",
    "id",
    "name",
    "arguments",
    "agent_id",
    "model",
    "info",
}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


@pytest.fixture
def toolboxes(app: FastAPI) -> FixtureToolboxes:
    return install(app)


async def model_calls(app: FastAPI, conversation_id: str) -> list[ChatCompletionEvent]:
    await app.state.services.recorder.flush()
    async with app.state.services.db.transaction() as work:
        rows = await work.session.execute(
            select(ChatCompletionEvent)
            .where(ChatCompletionEvent.correlation_id == conversation_id)
            .order_by(ChatCompletionEvent.created_at)
        )
        return list(rows.scalars().all())


async def test_a_connector_tool_call_is_run_by_the_server(
    app: FastAPI, client: httpx.AsyncClient, toolboxes: FixtureToolboxes
) -> None:
    started = await start(client, inputs=call("echo", text="hi"))
    execution, answer = started["outputs"]
    assert set(execution) == ENTRY_KEYS
    assert execution["object"] == "entry" and execution["type"] == "tool.execution"
    assert execution["id"].startswith("tool_") and execution["completed_at"]
    assert execution["name"] == "echo" and json.loads(execution["arguments"]) == {"text": "hi"}
    assert execution["model"] == "maestrale-echo" and execution["agent_id"] is None
    info = execution["info"]
    assert info["tool_call_id"] and info["connector_id"] == "demo"
    assert info["output"] == "hi" and info["error"] is None and info["is_error"] is False
    assert isinstance(info["duration_ms"], int) and info["confirmation"] is None
    assert info["content"] == {"text": "hi"}  # the outcome's own info
    assert answer["type"] == "message.output" and answer["content"] == "tool echo returned: hi"
    # Run once, with no database connection held by the run.
    assert toolboxes.log.calls == [("echo", {"text": "hi"})] and toolboxes.log.held == [False]
    # The official SDK reads it.
    response = m.ConversationResponse.model_validate(started)
    assert isinstance(response.outputs[0], m.ToolExecutionEntry)
    assert isinstance(response.outputs[1], m.MessageOutputEntry)

    conv_id = started["conversation_id"]
    entries = await history(client, conv_id)
    assert [e["type"] for e in entries] == ["message.input", "tool.execution", "message.output"]
    assert entries[1:] == [execution, answer]
    messages = (await client.get(f"/v1/conversations/{conv_id}/messages")).json()["messages"]
    assert [e["type"] for e in messages] == ["message.input", "message.output"]

    # The model was offered the connector's tools, and read the result as a tool message.
    first, second = await model_calls(app, conv_id)
    names = [t["function"]["name"] for t in first.enabled_tools]
    assert names == ["echo", "slow", "fail", "delete", "meet", "cite"]
    call_id = info["tool_call_id"]
    assert second.request_messages[1:] == [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "echo", "arguments": execution["arguments"]},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": "hi"},
    ]

    # Later turns read the history with the execution in it.
    again = await post(client, f"/v1/conversations/{conv_id}", inputs=call("echo", text="bis"))
    assert [o["type"] for o in again["outputs"]] == ["tool.execution", "message.output"]
    assert again["outputs"][1]["content"] == "tool echo returned: bis"
    plain = await post(client, f"/v1/conversations/{conv_id}", inputs="thanks")
    assert plain["outputs"][0]["content"] == "echo: thanks"


async def test_function_tools_and_connector_tools_together(
    client: httpx.AsyncClient, toolboxes: FixtureToolboxes
) -> None:
    """Function tools stay the client's: the run stops at their calls, as before."""
    started = await start(
        client,
        tools=[WEATHER, CONNECTOR],
        inputs=call("echo", text="a") + "\n" + call("get_weather", city="Nice"),
    )
    execution, function_call = started["outputs"]
    assert execution["type"] == "tool.execution" and execution["info"]["output"] == "a"
    assert function_call["type"] == "function.call" and function_call["name"] == "get_weather"
    assert function_call["confirmation_status"] is None
    result = {
        "type": "function.result",
        "tool_call_id": function_call["tool_call_id"],
        "result": "sunny",
    }
    conv_id = started["conversation_id"]
    answered = await post(client, f"/v1/conversations/{conv_id}", inputs=[result])
    assert answered["outputs"][0]["content"] == "tool get_weather returned: sunny"


async def test_parallel_calls_run_together_and_are_recorded_in_call_order(
    app: FastAPI, client: httpx.AsyncClient, toolboxes: FixtureToolboxes
) -> None:
    lines = [call("meet", name="first"), call("meet", name="second")]
    started = await start(client, inputs="\n".join(lines))
    first, second, answer = started["outputs"]
    # Each waited for the other: they ran at the same time.
    assert first["info"]["output"] == "met first" and second["info"]["output"] == "met second"
    assert first["info"]["tool_call_id"] != second["info"]["tool_call_id"]
    assert answer["content"] == "tool meet returned: met first\ntool meet returned: met second"
    # One assistant message holds both calls, their results follow.
    _, turn = await model_calls(app, started["conversation_id"])
    assistant, *results = turn.request_messages[1:]
    assert [c["function"]["name"] for c in assistant["tool_calls"]] == ["meet", "meet"]
    assert [r["content"] for r in results] == ["met first", "met second"]


async def test_a_failing_tool_gives_an_entry_with_its_error(
    client: httpx.AsyncClient, toolboxes: FixtureToolboxes
) -> None:
    started = await start(client, inputs=call("fail"))
    execution, answer = started["outputs"]
    info = execution["info"]
    assert info["error"] == "the tool server failed: boom" and info["is_error"] is True
    assert "output" not in info
    assert answer["content"] == "tool fail returned: error: the tool server failed: boom"
    entries = await history(client, started["conversation_id"])
    assert [e["type"] for e in entries] == ["message.input", "tool.execution", "message.output"]


async def test_tools_the_factory_refuses_or_does_not_run(
    client: httpx.AsyncClient, toolboxes: FixtureToolboxes
) -> None:
    unknown = await client.post(
        "/v1/conversations",
        json={
            "model": "maestrale-echo",
            "tools": [{"type": "connector", "connector_id": "nope"}],
            "inputs": "x",
        },
    )
    assert unknown.status_code == 404 and unknown.json()["code"] == "connector_not_found"
    web = await client.post(
        "/v1/conversations",
        json={"model": "maestrale-echo", "tools": [{"type": "web_search"}], "inputs": "x"},
    )
    assert web.status_code == 400 and web.json()["code"] == "tool_unavailable"
    assert (await client.get("/v1/conversations")).json() == []


async def test_without_a_factory_connector_tools_are_unavailable(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    app.state.services.toolboxes = None
    response = await client.post(
        "/v1/conversations",
        json={"model": "maestrale-echo", "tools": [CONNECTOR], "inputs": "x"},
    )
    assert response.status_code == 400 and response.json()["code"] == "tool_unavailable"


async def test_streamed_tool_execution(
    client: httpx.AsyncClient, toolboxes: FixtureToolboxes
) -> None:
    streamed = await events(
        client,
        "/v1/conversations",
        model="maestrale-echo",
        tools=[CONNECTOR],
        inputs=call("echo", text="hi"),
    )
    kinds = [e["type"] for e in streamed]
    assert kinds[:4] == [
        "conversation.response.started",
        "tool.execution.started",
        "tool.execution.delta",
        "tool.execution.done",
    ]
    assert set(kinds[4:-1]) == {"message.output.delta"}
    assert kinds[-1] == "conversation.response.done"
    started, delta, done = streamed[1:4]
    assert set(started) == {
        "type",
        "created_at",
        "output_index",
        "id",
        "name",
        "arguments",
        "model",
        "agent_id",
    }
    assert set(delta) == {"type", "created_at", "output_index", "id", "name", "arguments"}
    assert set(done) == {"type", "created_at", "output_index", "id", "name", "info"}
    assert started["id"] == delta["id"] == done["id"] and started["name"] == "echo"
    assert started["output_index"] == delta["output_index"] == done["output_index"] == 0
    assert json.loads(delta["arguments"]) == {"text": "hi"}
    assert done["info"]["output"] == "hi"
    text = "".join(e["content"] for e in streamed if e["type"] == "message.output.delta")
    assert text == "tool echo returned: hi"
    assert {e["output_index"] for e in streamed if e["type"] == "message.output.delta"} == {1}
    m.ToolExecutionStartedEvent.model_validate(started)
    m.ToolExecutionDeltaEvent.model_validate(delta)
    m.ToolExecutionDoneEvent.model_validate(done)

    # What was streamed was stored, under the streamed ids.
    entries = await history(client, streamed[0]["conversation_id"])
    assert entries[1]["id"] == done["id"] and entries[1]["info"] == done["info"]
    assert entries[2]["content"] == "tool echo returned: hi"


async def test_the_step_limit_ends_a_run_that_ran_tools_with_a_message(
    app: FastAPI,
    client: httpx.AsyncClient,
    toolboxes: FixtureToolboxes,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("maestrale.conversations.loop.run.MAX_STEPS", 1)
    started = await start(client, inputs=call("echo", text="once"))
    execution, answer = started["outputs"]
    assert execution["type"] == "tool.execution" and execution["info"]["output"] == "once"
    # One more turn, without tools, answers from what the run did.
    assert answer["type"] == "message.output" and answer["content"] == "tool echo returned: once"
    conv_id = started["conversation_id"]
    assert [e["type"] for e in await history(client, conv_id)] == [
        "message.input",
        "tool.execution",
        "message.output",
    ]
    assert toolboxes.log.calls == [("echo", {"text": "once"})]
    assert len(await model_calls(app, conv_id)) == 2
    go_on = await post(client, f"/v1/conversations/{conv_id}", inputs="go on")
    assert go_on["outputs"][0]["content"] == "echo: go on"


async def test_a_forced_tool_choice_holds_for_the_first_turn_only(
    app: FastAPI, client: httpx.AsyncClient, toolboxes: FixtureToolboxes
) -> None:
    """The builtin model answers a forced choice with a call even after tool results (as small
    models do): forced at every turn, the run made 8 identical calls and no message."""
    for choice in ("any", "required"):
        started = await start(
            client, inputs=call("echo", text="hi"), completion_args={"tool_choice": choice}
        )
        execution, answer = started["outputs"]
        assert execution["type"] == "tool.execution"
        assert answer["content"] == "tool echo returned: hi"
        assert len(await model_calls(app, started["conversation_id"])) == 2
    assert toolboxes.log.calls == [("echo", {"text": "hi"})] * 2


async def test_a_repeated_call_is_cut_and_the_run_says_why_it_stopped(
    app: FastAPI,
    client: httpx.AsyncClient,
    toolboxes: FixtureToolboxes,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A model that keeps repeating its call: the forced choice is never lifted here.
    monkeypatch.setattr("maestrale.conversations.loop.run.FORCED_TURNS", 99)
    streamed = await events(
        client,
        "/v1/conversations",
        model="maestrale-echo",
        tools=[CONNECTOR],
        inputs=call("echo", text="hi"),
        # The stop cuts the last turn's whole answer ("tool echo returned: hi"): it says nothing.
        completion_args={"tool_choice": "any", "stop": ["tool"]},
    )
    kinds = [e["type"] for e in streamed]
    assert kinds.count("tool.execution.done") == 1 and kinds[-1] == "conversation.response.done"
    why = "The run stopped: the model repeated its call to echo with the same arguments."
    deltas = [e for e in streamed if e["type"] == "message.output.delta"]
    assert "".join(e["content"] for e in deltas) == why
    assert {e["output_index"] for e in deltas} == {1}
    conv_id = streamed[0]["conversation_id"]
    entries = await history(client, conv_id)
    assert [e["type"] for e in entries] == ["message.input", "tool.execution", "message.output"]
    assert entries[2]["content"] == why and entries[2]["id"] == deltas[0]["id"]
    # The call, its repeat (not run), and the last turn, made without tools.
    assert toolboxes.log.calls == [("echo", {"text": "hi"})]
    _, repeat, last = await model_calls(app, conv_id)
    assert [c["function"]["name"] for c in repeat.response_messages[0]["tool_calls"]] == ["echo"]
    assert not any(message.get("tool_calls") for message in last.response_messages)


async def test_restart_after_tool_executions(
    client: httpx.AsyncClient, toolboxes: FixtureToolboxes
) -> None:
    started = await start(client, inputs=call("echo", text="kept"))
    conv_id = started["conversation_id"]
    execution = started["outputs"][0]
    restarted = await post(
        client,
        f"/v1/conversations/{conv_id}/restart",
        from_entry_id=execution["id"],
        inputs=call("echo", text="new"),
    )
    new_id = restarted["conversation_id"]
    assert new_id != conv_id
    entries = await history(client, new_id)
    assert [e["type"] for e in entries] == [
        "message.input",
        "tool.execution",
        "message.input",
        "tool.execution",
        "message.output",
    ]
    copied = entries[1]
    assert copied["id"].startswith("tool_") and copied["id"] != execution["id"]
    assert copied["info"] == execution["info"]
    assert entries[-1]["content"] == "tool echo returned: new"
    assert toolboxes.log.calls == [("echo", {"text": "kept"}), ("echo", {"text": "new"})]


async def test_an_agent_with_a_connector_tool(
    client: httpx.AsyncClient, toolboxes: FixtureToolboxes
) -> None:
    created = await client.post(
        "/v1/agents",
        json={
            "model": "maestrale-echo",
            "name": "with tools",
            "tools": [{**CONNECTOR, "tool_configuration": {"include": ["echo"]}}],
        },
    )
    assert created.status_code == 200, created.text
    agent_id = created.json()["id"]
    started = await start(client, agent_id=agent_id, inputs=call("echo", text="agent"))
    execution, answer = started["outputs"]
    assert execution["agent_id"] == agent_id and execution["info"]["output"] == "agent"
    assert answer["agent_id"] == agent_id
    assert answer["content"] == "tool echo returned: agent"
    # Only the included tool is offered: another is not called, its directive is text.
    other = await post(
        client, f"/v1/conversations/{started['conversation_id']}", inputs=call("fail")
    )
    assert other["outputs"][0]["content"].startswith("echo: /call fail")


async def test_a_handoff_target_gets_its_own_tools(
    client: httpx.AsyncClient, toolboxes: FixtureToolboxes
) -> None:
    target = await client.post(
        "/v1/agents",
        json={"model": "maestrale-echo", "name": "target", "tools": [CONNECTOR]},
    )
    source = await client.post(
        "/v1/agents",
        json={"model": "maestrale-echo", "name": "source", "handoffs": [target.json()["id"]]},
    )
    target_id = target.json()["id"]
    started = await start(
        client, agent_id=source.json()["id"], inputs=f"/call handoff_to_{target_id} {{}}"
    )
    assert [o["type"] for o in started["outputs"]] == ["agent.handoff", "message.output"]
    # The conversation is on the target now, with its connector.
    conv_id = started["conversation_id"]
    called = await post(client, f"/v1/conversations/{conv_id}", inputs=call("echo", text="t"))
    assert called["outputs"][0]["agent_id"] == target_id
    assert called["outputs"][1]["content"] == "tool echo returned: t"


async def test_the_official_sdk_drives_connector_tools(
    app: FastAPI, toolboxes: FixtureToolboxes
) -> None:
    transport = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")
    async with transport:
        sdk = Mistral(api_key=API_KEY, server_url="http://test", async_client=transport)
        conversations = sdk.beta.conversations
        agent_tools: list[m.CreateAgentRequestTool] = [
            m.CustomConnector(
                connector_id="demo",
                tool_configuration=m.ToolConfiguration(requires_confirmation=["echo"]),
            )
        ]
        agent = await sdk.beta.agents.create_async(
            model="maestrale-echo", name="sdk", tools=agent_tools
        )
        started = await conversations.start_async(
            agent_id=agent.id, inputs=call("echo", text="sdk")
        )
        [pending] = started.outputs
        assert isinstance(pending, m.FunctionCallEntry)
        assert pending.confirmation_status == "pending" and pending.name == "echo"
        assert toolboxes.log.calls == []

        confirmed = await conversations.append_async(
            conversation_id=started.conversation_id,
            tool_confirmations=[
                m.ToolCallConfirmation(tool_call_id=pending.tool_call_id, confirmation="allow")
            ],
        )
        execution, answer = confirmed.outputs
        assert isinstance(execution, m.ToolExecutionEntry) and execution.info is not None
        assert execution.info["confirmation"] == "allowed" and execution.info["output"] == "sdk"
        assert isinstance(answer, m.MessageOutputEntry)
        assert answer.content == "tool echo returned: sdk"

        entries = (
            await conversations.get_history_async(conversation_id=started.conversation_id)
        ).entries
        assert [type(e) for e in entries] == [
            m.MessageInputEntry,
            m.FunctionCallEntry,
            m.ToolExecutionEntry,
            m.MessageOutputEntry,
        ]
        stored = entries[1]
        assert isinstance(stored, m.FunctionCallEntry)
        assert stored.confirmation_status == "allowed"

        tools: list[m.ConversationRequestTool] = [m.CustomConnector(connector_id="demo")]
        stream = await conversations.start_stream_async(
            model="maestrale-echo",
            tools=tools,
            inputs=call("echo", text="streamed"),
        )
        kinds = [type(event.data) async for event in stream]
        assert kinds[:4] == [
            m.ResponseStartedEvent,
            m.ToolExecutionStartedEvent,
            m.ToolExecutionDeltaEvent,
            m.ToolExecutionDoneEvent,
        ]
        assert kinds[-1] is m.ResponseDoneEvent


def test_offered_tools_order() -> None:
    class Box:
        def tools(self) -> list[Any]:
            from maestrale.conversations.server_tools import ServerTool

            return [ServerTool("echo", "Say it.", {"type": "object", "properties": {}})]

        async def run(self, tool: Any, arguments: dict[str, Any]) -> Any:
            raise AssertionError

    target = Target(
        model="maestrale-echo",
        tools=[WEATHER, CONNECTOR],
        handoffs=["ag_next"],
        toolbox=Box(),
    )
    names = [t["function"]["name"] for t in target.offered_tools()]
    assert names == ["get_weather", "echo", "handoff_to_ag_next"]
