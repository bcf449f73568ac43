"""What creation refuses, with a clear 4xx and nothing written: base models that cannot be
trained here, rules across fields, hyperparameters out of range, missing training extra."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from maestrale.fine_tuning import extra
from tests.fine_tuning.support import (
    chat_lines,
    classifier_body,
    classifier_lines,
    completion_body,
    data_file,
    queue_jobs,
)


@pytest.fixture(scope="module")
def backend(request: pytest.FixtureRequest) -> str:
    """Module scope: one app per backend for the module (below)."""
    return str(request.param)


@pytest.fixture(scope="module")
def app(shared_app: FastAPI) -> FastAPI:
    """Every case here is refused and writes no job (each checks it): the module's cases share
    one app."""
    return shared_app


async def assert_nothing_written(app: FastAPI, client: httpx.AsyncClient) -> None:
    assert (await client.get("/v1/fine_tuning/jobs")).json()["total"] == 0
    assert await queue_jobs(app) == []


@pytest.mark.parametrize(
    ("body", "status", "code", "words"),
    [
        ({"model": "no-such-model"}, 404, "model_not_found", "no-such-model"),
        ({"model": "maestrale-echo"}, 400, "model_not_fine_tunable", "fine_tuning capability"),
        ({"model": "ft:tiny-chat:x:1234"}, 400, "model_not_fine_tunable", "fine-tuned model"),
        ({"model": "remote-chat"}, 400, "no_training_upstream", "no training upstream"),
        ({"model": "tiny-classifier"}, 400, "model_not_fine_tunable", "completion_chat"),
        (
            {"hyperparameters": {"epochs": 2, "training_steps": 10}},
            400,
            "invalid_fine_tuning_job",
            "hyperparameters.epochs or hyperparameters.training_steps",
        ),
        ({"hyperparameters": {"fim_ratio": 0.5}}, 400, "fim_unsupported", "fill-in-the-middle"),
        ({"hyperparameters": {"seq_len": 8192}}, 400, "invalid_fine_tuning_job", "4096"),
        (
            {"integrations": [{"project": "p", "api_key": "k" * 40}]},
            400,
            "integrations_unsupported",
            "integrations",
        ),
        (
            {"repositories": [{"name": "r", "owner": "o", "token": "t"}]},
            400,
            "repositories_unsupported",
            "repositories",
        ),
        ({"suffix": "has space"}, 400, "invalid_fine_tuning_job", "suffix"),
        ({"suffix": "x" * 19}, 400, "invalid_fine_tuning_job", "18"),
        ({"suffix": ""}, 400, "invalid_fine_tuning_job", "suffix"),
        ({"training_files": []}, 400, "invalid_fine_tuning_job", "training file"),
        (
            {"classifier_targets": [{"name": "t", "labels": ["a", "b"]}], "job_type": "completion"},
            400,
            "invalid_fine_tuning_job",
            "classifier jobs",
        ),
        (
            {"hyperparameters": {"epochs": 1000}},
            400,
            "invalid_fine_tuning_job",
            "training steps",
        ),
    ],
)
async def test_completion_refusals(
    app: FastAPI,
    client: httpx.AsyncClient,
    body: dict[str, Any],
    status: int,
    code: str,
    words: str,
) -> None:
    training = await data_file(client, chat_lines(1000))
    resp = await client.post("/v1/fine_tuning/jobs", json=completion_body(training, **body))
    assert resp.status_code == status, resp.text
    assert resp.json()["code"] == code
    assert words in resp.json()["message"]
    await assert_nothing_written(app, client)


@pytest.mark.parametrize(
    ("body", "code", "words"),
    [
        ({"model": "tiny-chat"}, "model_not_fine_tunable", "classification"),
        (
            {"classifier_targets": [{"name": "t", "labels": ["a"]}]},
            "invalid_fine_tuning_job",
            "two labels",
        ),
        (
            {"classifier_targets": [{"name": "t", "labels": ["a", "a"]}]},
            "invalid_fine_tuning_job",
            "twice",
        ),
        (
            {
                "classifier_targets": [
                    {"name": "t", "labels": ["a", "b"]},
                    {"name": "t", "labels": ["c", "d"]},
                ]
            },
            "invalid_fine_tuning_job",
            "twice",
        ),
        ({"hyperparameters": {"fim_ratio": 0}}, "invalid_fine_tuning_job", "fim_ratio"),
    ],
)
async def test_classifier_refusals(
    app: FastAPI, client: httpx.AsyncClient, body: dict[str, Any], code: str, words: str
) -> None:
    training = await data_file(client, classifier_lines(4))
    resp = await client.post("/v1/fine_tuning/jobs", json=classifier_body(training, **body))
    assert resp.status_code == 400, resp.text
    assert resp.json()["code"] == code and words in resp.json()["message"]
    await assert_nothing_written(app, client)


@pytest.mark.parametrize(
    "hyperparameters",
    [
        {"learning_rate": 0},
        {"learning_rate": 1.5},
        {"weight_decay": -0.1},
        {"weight_decay": 1.01},
        {"warmup_fraction": 2},
        {"epochs": 0},
        {"epochs": 1000.5},
        {"training_steps": 0},
        {"training_steps": 100_001},
        {"training_steps": 2**64},
        {"seq_len": 15},
        {"seq_len": 32769},
        {"fim_ratio": 1.5},
        {"learning_rate": "fast"},
    ],
)
async def test_hyperparameters_out_of_range(
    app: FastAPI, client: httpx.AsyncClient, hyperparameters: dict[str, Any]
) -> None:
    training = await data_file(client, chat_lines(2))
    body = completion_body(training, hyperparameters=hyperparameters)
    resp = await client.post("/v1/fine_tuning/jobs", json=body)
    assert resp.status_code == 422, resp.text
    [issue] = resp.json()["detail"]
    assert issue["loc"][:2] == ["body", "hyperparameters"]
    await assert_nothing_written(app, client)


@pytest.mark.parametrize(
    "body",
    [
        {"invalid_sample_skip_percentage": 101},
        {"invalid_sample_skip_percentage": -1},
        {"job_type": "pretrain"},
        {"model": ""},
        {"model": "a\x00b"},
        {"training_files": [{"file_id": "x", "weight": -1}]},
        {"training_files": [{"weight": 1}]},
        {"auto_start": "sometimes"},
        {"suffix": "x" * 5000},
    ],
)
async def test_malformed_bodies(
    app: FastAPI, client: httpx.AsyncClient, body: dict[str, Any]
) -> None:
    training = await data_file(client, chat_lines(2))
    resp = await client.post("/v1/fine_tuning/jobs", json=completion_body(training, **body))
    assert resp.status_code == 422, resp.text
    assert resp.json()["detail"]
    await assert_nothing_written(app, client)


async def test_no_body_or_no_model(client: httpx.AsyncClient) -> None:
    for content in (b"", b"{not json", b"[]", b'{"hyperparameters": {}}'):
        resp = await client.post(
            "/v1/fine_tuning/jobs", content=content, headers={"content-type": "application/json"}
        )
        assert resp.status_code == 422, (content, resp.text)


async def test_training_extra_missing(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    def require(job_type: str) -> None:
        raise extra.TrainingExtraMissing(
            f"{job_type} fine-tuning needs pip install 'maestrale[training]'", param="model"
        )

    monkeypatch.setattr(extra, "require", require)
    training = await data_file(client, chat_lines(2))
    for params in ({}, {"dry_run": "true"}):
        resp = await client.post(
            "/v1/fine_tuning/jobs", params=params, json=completion_body(training)
        )
        assert resp.status_code == 400
        assert resp.json()["code"] == "training_extra_missing"
        assert "maestrale[training]" in resp.json()["message"]
    await assert_nothing_written(app, client)
