"""The official SDK (mistralai==2.8.0) drives the conversations group of a live server."""

from __future__ import annotations

import json

import pytest
from mistralai.client import Mistral
from mistralai.client import models as m
from mistralai.client.errors import SDKError

from tests.conformance.conftest import LiveServer
from tests.support.local_model import FRANCE, on_topic


@pytest.fixture
def sdk(live_server: LiveServer) -> Mistral:
    return Mistral(api_key=live_server.api_key, server_url=live_server.url)


WEATHER = m.FunctionTool(
    function=m.Function(
        name="get_weather",
        parameters={"type": "object", "properties": {"city": {"type": "string"}}},
    )
)


def test_model_conversation(sdk: Mistral) -> None:
    conversations = sdk.beta.conversations
    started = conversations.start(
        model="maestrale-echo", inputs="hello", instructions="Be brief.", metadata={"sdk": "1"}
    )
    assert isinstance(started, m.ConversationResponse)
    [output] = started.outputs
    assert isinstance(output, m.MessageOutputEntry) and output.content == "echo: hello"
    assert started.usage.total_tokens
    conv_id = started.conversation_id

    appended = conversations.append(conversation_id=conv_id, inputs="again")
    assert isinstance(appended.outputs[0], m.MessageOutputEntry)
    got = conversations.get(conversation_id=conv_id)
    assert isinstance(got, m.ModelConversation) and got.instructions == "Be brief."

    history = conversations.get_history(conversation_id=conv_id)
    assert [type(e) for e in history.entries] == [
        m.MessageInputEntry,
        m.MessageOutputEntry,
        m.MessageInputEntry,
        m.MessageOutputEntry,
    ]
    messages = conversations.get_messages(conversation_id=conv_id)
    assert len(messages.messages) == 4
    assert conv_id in {c.id for c in conversations.list()}
    assert [c.id for c in conversations.list(metadata={"sdk": "1"})] == [conv_id]

    first_id = history.entries[0].id
    assert first_id is not None
    restarted = conversations.restart(conversation_id=conv_id, from_entry_id=first_id)
    assert restarted.conversation_id != conv_id
    restarted_history = conversations.get_history(conversation_id=restarted.conversation_id)
    assert len(restarted_history.entries) == 2

    conversations.delete(conversation_id=conv_id)
    with pytest.raises(SDKError) as excinfo:
        conversations.get(conversation_id=conv_id)
    assert excinfo.value.status_code == 404


def test_function_call_round_trip(sdk: Mistral) -> None:
    conversations = sdk.beta.conversations
    started = conversations.start(
        model="maestrale-echo", inputs='/call get_weather {"city": "Rome"}', tools=[WEATHER]
    )
    [call] = started.outputs
    assert isinstance(call, m.FunctionCallEntry) and call.name == "get_weather"
    assert isinstance(call.arguments, str) and json.loads(call.arguments) == {"city": "Rome"}
    answered = conversations.append(
        conversation_id=started.conversation_id,
        inputs=[m.FunctionResultEntry(tool_call_id=call.tool_call_id, result="sunny")],
    )
    [output] = answered.outputs
    assert isinstance(output, m.MessageOutputEntry)
    assert output.content == "tool get_weather returned: sunny"


def test_agent_conversation_with_server_handoff(sdk: Mistral) -> None:
    target = sdk.beta.agents.create(model="maestrale-echo", name="target")
    source = sdk.beta.agents.create(model="maestrale-echo", name="source", handoffs=[target.id])
    try:
        started = sdk.beta.conversations.start(
            agent_id=source.id, inputs=f"/call handoff_to_{target.id} {{}}"
        )
        handoff, answer = started.outputs
        assert isinstance(handoff, m.AgentHandoffEntry) and handoff.next_agent_id == target.id
        assert isinstance(answer, m.MessageOutputEntry) and answer.agent_id == target.id
        got = sdk.beta.conversations.get(conversation_id=started.conversation_id)
        assert isinstance(got, m.AgentConversation) and got.agent_id == target.id
        sdk.beta.conversations.delete(conversation_id=started.conversation_id)
    finally:
        sdk.beta.agents.delete(agent_id=source.id)
        sdk.beta.agents.delete(agent_id=target.id)


def test_streams(sdk: Mistral) -> None:
    conversations = sdk.beta.conversations
    with conversations.start_stream(model="maestrale-echo", inputs="streamed hello") as stream:
        events = list(stream)
    assert isinstance(events[0].data, m.ResponseStartedEvent)
    assert isinstance(events[-1].data, m.ResponseDoneEvent)
    deltas = [e.data for e in events if isinstance(e.data, m.MessageOutputEvent)]
    assert "".join(str(d.content) for d in deltas) == "echo: streamed hello"
    assert all(e.event == e.data.type for e in events)
    conv_id = events[0].data.conversation_id

    with conversations.append_stream(conversation_id=conv_id, inputs="more") as stream:
        appended = list(stream)
    assert isinstance(appended[-1].data, m.ResponseDoneEvent)
    history = conversations.get_history(conversation_id=conv_id)
    assert len(history.entries) == 4
    first_id = history.entries[0].id
    assert first_id is not None

    with conversations.restart_stream(
        conversation_id=conv_id, from_entry_id=first_id, inputs="again"
    ) as stream:
        restarted = list(stream)
    started = restarted[0].data
    assert isinstance(started, m.ResponseStartedEvent) and started.conversation_id != conv_id
    texts = [str(e.data.content) for e in restarted if isinstance(e.data, m.MessageOutputEvent)]
    assert "".join(texts) == "echo: again"


def test_plain_conversation_on_the_local_model(sdk: Mistral) -> None:
    # On any build: an on-topic answer, the same for the same conversation at temperature 0.
    pytest.importorskip("llama_cpp")
    args = m.CompletionArgs(temperature=0, max_tokens=40)
    started = sdk.beta.conversations.start(
        model="mistral-small-latest", inputs=FRANCE, completion_args=args
    )
    [output] = started.outputs
    assert isinstance(output, m.MessageOutputEntry)
    assert on_topic(str(output.content)), output.content
    [again] = sdk.beta.conversations.start(
        model="mistral-small-latest", inputs=FRANCE, completion_args=args
    ).outputs
    assert isinstance(again, m.MessageOutputEntry) and again.content == output.content
    appended = sdk.beta.conversations.append(
        conversation_id=started.conversation_id,
        inputs="Thank you.",
        completion_args=m.CompletionArgs(temperature=0, max_tokens=20),
    )
    assert isinstance(appended.outputs[0], m.MessageOutputEntry)
    assert appended.usage.prompt_tokens > started.usage.prompt_tokens  # the history was sent
