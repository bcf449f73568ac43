"""JSON no column can store (nested 300 deep, an integer of 2^64, a lone surrogate) is refused
at the edge by every route that keeps JSON, and never stops the accounting of anyone else."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from maestrale.accounting.tables import UsageRecord
from maestrale.completions.schemas import ChatCompletionRequest
from maestrale.core.errors import AppError
from maestrale.core.validation import MAX_JSON_DEPTH, JsonProblem, check_json, parse_body
from tests.batch.support import create_job, input_file, jsonl_file, run_jobs
from tests.observability.test_dataset_imports_api import DATASETS, start_import, task_of
from tests.support.app_fixtures import TenantKey, make_client

pytestmark = pytest.mark.both_databases()


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"a": value}
    return value


POISONS: dict[str, Any] = {
    "deep": nested(300),
    "huge_int": 2**64,
    "surrogate": "\ud800",
    # A key is named in the 422's location, which must still encode (it was a 500).
    "surrogate_key": {"ok": 1, "\udc00": 1},
}
USER = {"role": "user", "content": "hi"}
ECHO = "maestrale-echo"


def tool(parameters: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": "f", "parameters": parameters}}


def chat(**fields: Any) -> dict[str, Any]:
    return {"model": ECHO, "messages": [USER], **fields}


def batch(**fields: Any) -> dict[str, Any]:
    line = {"custom_id": "a", "body": {"messages": [USER]}}
    return {"endpoint": "/v1/chat/completions", "model": ECHO, "requests": [line], **fields}


def judge(description: Any) -> dict[str, Any]:
    option = {"value": "a", "description": description}
    output = {"type": "CLASSIFICATION", "options": [option]}
    return {"name": "j", "description": "d", "model_name": ECHO, "instructions": "i", **output}


# (path, body holding the poison); `{dataset}` is filled in by the test.
Body = Callable[[Any], dict[str, Any]]
RECORDS = "/v1/observability/datasets/{dataset}/records"
ROUTES: list[tuple[str, Body]] = [
    ("/v1/chat/completions", lambda p: chat(metadata={"k": p})),
    ("/v1/chat/completions", lambda p: chat(tools=[tool({"x": p})])),
    ("/v1/chat/completions", lambda p: chat(messages=[{"role": "user", "content": p}])),
    ("/v1/chat/completions", lambda p: chat(random_seed=p)),
    ("/v1/fim/completions", lambda p: {"model": ECHO, "prompt": "x", "metadata": {"k": p}}),
    ("/v1/embeddings", lambda p: {"model": "maestrale-embed", "input": "x", "metadata": {"k": p}}),
    ("/v1/agents", lambda p: {"model": ECHO, "name": "a", "metadata": {"k": p}}),
    ("/v1/agents", lambda p: {"model": ECHO, "name": "a", "tools": [tool({"x": p})]}),
    ("/v1/agents", lambda p: {"model": ECHO, "name": "a", "completion_args": {"random_seed": p}}),
    ("/v1/conversations", lambda p: {"model": ECHO, "inputs": "hi", "metadata": {"k": p}}),
    ("/v1/conversations", lambda p: {"model": ECHO, "inputs": [{"role": "user", "content": p}]}),
    ("/v1/conversations", lambda p: {"model": ECHO, "inputs": "hi", "tools": [tool({"x": p})]}),
    ("/v1/batch/jobs", lambda p: batch(metadata={"k": p})),
    ("/v1/batch/jobs", lambda p: batch(requests=[{"custom_id": "a", "body": chat(metadata=p)}])),
    (RECORDS, lambda p: {"payload": {"messages": [USER], "k": p}}),
    (RECORDS, lambda p: {"payload": {"messages": [USER]}, "properties": {"k": p}}),
    ("/v1/observability/judges", judge),
]


def send(client: httpx.AsyncClient, method: str, path: str, body: Any) -> Any:
    # httpx cannot encode a lone surrogate: the escapes are written as a client would send them.
    content = json.dumps(body).encode()
    headers = {"content-type": "application/json"}
    return client.request(method, path, content=content, headers=headers)


async def usage_of(app: FastAPI, workspace_id: str) -> int:
    async with app.state.services.db.transaction() as work:
        rows = await work.session.execute(
            select(UsageRecord).where(UsageRecord.workspace_id == workspace_id)
        )
        return len(rows.scalars().all())


@pytest.mark.parametrize("poison", sorted(POISONS))
async def test_poison_is_refused_everywhere_and_accounting_goes_on(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey, poison: str
) -> None:
    resp = await client.post("/v1/observability/datasets", json={"name": "d", "description": "d"})
    dataset = resp.json()["id"]
    for path, body in ROUTES:
        url = path.format(dataset=dataset)
        resp = await send(client, "POST", url, body(POISONS[poison]))
        assert resp.status_code == 422, (url, poison, resp.status_code, resp.text)
        detail = resp.json()["detail"]
        if "/observability/" in url:
            assert detail["error_code"] == "VALIDATION_ERROR", detail
        else:
            assert detail[0]["loc"][0] == "body" and detail[0]["type"] == "json_invalid", detail
            if poison == "surrogate_key":
                assert detail[0]["loc"][-1] == "\\udc00", detail
    async with make_client(app, other.key) as theirs:
        answered = await theirs.post(
            "/v1/chat/completions", json={"model": ECHO, "messages": [USER]}
        )
        assert answered.status_code == 200
    await app.state.services.recorder.flush()
    assert app.state.services.recorder.pending == 0
    assert await usage_of(app, other.tenant.workspace_id) == 1


async def test_values_at_the_limits_are_kept(app: FastAPI, client: httpx.AsyncClient) -> None:
    metadata = {"deep": nested(40), "max": 2**63 - 1, "min": -(2**63), "text": "é 😀 \u2028"}
    resp = await client.post(
        "/v1/chat/completions", json={"model": ECHO, "messages": [USER], "metadata": metadata}
    )
    assert resp.status_code == 200, resp.text
    resp = await client.post("/v1/agents", json={"model": ECHO, "name": "a", "metadata": metadata})
    assert resp.status_code == 200, resp.text
    assert resp.json()["metadata"] == metadata
    await app.state.services.recorder.flush()  # the event of the chat call is stored
    assert app.state.services.recorder.pending == 0


@pytest.mark.parametrize("poison", sorted(POISONS))
def test_batch_line_bodies_are_held_to_the_same_limits(poison: str) -> None:
    body = {"model": ECHO, "messages": [USER], "metadata": {"k": POISONS[poison]}}
    with pytest.raises(AppError) as raised:
        parse_body(ChatCompletionRequest, body)
    assert raised.value.status_code == 422
    assert raised.value.body()["detail"][0]["loc"][:3] == ["body", "metadata", "k"]


async def test_not_finite_numbers_are_refused(client: httpx.AsyncClient) -> None:
    content = json.dumps(chat(metadata={"k": float("nan")})).encode()
    assert b"NaN" in content
    resp = await client.post(
        "/v1/chat/completions", content=content, headers={"content-type": "application/json"}
    )
    assert resp.status_code == 422, resp.text


async def test_a_batch_input_line_nested_too_deep_is_a_line_error(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    """orjson reads batch lines nested up to 1024 levels: the line answers 422 like the live
    endpoint, and its event never reaches the recorder."""
    deep = json.dumps({"custom_id": "deep", "body": chat(metadata=nested(300))})
    fine = json.dumps({"custom_id": "fine", "body": chat()})
    file_id = await input_file(client, deep, fine)
    job = await create_job(client, input_files=[file_id])
    await run_jobs(app)
    done = (await client.get(f"/v1/batch/jobs/{job['id']}")).json()
    assert (done["status"], done["succeeded_requests"], done["failed_requests"]) == (
        "SUCCESS",
        1,
        1,
    )
    errors = await jsonl_file(client, done["error_file"])
    assert errors[0]["custom_id"] == "deep" and errors[0]["response"]["status_code"] == 422
    async with make_client(app, other.key) as theirs:
        resp = await theirs.post("/v1/chat/completions", json=chat())
        assert resp.status_code == 200
    await app.state.services.recorder.flush()
    assert await usage_of(app, other.tenant.workspace_id) == 1


async def test_a_dataset_file_import_refuses_what_a_record_cannot_store(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    lines = [json.dumps({"messages": [USER], "k": nested(300)})]
    file_id = await input_file(client, *lines)
    dataset = (await client.post(DATASETS, json={"name": "d", "description": "d"})).json()
    task = await start_import(client, dataset["id"], "file", file_id=file_id)
    await run_jobs(app)
    failed = await task_of(client, dataset["id"], task["id"])
    assert failed["status"] == "FAILED", failed
    assert failed["message"].startswith("line 1: k.a.a"), failed["message"]
    assert "nests deeper" in failed["message"]


@pytest.mark.parametrize(
    ("document", "loc", "words"),
    [
        ({"a": [1, {"b": "x\ud800"}]}, ("a", 1, "b"), "Unicode"),
        ({"ok": 1, "a\udfff": 1}, ("a\\udfff",), "key is not valid Unicode"),
        ({"x": float("inf")}, ("x",), "not finite"),
        ({"x": [-(2**63) - 1]}, ("x", 0), "64-bit"),
        ({"x": nested(MAX_JSON_DEPTH)}, ("x", *["a"] * (MAX_JSON_DEPTH - 1)), "deeper"),
    ],
)
def test_check_json_says_where(document: Any, loc: tuple[Any, ...], words: str) -> None:
    with pytest.raises(JsonProblem) as problem:
        check_json(document)
    assert problem.value.loc == loc
    assert words in problem.value.message


def test_check_json_takes_what_can_be_stored() -> None:
    check_json({"x": nested(MAX_JSON_DEPTH - 2), "n": [2**63 - 1, -(2**63), 1.5e308], "t": "é😀"})
