"""Workflow tests: the app pointed at the session's Temporal dev server (`temporal_address`, in
tests/support/temporal.py)."""

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
    settings = test_settings(database_url, tmp_path / "data", temporal_address=temporal_address)
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def wf_client(wf_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with make_client(wf_app) as client:
        yield client


@pytest.fixture(autouse=True)
def quick_streams(monkeypatch: pytest.MonkeyPatch) -> None:
    """Event streams of in-process apps poll and wait out their grace after an execution's end
    faster than served ones (0.5 s and 3 s): the same behaviour, in test time."""
    from datetime import timedelta

    from maestrale.workflows.events import streaming

    monkeypatch.setattr(streaming, "POLL_SECONDS", 0.05)
    monkeypatch.setattr(streaming, "GRACE", timedelta(seconds=0.3))
