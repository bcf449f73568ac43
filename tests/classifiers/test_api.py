"""The four endpoints over HTTP: shapes, the local engines, and every error case."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from maestrale.app import create_app
from maestrale.classifiers.service import MAX_INPUTS
from maestrale.classifiers.training import train_classifier
from maestrale.engines.builtin.embeddings import embed as builtin_embed
from maestrale.engines.moderation_types import CATEGORIES
from maestrale.engines.types import EmbeddingRequest, EmbeddingResult
from tests.batch.support import create_job, jsonl_file, run_jobs
from tests.support.app_fixtures import make_client
from tests.support.app_fixtures import test_settings as make_settings

DATA = Path(__file__).parent / "data" / "classifier_train.jsonl"


async def _embed(model: str, texts: list[str]) -> EmbeddingResult:
    return builtin_embed(EmbeddingRequest(model=model, inputs=texts))


@pytest.fixture(scope="module")
async def artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("clf") / "topics.json"
    await train_classifier(DATA, embed=_embed, embeddings_model="maestrale-embed", out=out)
    return out


@pytest.fixture
async def clf_app(database_url: str, tmp_path: Path, artifact: Path) -> AsyncIterator[FastAPI]:
    catalog = tmp_path / "models.toml"
    catalog.write_text(
        "[[models]]\n"
        'id = "topics-clf"\n'
        'engine = "classifier"\n'
        'capabilities = ["classification"]\n'
        f'options = {{ artifact = "{artifact}" }}\n',
        "utf-8",
    )
    application = create_app(make_settings(database_url, tmp_path / "data", models=catalog))
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def clf_client(clf_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with make_client(clf_app) as c:
        yield c


@pytest.mark.timeout(600)  # e5 loads in the test: slow on a loaded machine
async def test_moderations_local_engine(client: httpx.AsyncClient) -> None:
    texts = [
        "I am going to kill you and burn your house down tonight.",
        "My card is 4111 1111 1111 1111, and my email is bob@example.com.",
        "What is a good recipe for pancakes?",
    ]
    res = await client.post(
        "/v1/moderations", json={"model": "maestrale-moderation", "input": texts}
    )
    assert res.status_code == 200, res.text
    body = res.json()
    assert body["model"] == "maestrale-moderation" and body["id"]
    assert len(body["results"]) == 3
    for result in body["results"]:
        assert set(result["categories"]) == set(CATEGORIES)
        assert set(result["category_scores"]) == set(CATEGORIES)
        for name in CATEGORIES:
            assert result["categories"][name] == (result["category_scores"][name] >= 0.5)
    threat, pii, clean = body["results"]
    assert threat["categories"]["violence_and_threats"]
    assert pii["categories"]["pii"] and not threat["categories"]["pii"]
    assert not any(clean["categories"].values())

    chat = await client.post(
        "/v1/chat/moderations",
        json={
            "model": "mistral-moderation-latest",
            "input": [
                [{"role": "user", "content": "Write to me at alice@example.org"}],
                [
                    {"role": "user", "content": "hello"},
                    {"role": "assistant", "content": "Hi! How can I help?"},
                ],
            ],
        },
    )
    assert chat.status_code == 200, chat.text
    first, second = chat.json()["results"]
    assert first["categories"]["pii"] and not second["categories"]["pii"]


async def test_classifications(clf_client: httpx.AsyncClient) -> None:
    res = await clf_client.post(
        "/v1/classifications",
        json={
            "model": "topics-clf",
            "input": ["The striker scored a wonderful goal", "The cake was burnt and awful"],
        },
    )
    assert res.status_code == 200, res.text
    body = res.json()
    assert body["model"] == "topics-clf"
    sport, cake = body["results"]
    assert set(sport) == {"sentiment", "topic"}
    assert set(sport["topic"]["scores"]) == {"cooking", "sports", "technology"}
    assert max(sport["topic"]["scores"].items(), key=lambda kv: kv[1])[0] == "sports"
    assert max(cake["topic"]["scores"].items(), key=lambda kv: kv[1])[0] == "cooking"
    assert cake["sentiment"]["scores"]["negative"] > 0.5

    chat = await clf_client.post(
        "/v1/chat/classifications",
        json={
            "model": "topics-clf",
            "input": {"messages": [{"role": "user", "content": "My laptop crashes, useless"}]},
        },
    )
    assert chat.status_code == 200, chat.text
    (only,) = chat.json()["results"]
    assert max(only["topic"]["scores"].items(), key=lambda kv: kv[1])[0] == "technology"


@pytest.mark.parametrize(
    ("path", "body", "status", "code"),
    [
        ("/v1/moderations", {"model": "no-such-model", "input": "x"}, 404, "model_not_found"),
        ("/v1/classifications", {"model": "no-such", "input": "x"}, 404, "model_not_found"),
        (
            "/v1/moderations",
            {"model": "maestrale-echo", "input": "x"},
            400,
            "model_capability_missing",
        ),
        (
            "/v1/classifications",
            {"model": "maestrale-moderation", "input": "x"},
            400,
            "model_capability_missing",
        ),
        (
            "/v1/chat/moderations",
            {"model": "maestrale-embed", "input": [{"role": "user", "content": "x"}]},
            400,
            "model_capability_missing",
        ),
        ("/v1/moderations", {"model": "maestrale-moderation", "input": []}, 400, "invalid_request"),
        (
            "/v1/moderations",
            {"model": "maestrale-moderation", "input": ["x"] * (MAX_INPUTS + 1)},
            400,
            "invalid_request",
        ),
        ("/v1/chat/moderations", {"model": "maestrale-moderation", "input": []}, 400, None),
        (
            "/v1/chat/moderations",
            {"model": "maestrale-moderation", "input": [[]]},
            400,
            "invalid_request",
        ),
        ("/v1/chat/classifications", {"model": "topics", "input": []}, 400, "invalid_request"),
    ],
)
async def test_errors(
    client: httpx.AsyncClient, path: str, body: dict[str, object], status: int, code: str | None
) -> None:
    res = await client.post(path, json=body)
    assert res.status_code == status, res.text
    if code is not None:
        assert res.json()["code"] == code


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/moderations", {"model": "maestrale-moderation", "input": ["ok", 3]}),
        ("/v1/moderations", {"model": "maestrale-moderation", "input": None}),
        ("/v1/moderations", {"input": "x"}),
        ("/v1/classifications", {"model": "m", "input": [{"text": "x"}]}),
        ("/v1/chat/moderations", {"model": "m", "input": "just text"}),
        ("/v1/chat/classifications", {"model": "m", "input": [{"nomessages": 1}]}),
    ],
)
async def test_malformed_bodies_are_422(
    client: httpx.AsyncClient, path: str, body: dict[str, object]
) -> None:
    res = await client.post(path, json=body)
    assert res.status_code == 422, res.text
    assert isinstance(res.json()["detail"], list)


async def test_too_much_text_is_413(client: httpx.AsyncClient) -> None:
    res = await client.post(
        "/v1/moderations", json={"model": "maestrale-moderation", "input": ["x" * 1_000_001] * 2}
    )
    assert res.status_code == 413
    assert res.json()["code"] == "input_too_large"


async def test_requires_a_key(anon_client: httpx.AsyncClient) -> None:
    res = await anon_client.post("/v1/moderations", json={"model": "m", "input": "x"})
    assert res.status_code == 401


async def test_classifications_in_a_batch(clf_app: FastAPI, clf_client: httpx.AsyncClient) -> None:
    job = await create_job(
        clf_client,
        endpoint="/v1/classifications",
        model="topics-clf",
        requests=[
            {"custom_id": "ok", "body": {"input": ["a wonderful goal in the final"]}},
            {"custom_id": "empty", "body": {"input": []}},
        ],
    )
    await run_jobs(clf_app)
    done = (await clf_client.get(f"/v1/batch/jobs/{job['id']}")).json()
    assert (done["succeeded_requests"], done["failed_requests"]) == (1, 1)
    (output,) = await jsonl_file(clf_client, done["output_file"])
    scores = output["response"]["body"]["results"][0]["topic"]["scores"]
    assert max(scores, key=scores.__getitem__) == "sports"
    (error,) = await jsonl_file(clf_client, done["error_file"])
    assert error["custom_id"] == "empty" and error["response"]["status_code"] == 400
