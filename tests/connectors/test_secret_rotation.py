"""Rotating the server secret: credentials sealed under the old key keep working while it is
listed in `previous_secret_keys`; `maestrale secrets reseal` rewrites them under the new key, after
which the old key can go."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi import FastAPI
from sqlalchemy import select

from maestrale.app import create_app
from maestrale.connectors.commands import box_of, reseal
from maestrale.connectors.tables import Connector, ConnectorCredential
from maestrale.core.db import Database
from tests.support import app_fixtures
from tests.support.app_fixtures import make_client
from tests.support.mcp_servers import ServerProbe


def _app(database_url: str, data_dir: Path, secret: str, previous: list[str]) -> FastAPI:
    settings = app_fixtures.test_settings(
        database_url,
        data_dir,
        connector_allow_private=True,
        secret_key=secret,
        previous_secret_keys=previous,
    )
    return create_app(settings)


async def _headers_seen(app: FastAPI) -> str:
    async with app.router.lifespan_context(app), make_client(app) as client:
        seen = await client.post("/v1/connectors/rot/tools/headers/call", json={})
        assert seen.status_code == 200, seen.text
        return str(seen.json()["content"][0]["text"])


async def test_rotate_then_reseal(
    database_url: str, tmp_path: Path, tools_server: tuple[str, ServerProbe]
) -> None:
    url, _ = tools_server
    data = tmp_path / "data"
    first = _app(database_url, data, "old-secret", [])
    async with first.router.lifespan_context(first), make_client(first) as client:
        created = await client.post(
            "/v1/connectors",
            json={"name": "rot", "description": "", "server": url, "headers": {"X-K": "hv"}},
        )
        assert created.status_code == 201, created.text
        put = await client.post(
            "/v1/connectors/rot/user/credentials",
            json={"name": "c", "credentials": {"bearer_token": "bt-1"}},
        )
        assert put.status_code == 200

    rotated = _app(database_url, data, "new-secret", ["old-secret"])
    seen = await _headers_seen(rotated)
    assert "bt-1" in seen and "hv" in seen

    settings = app_fixtures.test_settings(
        database_url, data, secret_key="new-secret", previous_secret_keys=["old-secret"]
    )
    db, box = Database(database_url), box_of(settings)
    assert await reseal(db, box) == (2, 0)
    assert await reseal(db, box) == (0, 0)  # nothing left under the old key
    async with db.transaction() as work:
        sealed = [*(await work.session.execute(select(ConnectorCredential.sealed))).scalars()]
        sealed += [*(await work.session.execute(select(Connector.headers_sealed))).scalars()]
    assert all(box.is_current(v) for v in sealed)
    await db.dispose()

    alone = _app(database_url, data, "new-secret", [])
    seen = await _headers_seen(alone)
    assert "bt-1" in seen and "hv" in seen


def test_reseal_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`maestrale secrets reseal` on a fresh database: nothing to rewrite, and says so."""
    from maestrale.cli import main

    monkeypatch.setenv("MAESTRALE_SECRET_KEY", "new-secret")
    monkeypatch.setenv("MAESTRALE_PREVIOUS_SECRET_KEYS", '["old-secret"]')
    data = tmp_path / "data"
    assert main(["secrets", "reseal", "--data-dir", str(data)]) == 0
