"""What OpenAI's clients and mistralai 3.x send to chat completions, and the legacy
`/v1/completions`, on the builtin engine (log-probabilities: certain tokens, logprob 0.0)."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import select

from maestrale.accounting.tables import ChatCompletionEvent, UsageRecord
from maestrale.core.auth.principal import Tenant
from tests.completions.test_chat_api import chat, sse_data, user


async def test_developer_role_and_max_completion_tokens(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    messages = [{"role": "developer", "content": "Be brief."}, user("one two three four")]
    resp = await chat(client, messages=messages, max_completion_tokens=2)
    assert resp.status_code == 200, resp.text
    choice = resp.json()["choices"][0]
    assert choice["message"]["content"] == "echo: one" and choice["finish_reason"] == "length"
    assert "logprobs" not in choice
    await app.state.services.recorder.flush()
    async with app.state.services.db.transaction() as work:
        event = (await work.session.execute(select(ChatCompletionEvent))).scalar_one()
    # The developer message reached the model as a system message.
    assert event.request_messages[0] == {"role": "system", "content": "Be brief."}
    agent = await client.post(
        "/v1/agents", json={"model": "maestrale-echo", "name": "dev", "instructions": None}
    )
    assert agent.status_code in (200, 201), agent.text
    via_agent = await client.post(
        "/v1/agents/completions",
        json={"agent_id": agent.json()["id"], "messages": messages, "max_completion_tokens": 3},
    )
    assert via_agent.json()["choices"][0]["message"]["content"] == "echo: one two"
    same = await chat(client, messages=messages, max_tokens=2, max_completion_tokens=2)
    assert same.status_code == 200
    both = await chat(client, messages=messages, max_tokens=5, max_completion_tokens=2)
    assert both.status_code == 400 and both.json()["param"] == "max_tokens"
    assert "max_completion_tokens" in both.json()["message"]


async def test_chat_logprobs_plain_and_streamed(client: httpx.AsyncClient) -> None:
    resp = await chat(client, messages=[user("a b")], logprobs=True, top_logprobs=2, top_k=5)
    assert resp.status_code == 200, resp.text
    choice = resp.json()["choices"][0]
    tokens = choice["logprobs"]["content"]
    assert "".join(t["token"] for t in tokens) == choice["message"]["content"] == "echo: a b"
    first = tokens[0]
    assert first["logprob"] == 0.0 and first["bytes"] == list(b"echo:")
    assert [t["token"] for t in first["top_logprobs"]] == ["echo:"]
    streamed = await chat(client, messages=[user("a b")], logprobs=True, stream=True)
    chunks = [c for c in sse_data(streamed.text) if isinstance(c, dict)]
    entries = [
        e for c in chunks for e in (c["choices"][0].get("logprobs") or {}).get("content", [])
    ]
    assert [e["token"] for e in entries] == [t["token"] for t in tokens]
    assert all(e["top_logprobs"] == [] for e in entries)  # top_logprobs not asked: 0


async def test_fields_an_engine_cannot_honour_are_refused(client: httpx.AsyncClient) -> None:
    for field, value in (("min_tokens", 3), ("prompt_logprobs", True)):
        resp = await chat(client, messages=[user("x")], **{field: value})
        assert resp.status_code == 400, resp.text
        body = resp.json()
        assert body["code"] == "unsupported_parameter" and body["param"] == field
        assert "maestrale-echo" in body["message"]
    lonely = await chat(client, messages=[user("x")], top_logprobs=3)
    assert lonely.status_code == 400 and lonely.json()["param"] == "top_logprobs"
    tier = await chat(client, messages=[user("x")], service_tier="auto", repetition_penalty=1.2)
    assert tier.status_code == 200 and tier.json()["usage"]["service_tier"] == "standard"
    assert "service_tier" not in (await chat(client, messages=[user("x")])).json()["usage"]
    priority = await chat(client, messages=[user("x")], service_tier="priority")
    assert priority.status_code == 400 and priority.json()["param"] == "service_tier"


async def complete(client: httpx.AsyncClient, **body: Any) -> httpx.Response:
    body.setdefault("model", "maestrale-echo")
    return await client.post("/v1/completions", json=body)


async def test_legacy_completions(app: FastAPI, client: httpx.AsyncClient, tenant: Tenant) -> None:
    resp = await complete(client, prompt=["hi there", "/respond ok"], n=2, echo=True)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["object"] == "text_completion" and body["id"].startswith("cmpl-")
    texts = [(c["index"], c["text"], c["finish_reason"]) for c in body["choices"]]
    assert texts == [
        (0, "hi thereecho: hi there", "stop"),
        (1, "hi thereecho: hi there", "stop"),
        (2, "/respond okok", "stop"),
        (3, "/respond okok", "stop"),
    ]
    usage = body["usage"]
    assert usage["prompt_tokens"] + usage["completion_tokens"] == usage["total_tokens"]
    cut = await complete(client, prompt="a b c d e", max_tokens=2, logprobs=1)
    choice = cut.json()["choices"][0]
    assert choice["text"] == "echo: a" and choice["finish_reason"] == "length"
    assert choice["logprobs"] == {
        "tokens": ["echo:", " a"],
        "token_logprobs": [0.0, 0.0],
        "top_logprobs": [{"echo:": 0.0}, {" a": 0.0}],
        "text_offset": [9, 14],
    }
    fim = await complete(client, prompt="def f(", suffix="):")
    assert fim.status_code == 200 and fim.json()["choices"][0]["text"] == "echo: def f("
    await app.state.services.recorder.flush()
    async with app.state.services.db.transaction() as work:
        rows = (await work.session.execute(select(UsageRecord))).scalars().all()
    endpoints = sorted(r.endpoint for r in rows)
    assert endpoints == ["chat", "chat", "chat", "fim"]  # one call per prompt
    assert all(r.workspace_id == tenant.workspace_id for r in rows)

    streamed = await complete(
        client, prompt="x y", stream=True, stream_options={"include_usage": True}
    )
    frames = sse_data(streamed.text)
    assert frames[-1] == "[DONE]"
    chunks = frames[:-1]
    assert all(c["object"] == "text_completion" for c in chunks)
    assert "".join(c["choices"][0]["text"] for c in chunks if c["choices"]) == "echo: x y"
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0


async def test_legacy_completions_refusals(client: httpx.AsyncClient) -> None:
    no_raw = await complete(client, model="maestrale-embed", prompt="x")
    assert no_raw.status_code == 400 and "maestrale-embed" in no_raw.json()["message"]
    for extra, param in (
        ({"echo": True, "logprobs": 1}, "logprobs"),
        ({"best_of": 3}, "best_of"),
        ({"logit_bias": {"50256": -100}}, "logit_bias"),
        ({"suffix": "x", "n": 2}, "suffix"),
    ):
        resp = await complete(client, prompt="x", **extra)
        assert resp.status_code == 400 and resp.json()["param"] == param, resp.text
    tokens = await complete(client, prompt=[1, 2, 3])
    assert tokens.status_code == 422
    failing = await complete(client, prompt="/fail 503")
    assert failing.status_code == 502
