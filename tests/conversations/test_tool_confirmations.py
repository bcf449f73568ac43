"""Server tool calls that wait for the user's confirmation: the run stops with a pending
function.call entry; the next append answers it with `tool_confirmations` (allow: the tool runs;
deny: it does not, the model is told), plain or streamed."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from maestrale.conversations.entries import DENIED
from tests.conversations.toolbox_fixture import (
    FixtureToolboxes,
    call,
    events,
    history,
    install,
    post,
    refused,
    start,
)


@pytest.fixture
def toolboxes(app: FastAPI) -> FixtureToolboxes:
    return install(app)


def allow(call_id: str) -> dict[str, str]:
    return {"tool_call_id": call_id, "confirmation": "allow"}


def deny(call_id: str) -> dict[str, str]:
    return {"tool_call_id": call_id, "confirmation": "deny"}


async def pending(client: httpx.AsyncClient, inputs: str) -> tuple[str, list[dict[str, Any]]]:
    started = await start(client, inputs=inputs)
    return started["conversation_id"], started["outputs"]


async def test_a_call_waits_for_its_confirmation_then_runs(
    client: httpx.AsyncClient, toolboxes: FixtureToolboxes
) -> None:
    conv_id, outputs = await pending(client, call("delete", path="/tmp/x"))
    [waiting] = outputs
    assert waiting["type"] == "function.call" and waiting["name"] == "delete"
    assert waiting["confirmation_status"] == "pending"
    assert json.loads(waiting["arguments"]) == {"path": "/tmp/x"}
    call_id = waiting["tool_call_id"]
    assert toolboxes.log.calls == []  # not run
    url = f"/v1/conversations/{conv_id}"

    # An append must answer it, and only it, once.
    required = await refused(client, url, inputs="hello")
    assert required["code"] == "tool_confirmation_required" and call_id in required["message"]
    unknown = await refused(client, url, tool_confirmations=[allow(call_id), allow("nope")])
    assert unknown["code"] == "tool_call_not_pending" and "nope" in unknown["message"]
    twice = await refused(client, url, tool_confirmations=[allow(call_id), deny(call_id)])
    assert twice["code"] == "duplicate_tool_confirmation"
    # It is no client function call: a function.result does not answer it.
    result = {"type": "function.result", "tool_call_id": call_id, "result": "done"}
    as_result = await refused(client, url, inputs=[result], tool_confirmations=[allow(call_id)])
    assert as_result["code"] == "unknown_tool_call"
    assert len(await history(client, conv_id)) == 2  # nothing stored
    assert toolboxes.log.calls == []

    confirmed = await post(client, url, tool_confirmations=[allow(call_id)])
    execution, answer = confirmed["outputs"]
    assert execution["type"] == "tool.execution" and execution["name"] == "delete"
    info = execution["info"]
    assert info["tool_call_id"] == call_id and info["confirmation"] == "allowed"
    assert info["output"] == "deleted /tmp/x" and info["error"] is None
    assert answer["content"] == "tool delete returned: deleted /tmp/x"
    assert toolboxes.log.calls == [("delete", {"path": "/tmp/x"})]

    entries = await history(client, conv_id)
    assert [e["type"] for e in entries] == [
        "message.input",
        "function.call",
        "tool.execution",
        "message.output",
    ]
    assert entries[1]["id"] == waiting["id"]
    assert entries[1]["confirmation_status"] == "allowed"  # answered
    messages = (await client.get(f"{url}/messages")).json()["messages"]
    assert [e["type"] for e in messages] == ["message.input", "message.output"]

    # Answered: nothing is pending any more.
    again = await refused(client, url, tool_confirmations=[allow(call_id)])
    assert again["code"] == "tool_call_not_pending"
    after = await post(client, url, inputs="thanks")
    assert after["outputs"][0]["content"] == "echo: thanks"


async def test_a_denied_call_is_recorded_and_the_model_told(
    client: httpx.AsyncClient, toolboxes: FixtureToolboxes
) -> None:
    conv_id, [waiting] = await pending(client, call("delete", path="/etc"))
    denied = await post(
        client,
        f"/v1/conversations/{conv_id}",
        tool_confirmations=[deny(waiting["tool_call_id"])],
    )
    execution, answer = denied["outputs"]
    info = execution["info"]
    assert info["confirmation"] == "denied" and info["error"] == DENIED
    assert info["is_error"] is True and "output" not in info
    assert answer["content"] == f"tool delete returned: {DENIED}"
    assert toolboxes.log.calls == []  # never run
    entries = await history(client, conv_id)
    assert entries[1]["confirmation_status"] == "denied"


async def test_inputs_come_after_the_confirmed_results(
    client: httpx.AsyncClient, toolboxes: FixtureToolboxes
) -> None:
    conv_id, [waiting] = await pending(client, call("delete", path="a"))
    confirmed = await post(
        client,
        f"/v1/conversations/{conv_id}",
        inputs="and now?",
        tool_confirmations=[allow(waiting["tool_call_id"])],
    )
    execution, answer = confirmed["outputs"]
    assert execution["info"]["output"] == "deleted a"
    assert answer["content"] == "echo: and now?"
    entries = await history(client, conv_id)
    assert [e["type"] for e in entries] == [
        "message.input",
        "function.call",
        "tool.execution",
        "message.input",
        "message.output",
    ]


async def test_streamed_confirmation(
    client: httpx.AsyncClient, toolboxes: FixtureToolboxes
) -> None:
    started = await events(
        client,
        "/v1/conversations",
        model="maestrale-echo",
        tools=[{"type": "connector", "connector_id": "demo"}],
        inputs=call("delete", path="s"),
    )
    [waiting] = [e for e in started if e["type"] == "function.call.delta"]
    assert waiting["confirmation_status"] == "pending" and waiting["name"] == "delete"
    assert started[-1]["type"] == "conversation.response.done"
    conv_id = started[0]["conversation_id"]

    denied = await events(
        client,
        f"/v1/conversations/{conv_id}",
        tool_confirmations=[deny(waiting["tool_call_id"])],
    )
    kinds = [e["type"] for e in denied]
    assert kinds[:4] == [
        "conversation.response.started",
        "tool.execution.started",
        "tool.execution.delta",
        "tool.execution.done",
    ]
    done = denied[3]
    assert done["output_index"] == 0 and done["info"]["confirmation"] == "denied"
    text = "".join(e["content"] for e in denied if e["type"] == "message.output.delta")
    assert text == f"tool delete returned: {DENIED}"
    assert {e["output_index"] for e in denied if e["type"] == "message.output.delta"} == {1}
    entries = await history(client, conv_id)
    assert entries[1]["confirmation_status"] == "denied"
    assert entries[2]["id"] == done["id"]

    # Streamed refusals are refused before the stream opens.
    refusal = await client.post(
        f"/v1/conversations/{conv_id}",
        json={"stream": True, "tool_confirmations": [allow(waiting["tool_call_id"])]},
    )
    assert refusal.status_code == 400 and refusal.json()["code"] == "tool_call_not_pending"


async def test_parallel_calls_with_one_needing_confirmation(
    app: FastAPI, client: httpx.AsyncClient, toolboxes: FixtureToolboxes
) -> None:
    conv_id, outputs = await pending(
        client, call("echo", text="now") + "\n" + call("delete", path="later")
    )
    execution, waiting = outputs
    assert execution["type"] == "tool.execution" and execution["info"]["output"] == "now"
    assert waiting["type"] == "function.call" and waiting["confirmation_status"] == "pending"
    assert toolboxes.log.calls == [("echo", {"text": "now"})]

    confirmed = await post(
        client,
        f"/v1/conversations/{conv_id}",
        tool_confirmations=[allow(waiting["tool_call_id"])],
    )
    later, answer = confirmed["outputs"]
    assert later["info"]["output"] == "deleted later"
    # Both calls of the turn are answered together, in one assistant message's results.
    assert answer["content"] == ("tool echo returned: now\ntool delete returned: deleted later")
    entries = await history(client, conv_id)
    assert [e["type"] for e in entries] == [
        "message.input",
        "tool.execution",
        "function.call",
        "tool.execution",
        "message.output",
    ]


async def test_a_restart_cannot_leave_a_call_pending(
    client: httpx.AsyncClient, toolboxes: FixtureToolboxes
) -> None:
    conv_id, [waiting] = await pending(client, call("delete", path="r"))
    refusal = await refused(
        client,
        f"/v1/conversations/{conv_id}/restart",
        from_entry_id=waiting["id"],
        inputs="again",
    )
    assert refusal["code"] == "tool_confirmation_required"
    first = (await history(client, conv_id))[0]
    restarted = await post(
        client, f"/v1/conversations/{conv_id}/restart", from_entry_id=first["id"], inputs="hi"
    )
    assert restarted["outputs"][0]["content"] == "echo: hi"


async def test_a_confirmed_tool_gone_since_gives_an_error_entry(
    client: httpx.AsyncClient, toolboxes: FixtureToolboxes
) -> None:
    conv_id, [waiting] = await pending(client, call("delete", path="gone"))
    del toolboxes.sets["demo"]["delete"]
    confirmed = await post(
        client,
        f"/v1/conversations/{conv_id}",
        tool_confirmations=[allow(waiting["tool_call_id"])],
    )
    execution, answer = confirmed["outputs"]
    info = execution["info"]
    assert info["confirmation"] == "allowed" and info["is_error"] is True
    assert "not available" in info["error"]
    assert answer["content"].startswith("tool delete returned: error: ")
    assert toolboxes.log.calls == []
