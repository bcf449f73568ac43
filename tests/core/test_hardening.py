"""Low-severity hardening: database errors never show their parameters, key lifetimes from the
CLI are sane, search strings are literal, the data and blob directories are private, and
/metrics can be closed."""

from __future__ import annotations

import stat
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import insert
from sqlalchemy.exc import DBAPIError, StatementError

from maestrale.accounting.tables import ChatCompletionEvent
from maestrale.app import create_app
from maestrale.core.auth.bootstrap import bootstrap
from maestrale.core.auth.repository import KeyRepository, TenancyRepository
from maestrale.core.clock import utcnow
from maestrale.core.db import Database
from tests.support.app_fixtures import ADMIN_KEY, API_KEY, make_client
from tests.support.app_fixtures import test_settings as settings_for
from tests.support.cli import run

SECRET = "SECRET-PROMPT-0123456789"


async def test_database_errors_do_not_show_bound_parameters(db: Database) -> None:
    """A failed statement's message (logged with its traceback) names the statement, never its
    values: they are prompts and instructions."""
    event: dict[str, Any] = {
        "id": "e1",
        "organization_id": "o",
        "workspace_id": "w",
        "source": "api",
        "model": None,
        "status_code": 200,
        "latency_ms": 1.0,
        "request_messages": [{"role": "user", "content": SECRET}],
        "response_messages": [],
        "enabled_tools": [],
        "nb_input_tokens": 1,
        "nb_output_tokens": 0,
        "nb_messages": 1,
        "extra_fields": {"note": SECRET},
        "created_at": utcnow(),
    }
    with pytest.raises(DBAPIError) as refused:  # model is NOT NULL
        async with db.transaction() as work:
            await work.session.execute(insert(ChatCompletionEvent), [event])
    assert "INSERT INTO chat_completion_events" in str(refused.value)
    assert SECRET not in str(refused.value)
    event["model"], event["extra_fields"] = "m", {"k": 2**64}
    with pytest.raises(StatementError) as unserialisable:
        async with db.transaction() as work:
            await work.session.execute(insert(ChatCompletionEvent), [event])
    assert SECRET not in str(unserialisable.value)


async def test_cli_key_lifetimes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert run("migrate", data_dir=data).returncode == 0
    db = Database(f"sqlite+aiosqlite:///{(data / 'maestrale.db').resolve()}")
    async with db.transaction() as work:
        await bootstrap(work.session, api_key=None, admin_key=None, keys_file=None)
        ws = await TenancyRepository(work.session).default_workspace()
        assert ws is not None
        expired, _ = await KeyRepository(work.session).create_key(
            kind="standard",
            organization_id=ws.organization_id,
            workspace_id=ws.id,
            user_id=None,
            name="old",
            expires_at=utcnow() - timedelta(days=1),
        )
    await db.dispose()
    for days in ("0", "-1", "100000", "soon"):
        refused = run("keys", "create", "--expires-in-days", days, data_dir=data)
        assert refused.returncode == 2, (days, refused.stdout)
        assert "--expires-in-days" in refused.stderr and not refused.stdout
    created = run("keys", "create", "--expires-in-days", "1", data_dir=data)
    assert created.returncode == 0, created.stderr
    new_id = created.stderr.split("id: ")[1].split()[0]
    states = {
        line.split("\t")[0]: line.split("\t")[4]
        for line in run("keys", "list", data_dir=data).stdout.splitlines()
    }
    assert states[expired.id] == "expired"
    assert states[new_id] == "active"


async def test_agent_search_is_a_literal_substring(client: httpx.AsyncClient) -> None:
    for name in ("plain", "100% sure", "snake_case", "back\\slash"):
        resp = await client.post("/v1/agents", json={"model": "maestrale-echo", "name": name})
        assert resp.status_code == 200, resp.text

    async def found(search: str) -> set[str]:
        resp = await client.get("/v1/agents", params={"search": search})
        assert resp.status_code == 200, resp.text
        return {agent["name"] for agent in resp.json()}

    assert await found("%") == {"100% sure"}
    assert await found("n_k") == set()  # `_` is no wildcard (and agent ids hold one)
    assert await found("\\") == {"back\\slash"}
    assert await found("E_C") == {"snake_case"}
    assert await found("a%e") == set()


@pytest.fixture
async def loose_app(database_url: str, tmp_path: Path) -> AsyncIterator[FastAPI]:
    data, blobs = tmp_path / "data", tmp_path / "elsewhere" / "blobs"
    data.mkdir(mode=0o755)
    blobs.mkdir(mode=0o777, parents=True)
    blobs.chmod(0o777)  # whatever the umask
    data.chmod(0o755)
    settings = settings_for(database_url, data, blob_dir=blobs)
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


async def test_existing_data_and_blob_dirs_are_made_private(
    loose_app: FastAPI, tmp_path: Path
) -> None:
    assert stat.S_IMODE((tmp_path / "data").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "elsewhere" / "blobs").stat().st_mode) == 0o700


async def test_cli_makes_an_existing_data_dir_private(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o755)
    assert run("migrate", data_dir=data).returncode == 0
    assert stat.S_IMODE(data.stat().st_mode) == 0o700


@pytest.mark.parametrize("access", ["public", "admin", "off"])
async def test_metrics_access(database_url: str, tmp_path: Path, access: str) -> None:
    application = create_app(settings_for(database_url, tmp_path / "data", metrics_access=access))
    async with (
        application.router.lifespan_context(application),
        make_client(application, None) as anon,
    ):
        keyless = await anon.get("/metrics")
        standard = await anon.get("/metrics", headers={"Authorization": f"Bearer {API_KEY}"})
        admin = await anon.get("/metrics", headers={"x-api-key": ADMIN_KEY})
    statuses = (keyless.status_code, standard.status_code, admin.status_code)
    assert (
        statuses == {"public": (200, 200, 200), "admin": (401, 401, 200), "off": (404,) * 3}[access]
    )
    if access == "admin":
        assert keyless.json()["code"] == "missing_admin_key"
    if access != "off":
        assert "maestrale_http_requests_total" in admin.text
