"""What a serving process says about its Temporal: the worker proxy's port (a free one by
default, which `workers/whoami` hands out and the next start on the data dir keeps; reserved
once for the processes of `serve --workers`), and the reason in the 503 of the workflows routes
and in the log when workflows are off or workers cannot reach Temporal."""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from maestrale.app import create_app
from maestrale.config import Settings
from maestrale.processes.supervisor import Supervisor
from maestrale.workflows.temporal.devserver import find_binary
from tests.support.app_fixtures import make_client
from tests.support.app_fixtures import test_settings as settings_of

WHOAMI = "/v1/workflows/workers/whoami"


@asynccontextmanager
async def served(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings)
    async with app.router.lifespan_context(app), make_client(app) as client:
        yield client


def listener(port: int = 0, *, reuseport: bool = False) -> socket.socket:
    sock = socket.socket()
    if reuseport:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen()
    return sock


@pytest.mark.skipif(find_binary() is None, reason="the [workflows] extra is missing")
async def test_a_failed_embedded_temporal_is_the_503s_reason_and_logged_with_the_fix(
    database_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with listener() as busy:  # the embedded Temporal's fixed port, held by another program
        port = busy.getsockname()[1]
        settings = settings_of(
            database_url, tmp_path / "data", temporal_embedded=True, temporal_embedded_port=port
        )
        with caplog.at_level(logging.ERROR, "maestrale.workflows.temporal"):
            async with served(settings) as client:
                response = await client.get(WHOAMI)
    assert response.status_code == 503
    body = response.json()
    reason = f"the embedded Temporal failed to start: port {port} on 127.0.0.1 is busy"
    assert body["detail"].startswith(f"workflows are off: {reason}"), body
    assert "MAESTRALE_TEMPORAL_EMBEDDED_PORT" in body["detail"], body
    assert body["detail"].endswith("; see the server log") and body["code"] == "WF_1103"
    (record,) = [r for r in caplog.records if r.name == "maestrale.workflows.temporal"]
    assert record.levelno == logging.ERROR
    assert reason in record.getMessage() and "MAESTRALE_TEMPORAL_ADDRESS" in record.getMessage()


async def test_the_worker_proxy_takes_a_free_port_which_whoami_hands_out_and_a_restart_keeps(
    database_url: str, tmp_path: Path, temporal_address: str
) -> None:
    settings = settings_of(database_url, tmp_path / "data", temporal_address=temporal_address)
    assert settings.temporal_proxy_port == 0  # the default
    async with served(settings) as client:
        host, port = (await client.get(WHOAMI)).json()["scheduler_url"].rsplit(":", 1)
        assert host == "127.0.0.1"
        socket.create_connection((host, int(port)), timeout=5).close()  # the proxy listens

    # Restarted on the same data dir: the same port (workers dial it again); a public address
    # without a port gets it.
    again = settings.model_copy(update={"temporal_public_address": "workers.example"})
    async with served(again) as client:
        assert (await client.get(WHOAMI)).json()["scheduler_url"] == f"workers.example:{port}"

    with listener(int(port)):  # taken meanwhile by another program: another free port
        async with served(settings) as client:
            other = (await client.get(WHOAMI)).json()["scheduler_url"]
    assert other.startswith("127.0.0.1:") and other != f"127.0.0.1:{port}"


async def test_a_fixed_proxy_port_another_program_holds_is_the_whoami_503s_reason(
    database_url: str, tmp_path: Path
) -> None:
    with listener(reuseport=True) as busy:  # not shared with it, SO_REUSEPORT or not
        port = busy.getsockname()[1]
        settings = settings_of(
            database_url,
            tmp_path / "data",
            # Connected lazily: whoami answers before it calls Temporal.
            temporal_address="127.0.0.1:1",
            temporal_proxy_port=port,
        )
        async with served(settings) as client:
            response = await client.get(WHOAMI)
    assert response.status_code == 503
    assert response.json()["detail"] == (
        f"workers cannot reach Temporal: the worker proxy cannot listen on 127.0.0.1:{port}"
        " (the port is busy, or the host not this machine's); see the server log"
    )


async def test_serve_workers_reserves_one_proxy_port_for_its_processes(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, temporal_address="127.0.0.1:1")
    supervisor = Supervisor(settings, 2)
    async with contextlib.AsyncExitStack() as stack:
        with listener(reuseport=True) as foreign:  # the port it had last time, now another's
            taken = foreign.getsockname()[1]
            (tmp_path / "worker-proxy.port").write_text(str(taken))
            await supervisor._start_temporal(stack)
        port = supervisor._child_settings(0).temporal_proxy_port
        assert supervisor._child_settings(1).temporal_proxy_port == port
        assert port not in (0, taken)
        assert (tmp_path / "worker-proxy.port").read_text().strip() == str(port)
        with pytest.raises(OSError, match="in use"), socket.socket() as other:  # held
            other.bind(("127.0.0.1", port))
        # The processes (gRPC with SO_REUSEPORT) listen on it, and connections reach them.
        with listener(port, reuseport=True), listener(port, reuseport=True):
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
    with socket.socket() as again:  # released with the supervisor
        again.bind(("127.0.0.1", port))
