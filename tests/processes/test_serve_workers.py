"""`maestrale serve --workers 2` as a user runs it: two server processes on one port, a key
revoked with the CLI refused by both at once, a dead process replaced, and SIGTERM stopping
everything."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.support.app_fixtures import ADMIN_KEY, API_KEY
from tests.support.live import start_server, stop_server


def _servers(supervisor: int) -> list[int]:
    """The server processes the supervisor spawned."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == supervisor and b"spawn_main" in cmdline:
            found.append(int(entry.name))
    return sorted(found)


def _until(condition: object, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.1)
    raise AssertionError("timed out")


def _statuses(url: str, key: str, count: int = 16) -> list[int]:
    """`count` requests, each on a new connection (so that both processes get some)."""
    statuses = []
    for _ in range(count):
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}) as client:
            statuses.append(client.get("/v1/models").status_code)
    return statuses


@pytest.mark.ci_tier
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_two_processes_serve_share_revocations_and_stop_together(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {"MAESTRALE_WORKERS": "2", "MAESTRALE_AUTH_CACHE_TTL": "60"}
    proc, url = start_server(data, env=env)
    try:
        _until(lambda: len(_servers(proc.pid)) == 2)
        assert _statuses(url, API_KEY) == [200] * 16
        admin = httpx.Client(base_url=url, headers={"x-api-key": ADMIN_KEY})
        with admin:
            users = admin.get("/v1/admin/users").json()["members"]
            owner = next(u["uuid"] for u in users if u["email"] == "owner@localhost")
            spaces = admin.get("/v1/admin/workspaces").json()["items"]
            default = next(w["uuid"] for w in spaces if w["is_default"])
            created = admin.post(
                "/v1/admin/api-keys", json={"user_id": owner, "workspace_uuid": default}
            ).json()
        assert _statuses(url, created["key"]) == [200] * 16  # cached by the processes
        command = ["keys", "revoke", created["key_id"], "--data-dir", str(data)]
        revoked = subprocess.run(
            [sys.executable, "-m", "maestrale", *command],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert revoked.returncode == 0, revoked.stderr
        assert _statuses(url, created["key"]) == [401] * 16  # at once, in both processes

        # the job worker runs in one process only
        first, second = _servers(proc.pid)
        log_path = tmp_path / f"server-{url.rsplit(':', 1)[1]}.log"
        workers = re.findall(r"worker \S+?:(\d+):\S+ started", log_path.read_text())
        assert len(workers) == 1 and int(workers[0]) in (first, second)

        # a server process that dies is replaced; the others go on serving meanwhile
        os.kill(first, signal.SIGKILL)
        assert _statuses(url, API_KEY, 4) == [200] * 4
        _until(lambda: len(_servers(proc.pid)) == 2 and first not in _servers(proc.pid))
        _until(lambda: _statuses(url, API_KEY, 8) == [200] * 8)

        servers = _servers(proc.pid)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        assert not any(Path(f"/proc/{pid}").exists() for pid in servers)
        assert not (data / "hub.sock").exists()
    finally:
        if proc.poll() is None:
            stop_server(proc)


def test_a_port_in_use_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        command = ["serve", "--workers", "2", "--port", str(port)]
        ran = subprocess.run(
            [sys.executable, "-m", "maestrale", *command, "--data-dir", str(tmp_path / "data")],
            env={**os.environ, "MAESTRALE_LOG_JSON": "false"},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert ran.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in ran.stderr
    assert "Traceback" not in ran.stderr
