"""A document over a reading bound ends in error with the bound in its status, while another
workspace's documents are processed meanwhile by the same worker."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from maestrale.app import create_app
from maestrale.core.auth.principal import Tenant
from maestrale.libraries.documents import states
from tests.libraries import support_api as s
from tests.libraries.ingest.samples import docx_of_paragraphs
from tests.support import app_fixtures

# The bomb's time bound: long enough for the other workspace's note on a loaded machine.
PARSE_SECONDS = 6


@pytest.fixture
async def app(database_url: str, tmp_path: Path) -> AsyncIterator[FastAPI]:
    settings = app_fixtures.test_settings(
        database_url,
        tmp_path / "data",
        library_embedding_model="maestrale-embed",
        library_max_elements=10_000_000,
        library_parse_seconds=PARSE_SECONDS,
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


async def status(client: httpx.AsyncClient, library_id: str, doc_id: str) -> dict[str, Any]:
    resp = await client.get(f"/v1/libraries/{library_id}/documents/{doc_id}/status")
    assert resp.status_code == 200, resp.text
    body: dict[str, Any] = resp.json()
    return body


async def test_a_bomb_fails_with_its_bound_while_another_workspace_is_served(
    app: FastAPI, tenant: Tenant
) -> None:
    other = await s.caller(app.state.services.db, tenant.organization_id)
    async with (
        app_fixtures.make_client(app) as attacker,
        app_fixtures.make_client(app, other.key) as victim,
    ):
        bomb_library = await s.create_library(attacker)
        bomb = docx_of_paragraphs(400_000, "word")  # minutes of python-docx, 60 kB packed
        bomb_doc = await s.uploaded(attacker, bomb_library, bomb, "bomb.docx")
        notes_library = await s.create_library(victim)
        notes = await s.uploaded(victim, notes_library, b"The quay opened in April.\n")

        worker = asyncio.create_task(s.run_jobs(app, timeout=120))
        for _ in range(400):
            state = await status(victim, notes_library, notes["id"])
            if state["process_status"] not in states.UNFINISHED:
                break
            await asyncio.sleep(0.05)
        assert state["process_status"] == "done", state
        assert (await status(attacker, bomb_library, bomb_doc["id"]))["process_status"] == (
            "in_progress"
        )

        await worker
        failed = await status(attacker, bomb_library, bomb_doc["id"])
        assert failed["process_status"] == "error"
        assert failed["processing_status"] in (
            f"Error: reading the document took over {PARSE_SECONDS} seconds",
            f"Error: reading the document took over {PARSE_SECONDS} seconds of processor",
        )
