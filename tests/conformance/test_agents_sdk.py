"""The official SDK (mistralai==2.8.0) drives the agents group of a live server."""

from __future__ import annotations

import pytest
from mistralai.client import Mistral
from mistralai.client import models as m
from mistralai.client.errors import SDKError

from tests.conformance.conftest import LiveServer


@pytest.fixture
def sdk(live_server: LiveServer) -> Mistral:
    return Mistral(api_key=live_server.api_key, server_url=live_server.url)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_agent_lifecycle(sdk: Mistral) -> None:
    agents = sdk.beta.agents
    tool = m.FunctionTool(
        function=m.Function(
            name="get_weather",
            description="The weather of a city",
            parameters={"type": "object", "properties": {"city": {"type": "string"}}},
        )
    )
    created = agents.create(
        model="maestrale-echo",
        name="sdk agent",
        instructions="v1",
        tools=[tool],
        completion_args=m.CompletionArgs(temperature=0.3),
        metadata={"suite": "sdk"},
        version_message="first",
    )
    assert isinstance(created, m.Agent)
    assert created.version == 1 and created.versions == [1]
    assert created.tools is not None and isinstance(created.tools[0], m.FunctionTool)
    assert created.tools[0].function.name == "get_weather"
    assert created.completion_args is not None and created.completion_args.temperature == 0.3

    updated = agents.update(agent_id=created.id, instructions="v2")
    assert updated.version == 2 and updated.versions == [1, 2]
    assert agents.get(agent_id=created.id).instructions == "v2"
    assert agents.get(agent_id=created.id, agent_version=1).instructions == "v1"

    alias = agents.create_version_alias(agent_id=created.id, alias="stable", version=1)
    assert isinstance(alias, m.AgentAliasResponse) and alias.version == 1
    assert agents.get(agent_id=created.id, agent_version="stable").version == 1
    assert [a.alias for a in agents.list_version_aliases(agent_id=created.id)] == ["stable"]

    switched = agents.update_version(agent_id=created.id, version=1)
    assert switched.version == 1 and switched.instructions == "v1"
    versions = agents.list_versions(agent_id=created.id)
    assert [v.version for v in versions] == [1, 2]
    assert agents.get_version(agent_id=created.id, version="2").instructions == "v2"

    listed = agents.list(page=0, page_size=50)
    assert created.id in {a.id for a in listed}
    assert [a.id for a in agents.list(metadata={"suite": "sdk"})] == [created.id]

    agents.delete_version_alias(agent_id=created.id, alias="stable")
    assert agents.list_version_aliases(agent_id=created.id) == []
    agents.delete(agent_id=created.id)
    with pytest.raises(SDKError) as excinfo:
        agents.get(agent_id=created.id)
    assert excinfo.value.status_code == 404


def test_cursor_pages_follow_next(sdk: Mistral) -> None:
    made = [sdk.beta.agents.create(model="maestrale-echo", name=f"paged {i}").id for i in range(3)]
    try:
        seen: list[str] = []
        token: str | None = None
        for _ in range(50):
            page = sdk.beta.agents.list_pages(page_size=2, page_token=token)
            assert isinstance(page.result, m.AgentListPage)
            seen += [a.id for a in page.result.data]
            next_token = page.result.next_page_token
            token = next_token if isinstance(next_token, str) else None
            if token is None:
                break
        assert seen[: len(made)] == list(reversed(made))
        assert len(seen) == len(set(seen))
    finally:
        for agent_id in made:
            sdk.beta.agents.delete(agent_id=agent_id)


def test_bad_input_is_a_clear_error(sdk: Mistral) -> None:
    with pytest.raises(SDKError) as excinfo:
        sdk.beta.agents.create(model="no-such-model", name="x")
    assert excinfo.value.status_code == 404
    assert "no-such-model" in excinfo.value.body


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_agent_completions(sdk: Mistral) -> None:
    agent = sdk.beta.agents.create(model="maestrale-echo", name="completer")
    try:
        done = sdk.agents.complete(
            agent_id=agent.id, messages=[{"role": "user", "content": "hello"}]
        )
        assert done.choices[0].message.content == "echo: hello"
        with sdk.agents.stream(
            agent_id=agent.id, messages=[{"role": "user", "content": "hello"}]
        ) as stream:
            text = "".join(str(event.data.choices[0].delta.content or "") for event in stream)
        assert text == "echo: hello"
    finally:
        sdk.beta.agents.delete(agent_id=agent.id)
