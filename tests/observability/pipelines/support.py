"""Pipelines in tests: create one, run its job in this process (the real worker, or the task
with a stand-in context), read its verdicts."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import select

from maestrale.observability.span_evaluations.tables import SpanEvaluation

PIPELINES = "/v1/observability/pipelines"
ALL_SPANS: list[dict[str, Any]] = [{"source_kind": "span", "filter": None}]


async def create_pipeline(client: httpx.AsyncClient, **kw: Any) -> dict[str, Any]:
    body = {"name": "Support QA", "selectors": ALL_SPANS, "definitions": [{"slug": "tone"}], **kw}
    resp = await client.post(PIPELINES, json=body)
    assert resp.status_code == 201, resp.text
    pipeline: dict[str, Any] = resp.json()
    return pipeline


async def verdicts(app: FastAPI) -> list[SpanEvaluation]:
    async with app.state.services.db.transaction() as work:
        stmt = select(SpanEvaluation).order_by(SpanEvaluation.id)
        return list((await work.session.execute(stmt)).scalars())
