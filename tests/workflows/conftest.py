"""Workflow tests: the app pointed at the session's Temporal dev server (`temporal_address`, in
tests/support/temporal.py), its worker proxy on a free port."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from maestrale.app import create_app
from tests.support.app_fixtures import make_client, test_settings
from tests.support.temporal import NAMESPACE

__all__ = ["NAMESPACE"]


@pytest.fixture
async def wf_app(
    database_url: str, tmp_path: Path, temporal_address: str
) -> AsyncIterator[FastAPI]:
    settings = test_settings(
        database_url, tmp_path / "data", temporal_address=temporal_address, temporal_proxy_port=0
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def wf_client(wf_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with make_client(wf_app) as client:
        yield client


@pytest.fixture
async def namespace(wf_client: httpx.AsyncClient) -> str:
    """The Temporal namespace of the test's workspace (the one its workers are told to serve);
    the plain workers of these tests dial Temporal itself, in that namespace."""
    whoami = await wf_client.get("/v1/workflows/workers/whoami")
    assert whoami.status_code == 200, whoami.text
    found: str = whoami.json()["namespace"]
    return found


@pytest.fixture(autouse=True)
def quick_streams(monkeypatch: pytest.MonkeyPatch) -> None:
    """Event streams of in-process apps poll and wait out their grace after an execution's end
    faster than served ones (0.5 s and 3 s): the same behaviour, in test time."""
    from datetime import timedelta

    from maestrale.workflows.events import streaming

    monkeypatch.setattr(streaming, "POLL_SECONDS", 0.05)
    monkeypatch.setattr(streaming, "GRACE", timedelta(seconds=0.3))
