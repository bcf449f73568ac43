"""Helpers of the evaluations v2 tests: a project, an evaluation of two judges (a label and a
number), a dataset, and a run over it."""

from __future__ import annotations

from typing import Any

import httpx

from tests.observability.test_dataset_imports_api import add_record
from tests.observability.test_datasets_api import new_dataset
from tests.observability.test_judges_api import new_judge

OBS = "/v1/observability"
QUALITY = {
    "type": "REGRESSION",
    "min": 1,
    "min_description": "poor",
    "max": 5,
    "max_description": "great",
}


async def post(client: httpx.AsyncClient, url: str, body: dict[str, Any]) -> dict[str, Any]:
    resp = await client.post(f"{OBS}{url}", json=body)
    assert resp.status_code == 201, resp.text
    created: dict[str, Any] = resp.json()
    return created


async def evaluation(client: httpx.AsyncClient) -> dict[str, Any]:
    """Project `support` with evaluation `tone-check`: judges `tone` (polite/rude) and
    `quality` (1 to 5)."""
    await new_judge(client)
    quality = await new_judge(client, name="quality", output=QUALITY)
    await post(client, "/projects", {"name": "Support", "description": "the help desk"})
    return await post(
        client,
        "/projects/support/evaluations_v2",
        {
            "name": "Tone check",
            "tags": ["weekly"],
            "metadata_": {"team": "care"},
            "evaluators": ["tone", quality["id"]],
        },
    )


async def dataset(client: httpx.AsyncClient, *texts: str) -> str:
    ds = await new_dataset(client)
    for text in texts:
        await add_record(client, ds["id"], text)
    return str(ds["id"])


async def start_run(
    client: httpx.AsyncClient, dataset_id: str | None = None, name: str = "baseline", **kw: Any
) -> dict[str, Any]:
    body = {"name": name, **({"dataset_id": dataset_id} if dataset_id else {}), **kw}
    return await post(client, "/evaluations_v2/tone-check/runs", body)
