"""The training and validation files of a job: in the caller's workspace, of purpose fine-tune,
every line a valid example of the job type (the first bad line named), within the size limit;
bad lines skipped up to invalid_sample_skip_percentage."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest
from fastapi import FastAPI

from maestrale.fine_tuning import data
from tests.fine_tuning.support import (
    chat_example,
    chat_lines,
    classifier_body,
    classifier_lines,
    completion_body,
    create_job,
    data_file,
    queue_jobs,
    raw_file,
)
from tests.support.app_fixtures import TenantKey, make_client

ZERO_ID = "00000000-0000-0000-0000-000000000000"


async def refused(client: httpx.AsyncClient, body: dict[str, Any]) -> httpx.Response:
    resp = await client.post("/v1/fine_tuning/jobs", json=body)
    assert 400 <= resp.status_code < 500, resp.text
    assert (await client.get("/v1/fine_tuning/jobs")).json()["total"] == 0
    return resp


async def test_files_the_caller_cannot_read(
    app: FastAPI, client: httpx.AsyncClient, other: TenantKey
) -> None:
    good = await data_file(client, chat_lines(2))
    async with make_client(app, other.key) as theirs:
        foreign = await data_file(theirs, chat_lines(2))
    deleted = await data_file(client, chat_lines(2))
    assert (await client.delete(f"/v1/files/{deleted}")).status_code == 200
    for missing in (ZERO_ID, foreign, deleted):
        resp = await refused(client, completion_body(missing))
        assert resp.status_code == 404 and resp.json()["code"] == "file_not_found"
        assert missing in resp.json()["message"]
        resp = await refused(client, completion_body(good, validation_files=[missing]))
        assert resp.status_code == 404 and resp.json()["param"] == "validation_files"
    assert await queue_jobs(app) == []


async def test_file_rules(client: httpx.AsyncClient) -> None:
    batch = await data_file(client, chat_lines(2), purpose="batch")
    resp = await refused(client, completion_body(batch))
    assert resp.status_code == 400 and resp.json()["code"] == "invalid_file_purpose"
    assert "'batch'" in resp.json()["message"]
    good = await data_file(client, chat_lines(2))
    resp = await refused(client, completion_body(good, validation_files=[good]))
    assert resp.status_code == 400 and "both a training and a validation file" in resp.text
    twice = completion_body(good)
    twice["training_files"] = [{"file_id": good}, {"file_id": good}]
    assert (await refused(client, twice)).status_code == 400


DEEP = '{"messages": ' + "[" * 2000 + '"x"' + "]" * 2000 + "}"

BAD_CHAT_LINES = [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "expected a JSON object"),
    (DEEP, "not valid JSON"),
    ('{"messages": [{"role": "user", "content": "a\\ud800"}]}', "not valid JSON"),
    ({"messages": []}, "non-empty `messages`"),
    ({"text": "hello"}, "non-empty `messages`"),
    ({"messages": [{"role": "user", "content": "hi"}]}, "assistant message"),
    ({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant"}]}, "assistant"),
    ({"messages": [{"role": "robot", "content": "hi"}]}, "role"),
    ({"messages": ["hi"]}, "must be an object"),
    (
        {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": "x"}]}]},
        "text chunks",
    ),
    ({"messages": [{"role": "user", "content": 3}]}, "content"),
    (
        {"messages": [{"role": "assistant", "content": "a", "weight": 0.5}]},
        "weight must be 0 or 1",
    ),
    ({"messages": [{"role": "assistant", "tool_calls": "call"}]}, "tool_calls"),
    (
        {"messages": [{"role": "user", "content": "a", "tool_calls": []}]},
        "only assistant messages",
    ),
    ({**chat_example("q", "a"), "tools": "all"}, "`tools`"),
]


@pytest.mark.parametrize(("line", "words"), BAD_CHAT_LINES)
async def test_the_first_bad_line_is_named(
    app: FastAPI, client: httpx.AsyncClient, line: Any, words: str
) -> None:
    raw = line if isinstance(line, str) else orjson.dumps(line).decode()
    # Line 3 counts the blank line before it, as an editor does.
    good = orjson.dumps(chat_example("q", "a")).decode()
    training = await raw_file(app, client, f"{good}\n\n{raw}\n{good}\n".encode())
    resp = await refused(client, completion_body(training))
    assert resp.status_code == 400 and resp.json()["code"] == "invalid_training_data"
    message = resp.json()["message"]
    assert message.startswith(f"file {training} line 3: "), message
    assert words in message


async def test_a_file_of_blank_lines(app: FastAPI, client: httpx.AsyncClient) -> None:
    for content in (b"", b"\n  \n\n"):
        training = await raw_file(app, client, content)
        resp = await refused(client, completion_body(training))
        assert resp.status_code == 400 and "holds no examples" in resp.json()["message"]


async def test_chat_formats_accepted(client: httpx.AsyncClient) -> None:
    lines = [
        {
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "c1", "function": {"name": "weather", "arguments": "{}"}}
                    ],
                },
                {"role": "tool", "content": "sunny", "tool_call_id": "c1"},
                {"role": "assistant", "content": "Sunny.", "weight": 1},
            ],
            "tools": [{"type": "function", "function": {"name": "weather"}}],
        },
        {
            "messages": [
                {"role": "assistant", "content": "", "weight": 0},
                *chat_example("q", "a")["messages"],
            ]
        },
    ]
    training = await data_file(client, lines)
    job = await create_job(client, completion_body(training))
    assert job["metadata"]["data_tokens"] > 0


async def test_bad_lines_skipped_within_the_share(app: FastAPI, client: httpx.AsyncClient) -> None:
    lines = [orjson.dumps(line).decode() for line in chat_lines(9)]
    training = await raw_file(app, client, "\n".join([*lines, "{broken"]).encode())
    resp = await refused(client, completion_body(training, invalid_sample_skip_percentage=5))
    assert resp.status_code == 400
    assert f"file {training} line 10: not valid JSON" in resp.json()["message"]
    assert "1 of 10 lines are invalid" in resp.json()["message"]
    job = await create_job(client, completion_body(training, invalid_sample_skip_percentage=10))
    got = (await client.get(f"/v1/fine_tuning/jobs/{job['id']}")).json()
    validated = got["events"][2]["data"]
    assert validated["training_examples"] == 9 and validated["skipped_examples"] == 1


async def test_over_long_lines_and_too_much_data(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    long_answer = chat_example("q", "a" * (data.MAX_EXAMPLE_BYTES + 10))
    training = await data_file(
        client, [chat_example("q", "a"), long_answer, chat_example("q", "b")]
    )
    resp = await refused(client, completion_body(training))
    assert resp.status_code == 400
    assert f"file {training} line 2: longer than" in resp.json()["message"]

    good = await data_file(client, chat_lines(50))
    monkeypatch.setattr(data, "MAX_DATA_BYTES", 1000)
    resp = await refused(client, completion_body(good))
    assert resp.status_code == 413 and resp.json()["code"] == "training_data_too_large"


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ({"text": "x"}, "labels"),
        ({"labels": {"sentiment": "good"}}, "`text` string or a `messages` list"),
        ({"text": "x", "labels": {"topic": "good"}}, "unknown target 'topic'"),
        ({"text": "x", "labels": {"sentiment": "meh"}}, "label 'meh'"),
        ({"text": "x", "labels": {"sentiment": ["good", "bad"]}}, "single_class"),
        ({"text": "x", "labels": {"sentiment": 3}}, "non-empty string"),
    ],
)
async def test_classifier_lines(client: httpx.AsyncClient, line: Any, words: str) -> None:
    training = await data_file(client, [*classifier_lines(2), line])
    resp = await refused(client, classifier_body(training))
    assert resp.status_code == 400, resp.text
    assert resp.json()["message"].startswith(f"file {training} line 3: ")
    assert words in resp.json()["message"]


async def test_multi_class_targets_take_several_labels(client: httpx.AsyncClient) -> None:
    lines = [
        {"messages": [{"role": "user", "content": "x"}], "labels": {"tags": ["a", "b"]}},
        {"text": "y", "labels": {"tags": "c"}},
    ]
    training = await data_file(client, lines)
    targets = [{"name": "tags", "labels": ["a", "b", "c"], "loss_function": "multi_class"}]
    job = await create_job(client, classifier_body(training, classifier_targets=targets))
    got = (await client.get(f"/v1/fine_tuning/jobs/{job['id']}")).json()
    assert got["classifier_targets"][0]["loss_function"] == "multi_class"


async def test_targets_are_read_from_the_data_when_none_are_given(
    client: httpx.AsyncClient,
) -> None:
    """SDK 1.12.4 drops `classifier_targets` from its request body: the data names them."""
    lines = [
        {"text": "a", "labels": {"sentiment": "good", "tags": ["x", "y"]}},
        {"text": "b", "labels": {"sentiment": "bad", "tags": "z"}},
    ]
    training = await data_file(client, lines)
    no_targets: list[Any] = [None, []]
    for targets in no_targets:
        job = await create_job(client, classifier_body(training, classifier_targets=targets))
        got = (await client.get(f"/v1/fine_tuning/jobs/{job['id']}")).json()
        assert got["classifier_targets"] == [
            {
                "name": "sentiment",
                "labels": ["bad", "good"],
                "weight": 1.0,
                "loss_function": "single_class",
            },
            {
                "name": "tags",
                "labels": ["x", "y", "z"],
                "weight": 1.0,
                "loss_function": "multi_class",
            },
        ]


async def test_inferred_targets_need_two_labels(client: httpx.AsyncClient) -> None:
    lines = [{"text": "a", "labels": {"sentiment": "good"}}] * 3
    training = await data_file(client, lines)
    resp = await refused(client, classifier_body(training, classifier_targets=None))
    assert resp.status_code == 400
    assert "target 'sentiment' has a single label in the data" in resp.json()["message"]
