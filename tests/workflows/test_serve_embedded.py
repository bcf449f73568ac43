"""`maestrale serve` with no Temporal configured runs its own (the embedded dev server) and hands
workers its worker proxy, never Temporal's own port; registrations, executions and Temporal's
state survive a restart."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from pathlib import Path

import httpx
import pytest

from maestrale.workflows.temporal.devserver import find_binary
from tests.support.app_fixtures import API_KEY
from tests.support.live import free_port, start_server, stop_server
from tests.workflows.conftest import NAMESPACE
from tests.workflows.plain_worker import definitions, running_worker

pytestmark = [
    pytest.mark.ci_tier,
    pytest.mark.skipif(find_binary() is None, reason="the [workflows] extra is missing"),
]


def _serve(
    data_dir: Path, temporal_port: int, proxy_port: int, workers: int = 1
) -> tuple[object, str]:
    return start_server(
        data_dir,
        env={
            "MAESTRALE_TEMPORAL_EMBEDDED": "true",
            "MAESTRALE_TEMPORAL_EMBEDDED_PORT": str(temporal_port),
            "MAESTRALE_TEMPORAL_PROXY_PORT": str(proxy_port),
            "MAESTRALE_WORKERS": str(workers),
        },
    )


def _client(url: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=url, headers={"Authorization": f"Bearer {API_KEY}"}, timeout=30
    )


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


async def _register(client: httpx.AsyncClient, queue: str) -> None:
    body = {"definitions": definitions(queue), "deployment_name": queue, "worker_name": "w1"}
    assert (await client.post("/v1/workflows/register", json=body)).status_code == 200


async def test_state_survives_a_restart(tmp_path: Path) -> None:
    data_dir, port, proxy, queue = tmp_path / "data", free_port(), free_port(), "survivor"
    proc, url = _serve(data_dir, port, proxy)
    try:
        async with _client(url) as client:
            whoami = (await client.get("/v1/workflows/workers/whoami")).json()
            assert whoami["scheduler_url"] == f"127.0.0.1:{proxy}"
            assert whoami["namespace"].startswith(f"{NAMESPACE}-") and whoami["tls"] is False
            namespace = whoami["namespace"]
            await _register(client, queue)
            started = await client.post(
                "/v1/workflows/echo/execute",
                json={"input": {"sleep": 2, "shout": "later"}, "execution_id": "survives"},
            )
            assert started.status_code == 200, started.text
    finally:
        stop_server(proc)  # type: ignore[arg-type]
    deadline = time.monotonic() + 15
    while _listening(port) and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.1)
    assert not _listening(port), "the embedded Temporal outlived its server"

    proc, url = _serve(data_dir, port, proxy)
    try:
        worker = running_worker(f"127.0.0.1:{proxy}", namespace, queue, API_KEY)
        async with _client(url) as client, worker:
            listed = (await client.get("/v1/workflows/registrations")).json()
            assert {
                r["definition"]["execution_timeout"] for r in listed["workflow_registrations"]
            } == {3600.0}
            assert {r["deployment_name"] for r in listed["workflow_registrations"]} == {queue}
            deadline = time.monotonic() + 30
            while True:
                body = (await client.get("/v1/workflows/executions/survives")).json()
                if body["status"] != "RUNNING" or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.3)
            assert body["status"] == "COMPLETED", body
            assert body["result"] == {"result": "LATER"}
    finally:
        stop_server(proc)  # type: ignore[arg-type]


async def test_the_processes_of_serve_share_one_temporal(tmp_path: Path) -> None:
    port, proxy, queue = free_port(), free_port(), "shared"
    proc, url = _serve(tmp_path / "data", port, proxy, workers=2)
    try:
        async with _client(url) as client:
            namespace = (await client.get("/v1/workflows/workers/whoami")).json()["namespace"]
        worker = running_worker(f"127.0.0.1:{proxy}", namespace, queue, API_KEY)
        async with _client(url) as client, worker:
            await _register(client, queue)
            for n in range(4):  # over both server processes (each serves the proxy's port)
                whoami = (await client.get("/v1/workflows/workers/whoami")).json()
                assert whoami["scheduler_url"] == f"127.0.0.1:{proxy}"
                done = await client.post(
                    "/v1/workflows/echo/execute",
                    json={"input": n, "wait_for_result": True, "timeout_seconds": 20},
                )
                assert done.json()["result"] == {"result": n}, done.text
    finally:
        stop_server(proc)  # type: ignore[arg-type]


@pytest.mark.timeout(300)
async def test_two_servers_side_by_side_on_default_temporal_settings(tmp_path: Path) -> None:
    """Issue 39's acceptance: two servers on one machine with the default Temporal settings
    (embedded, on free ports), each running a workflow to completion through a worker that
    found its worker proxy with `whoami`."""
    env = {"MAESTRALE_TEMPORAL_EMBEDDED": "true"}  # start_server's default turns it off
    started = await asyncio.gather(
        *(
            asyncio.to_thread(start_server, tmp_path / name, env=env, ready_seconds=150)
            for name in "ab"
        ),
        return_exceptions=True,
    )
    servers = [s for s in started if not isinstance(s, BaseException)]
    try:
        for failed in started:
            if isinstance(failed, BaseException):
                raise failed
        async with contextlib.AsyncExitStack() as stack:
            clients, found = [], []
            for n, (_, url) in enumerate(servers):
                client = await stack.enter_async_context(_client(url))
                whoami = (await client.get("/v1/workflows/workers/whoami")).json()
                queue = f"side-{n}"
                await stack.enter_async_context(
                    running_worker(whoami["scheduler_url"], whoami["namespace"], queue, API_KEY)
                )
                await _register(client, queue)
                clients.append(client)
                found.append(whoami["scheduler_url"])
            assert found[0] != found[1] and found[0].startswith("127.0.0.1:"), found
            for n, client in enumerate(clients):
                done = await client.post(
                    "/v1/workflows/echo/execute",
                    json={"input": {"shout": f"side {n}"}, "wait_for_result": True,
                          "timeout_seconds": 20},
                )  # fmt: skip
                assert done.status_code == 200, done.text
                assert done.json()["result"] == {"result": f"SIDE {n}"}, done.text
    finally:
        for proc, _ in servers:
            stop_server(proc)
