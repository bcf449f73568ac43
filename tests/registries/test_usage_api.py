"""Prompts and skills in use, over HTTP with the builtin model: a response, an agent and a
conversation run the rendered prompt (then their own instructions, then the skills' bundle),
resolved at each run unless pinned, and their chat completion events record which versions."""

from __future__ import annotations

from typing import Any

import httpx
import sqlalchemy as sa
from fastapi import FastAPI

from maestrale.accounting.tables import ChatCompletionEvent

ECHO = "maestrale-echo"
SEARCH = "/v1/observability/chat-completion-events/search"


async def ok(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def new_prompt(
    client: httpx.AsyncClient, name: str, content: str, **more: Any
) -> dict[str, Any]:
    definition = {"content": content, **more.pop("definition", {})}
    return await ok(
        await client.post("/v2/prompts", json={"name": name, "definition": definition, **more})
    )


async def new_version(client: httpx.AsyncClient, kind: str, ref: str, definition: Any) -> int:
    created = await ok(
        await client.post(f"/v2/{kind}/{ref}/versions", json={"definition": definition})
    )
    return int(created["version"])


async def move(client: httpx.AsyncClient, kind: str, ref: str, version: int, alias: str) -> None:
    url = f"/v2/{kind}/{ref}/versions/{version}"
    await ok(await client.patch(url, json={"aliases": {"values": [alias]}}))


async def events(app: FastAPI) -> list[ChatCompletionEvent]:
    """The workspace's chat completion events, oldest first."""
    await app.state.services.recorder.flush()
    async with app.state.services.db.transaction() as work:
        stmt = sa.select(ChatCompletionEvent).order_by(ChatCompletionEvent.created_at)
        return list((await work.session.execute(stmt)).scalars())


def system(event: ChatCompletionEvent) -> str | None:
    first = event.request_messages[0]
    return str(first["content"]) if first["role"] == "system" else None


async def test_a_response_renders_its_prompt_before_its_instructions(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    prompt = await new_prompt(client, "support", "You help {{ customer }} with {{product}}.")
    # OpenAI's shape: a version as a string, a variable as an input_text item.
    variables = {"customer": {"type": "input_text", "text": "Ada"}, "product": {"sku": 1}}
    body = {
        "model": ECHO,
        "input": "hi",
        "instructions": "Be brief.",
        "prompt": {"id": prompt["id"], "version": "1", "variables": variables},
    }
    response = await ok(await client.post("/v1/responses", json=body))
    assert response["output_text"] == "echo: hi" and response["prompt"]["id"] == prompt["id"]
    [event] = await events(app)
    assert system(event) == 'You help Ada with {"sku":1}.\n\nBe brief.'
    assert event.extra_fields["prompt"] == {"id": prompt["id"], "name": "support", "version": 1}

    by_name = {**body, "prompt": {"id": "support", "variables": {"customer": "B", "product": 2}}}
    await ok(await client.post("/v1/responses", json=by_name))
    assert system((await events(app))[-1]) == "You help B with 2.\n\nBe brief."

    unknown = await client.post("/v1/responses", json={**body, "prompt": {"id": "nope"}})
    assert unknown.status_code == 404, unknown.text
    missing = await client.post(
        "/v1/responses", json={**body, "prompt": {"id": "support", "variables": {"customer": 1}}}
    )
    assert missing.status_code == 400 and missing.json()["code"] == "missing_prompt_variables"
    assert "product" in missing.json()["message"]
    huge = await client.post(
        "/v1/responses", json={**body, "prompt": {"id": "x", "version": 2**64}}
    )
    assert huge.status_code == 422
    assert len(await events(app)) == 2  # nothing refused ran


async def test_an_agent_runs_its_prompt_and_skills_and_follows_the_alias(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    prompt = await new_prompt(client, "persona", "v1 for {{who}}", aliases=["production"])
    v2 = await new_version(client, "prompts", prompt["id"], {"content": "v2 for {{who}}"})
    skill = await ok(
        await client.post(
            "/v2/skills",
            json={"name": "tone", "definition": {"description": "Tone.", "body": "Be kind."}},
        )
    )
    ref = {"id": prompt["id"], "alias": "production", "variables": {"who": "agent"}}
    agent = await ok(
        await client.post(
            "/v1/agents",
            json={
                "model": ECHO,
                "name": "a",
                "instructions": "Own.",
                "completion_args": {"temperature": 0.1},
                "prompt": ref,
                "skills": [{"id": "tone"}],
            },
        )
    )
    assert agent["prompt"] == ref and agent["skills"] == [{"id": "tone"}]
    assert agent["completion_args"] == {"temperature": 0.1}  # the references kept apart
    bundle = "# Skills\n\nYou can use the following skills.\n\n## Skill: tone\n\nTone.\n\nBe kind."

    # A conversation's variables fill its agent's prompt.
    start = {"agent_id": agent["id"], "inputs": "hi", "prompt": {"variables": {"who": "conv"}}}
    conversation = await ok(await client.post("/v1/conversations", json=start))
    assert system((await events(app))[-1]) == f"v1 for conv\n\nOwn.\n\n{bundle}"

    # Moving `production` changes what runs next.
    await move(client, "prompts", prompt["id"], v2, "production")
    url = f"/v1/conversations/{conversation['conversation_id']}"
    await ok(await client.post(url, json={"inputs": "again"}))
    first, last = (await events(app))[-2:]
    assert system(last) == f"v2 for conv\n\nOwn.\n\n{bundle}"
    assert last.extra_fields["prompt"] == {"id": prompt["id"], "name": "persona", "version": 2}
    assert last.extra_fields["skills"] == [{"id": skill["id"], "name": "tone", "version": 1}]

    # The deprecated agent completions run it too (with the agent's own variables).
    chat = {"agent_id": agent["id"], "messages": [{"role": "user", "content": "x"}]}
    await ok(await client.post("/v1/agents/completions", json=chat))
    completion = (await events(app))[-1]
    assert system(completion) == f"v2 for agent\n\nOwn.\n\n{bundle}"
    assert completion.extra_fields["prompt_version"] == 2

    # Events are found by prompt version.
    flt = {"field": "extra_fields.prompt_version", "op": "eq", "value": 1}
    found = await ok(await client.post(SEARCH, json={"search_params": {"filters": flt}}))
    assert [e["event_id"] for e in found["completion_events"]["results"]] == [first.id]

    # A pinned version stays whatever the alias does; with no variables of the agent's, a
    # conversation must give them.
    pinned = await ok(
        await client.patch(
            f"/v1/agents/{agent['id']}", json={"prompt": {"id": "persona", "version": 1}}
        )
    )
    assert pinned["skills"] == [{"id": "tone"}] and pinned["completion_args"] == {
        "temperature": 0.1
    }
    missing = await client.post("/v1/conversations", json={**start, "prompt": None})
    assert missing.status_code == 400 and "who" in missing.json()["message"]
    await ok(await client.post("/v1/conversations", json=start))
    assert system((await events(app))[-1]) == f"v1 for conv\n\nOwn.\n\n{bundle}"
    await ok(await client.patch(f"/v1/agents/{agent['id']}", json={"prompt": None, "skills": None}))
    await ok(await client.post("/v1/conversations", json=start))
    assert system((await events(app))[-1]) == "Own."

    # What names nothing, or belongs to the agent, is refused.
    unknown = {"model": ECHO, "name": "b", "skills": [{"id": "tone", "version": 9}]}
    assert (await client.post("/v1/agents", json=unknown)).status_code == 404
    theirs = {**start, "prompt": {"id": "persona"}}
    assert (await client.post("/v1/conversations", json=theirs)).status_code == 400


async def test_a_model_conversation_keeps_its_references(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    await new_prompt(client, "greet", "Greet {{name}}.")
    start: dict[str, Any] = {"model": ECHO, "inputs": "hi", "prompt": {"id": "greet"}}
    missing = await client.post("/v1/conversations", json=start)
    assert missing.status_code == 400 and missing.json()["param"] == "prompt.variables"
    start["prompt"]["variables"] = {"name": "Bo"}
    conversation = await ok(await client.post("/v1/conversations", json=start))
    got = await ok(await client.get(f"/v1/conversations/{conversation['conversation_id']}"))
    assert got["prompt"] == {"id": "greet", "variables": {"name": "Bo"}}
    assert got["instructions"] is None and got["completion_args"] == {}
    await new_version(client, "prompts", "greet", {"content": "Hello {{name}}."})
    await ok(
        await client.post(
            f"/v1/conversations/{conversation['conversation_id']}", json={"inputs": "more"}
        )
    )
    assert [system(e) for e in await events(app)] == ["Greet Bo.", "Hello Bo."]
    # A restart keeps them too (and resolves them again).
    restart = {"from_entry_id": conversation["outputs"][0]["id"], "inputs": "again"}
    url = f"/v1/conversations/{conversation['conversation_id']}/restart"
    restarted = await ok(await client.post(url, json=restart))
    got = await ok(await client.get(f"/v1/conversations/{restarted['conversation_id']}"))
    assert got["prompt"] == {"id": "greet", "variables": {"name": "Bo"}}
    assert system((await events(app))[-1]) == "Hello Bo."


async def test_a_template_renders_nothing_it_should_not(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    await new_prompt(client, "dunder", "{{ __class__ }}")
    start = {"model": ECHO, "inputs": "hi", "prompt": {"id": "dunder"}}
    refused = await client.post("/v1/conversations", json=start)
    assert refused.status_code == 400 and "__class__" in refused.json()["message"]
    literal = "{{ a.b }} {{ x|upper }} {% include '/etc/passwd' %} {{{{ x }}"
    await new_prompt(client, "hostile", literal, definition={"variables": [{"name": "x"}]})
    start = {"model": ECHO, "inputs": "hi", "prompt": {"id": "hostile", "variables": {"x": "X"}}}
    await ok(await client.post("/v1/conversations", json=start))
    [event] = await events(app)
    assert system(event) == "{{ a.b }} {{ x|upper }} {% include '/etc/passwd' %} {{ x }}"
