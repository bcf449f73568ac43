"""The targets of the gateway benchmark: the stub upstream (and the stub called directly), Maestrale
on SQLite or Postgres with one or more server processes, LiteLLM's proxy with one or more workers.

Targets are launched together and then waited for (start-ups overlap); a target that does not
start or does not answer a chat completion for `stub-model` is skipped with its reason.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench.gateway.processes import BenchError, Processes, affinity, free_port, wait_http

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
LITELLM_VENV = HERE / ".venv-litellm"
LITELLM_MASTER_KEY = "sk-bench-litellm-master-key"
MAESTRALE_KEY = "msk_bench_gateway_key_0123456789abcdefghijklmnopqrs"  # bootstrap API key
MODEL = "stub-model"
BODY = json.dumps(
    {
        "model": MODEL,
        "messages": [{"role": "user", "content": "Hello"}],
        "max_tokens": 16,
    },
    separators=(",", ":"),
)
EXPECTED_CONTENT = "Hello from the stub."  # what stub_upstream answers
OVERHEAD_HEADERS = ("x-maestrale-overhead-ms", "x-litellm-overhead-duration-ms")
DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"


@dataclass(frozen=True)
class Spec:
    """What to start: `kind` direct | maestrale | litellm; `backend` sqlite | postgres (Maestrale);
    `workers` server processes; `src` another source tree of Maestrale (a baseline); `traced`:
    Maestrale with OpenTelemetry tracing on, exporting to the stub (its OTLP endpoint)."""

    name: str
    kind: str
    backend: str = ""
    workers: int = 1
    src: Path | None = None
    traced: bool = False

    @property
    def pinned(self) -> bool:
        # One process gets one core; more processes need every core (no pinning).
        return self.workers == 1


def specs(compare_src: Path | None) -> list[Spec]:
    """Every target of a full run, in the order of the table."""
    out = [
        Spec("direct", "direct"),
        Spec("maestrale-sqlite", "maestrale", "sqlite"),
        Spec("maestrale-sqlite-x2", "maestrale", "sqlite", 2),
        Spec("maestrale-pg", "maestrale", "postgres"),
        Spec("maestrale-pg-x2", "maestrale", "postgres", 2),
    ]
    out += [
        Spec("otel-sqlite", "maestrale", "sqlite", traced=True),
        Spec("otel-pg", "maestrale", "postgres", traced=True),
    ]
    if compare_src is not None:
        out += [
            Spec("base-sqlite", "maestrale", "sqlite", src=compare_src),
            Spec("base-pg", "maestrale", "postgres", src=compare_src),
        ]
    return [*out, Spec("litellm", "litellm"), Spec("litellm-x2", "litellm", workers=2)]


@dataclass
class Target:
    name: str
    url: str  # the chat completions URL
    headers: dict[str, str]
    proc: subprocess.Popen[bytes]
    spec: Spec
    version: str = ""


@dataclass
class Pending:
    """A target launched, not known to be ready yet."""

    target: Target
    health_url: str
    log: Path
    timeout: float
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- the stub


def start_stub(tmp: Path, procs: Processes) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    log = tmp / "stub.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bench.gateway.stub_upstream", "--port", str(port)],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    procs.add(proc, "plain")
    wait_http(f"http://127.0.0.1:{port}/health", proc, "stub upstream", log, 30)
    return proc, port


def direct_target(stub: subprocess.Popen[bytes], stub_port: int) -> Target:
    """The stub itself: the baseline of the added latency."""
    url = f"http://127.0.0.1:{stub_port}/v1/chat/completions"
    return Target("direct", url, {}, stub, Spec("direct", "direct"))


# --------------------------------------------------------------------------- Maestrale


def _maestrale_env(src: Path | None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("MAESTRALE_")  # the bench decides the server's settings
    }
    env.update(
        {
            "MAESTRALE_LOG_LEVEL": "WARNING",
            "MAESTRALE_BOOTSTRAP_API_KEY": MAESTRALE_KEY,
            "PYTHONUNBUFFERED": "1",
        }
    )
    if src is not None:  # another checkout's server code, e.g. to compare two versions
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(src.resolve()), env.get("PYTHONPATH", "")) if p
        )
    return env


def maestrale_has_workers(src: Path | None) -> bool:
    """Whether this Maestrale's `serve` takes `--workers`."""
    result = subprocess.run(
        [sys.executable, "-m", "maestrale", "serve", "--help"],
        env=_maestrale_env(src),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return "--workers" in result.stdout


def migrate_maestrale(spec: Spec, tmp: Path, database_url: str | None) -> subprocess.Popen[bytes]:
    """`maestrale migrate` of the target's database, before its server starts: the server then
    starts at the schema's head, as every start but the first does (a first start migrates in
    the serving process, which then also holds Alembic's ~10 MB)."""
    home = tmp / spec.name
    (home / "data").mkdir(parents=True)
    cmd = [sys.executable, "-m", "maestrale", "migrate", "--data-dir", str(home / "data")]
    if database_url:
        cmd += ["--database-url", database_url]
    with open(home / "migrate.log", "wb") as out:
        return subprocess.Popen(
            cmd, env=_maestrale_env(spec.src), stdout=out, stderr=subprocess.STDOUT
        )


def _start_group(
    cmd: list[str], env: dict[str, str], cpus: set[int] | None, log: Path, procs: Processes
) -> subprocess.Popen[bytes]:
    """A gateway in a session of its own, so that its worker processes are stopped with it."""
    with affinity(cpus), open(log, "wb") as out:
        proc = subprocess.Popen(
            cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    procs.add(proc, "group")
    return proc


def launch_maestrale(
    spec: Spec,
    tmp: Path,
    stub_port: int,
    procs: Processes,
    cpus: set[int] | None,
    database_url: str | None,
    has_workers: bool,
) -> Pending:
    """`maestrale serve --no-worker` with `stub-model` on the openai_compat engine (started as
    tests/support/live.py does, without importing the server into this process), on the data
    directory `migrate_maestrale` prepared."""
    home = tmp / spec.name
    catalog = home / "models.toml"
    data = home / "data"
    catalog.write_text(
        "[[models]]\n"
        f'id = "{MODEL}"\n'
        'engine = "openai_compat"\n'
        f'base_url = "http://127.0.0.1:{stub_port}/v1"\n'
        'upstream_model = "stub"\n'
        'capabilities = ["completion_chat"]\n'
    )
    port = free_port()
    log = home / "maestrale.log"
    cmd = [sys.executable, "-m", "maestrale", "serve", "--port", str(port)]
    cmd += ["--data-dir", str(data), "--no-worker", "--models", str(catalog)]
    if database_url:
        cmd += ["--database-url", database_url]
    if has_workers:
        cmd += ["--workers", str(spec.workers)]
    env = _maestrale_env(spec.src)
    if spec.traced:  # every span exported (OTLP/HTTP, batched) to the stub
        env["MAESTRALE_OTLP_ENDPOINT"] = f"http://127.0.0.1:{stub_port}"
    proc = _start_group(cmd, env, cpus, log, procs)
    target = Target(
        spec.name,
        f"http://127.0.0.1:{port}/v1/chat/completions",
        {"Authorization": f"Bearer {MAESTRALE_KEY}"},
        proc,
        spec,
    )
    return Pending(target, f"http://127.0.0.1:{port}/health", log, 90)


class PostgresDatabases:
    """A fresh database per Postgres target on the server of `admin_url`, dropped at the end."""

    def __init__(self, admin_url: str) -> None:
        self.admin_dsn = admin_url.replace("postgresql+asyncpg://", "postgresql://", 1)
        self.created: list[str] = []

    async def _run(self, sql: str) -> None:
        import asyncpg

        conn = await asyncpg.connect(self.admin_dsn, timeout=10)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    def create(self) -> str:
        """A new empty database (Maestrale migrates it at start): its SQLAlchemy URL."""
        name = f"maestrale_gwbench_{uuid.uuid4().hex[:10]}"
        try:
            asyncio.run(self._run(f'CREATE DATABASE "{name}"'))
        except Exception as exc:
            raise BenchError(f"Postgres at {self._where()} unusable: {exc}") from exc
        self.created.append(name)
        base = self.admin_dsn.rsplit("/", 1)[0]
        return f"{base.replace('postgresql://', 'postgresql+asyncpg://', 1)}/{name}"

    def drop_all(self) -> None:
        for name in self.created:
            try:
                asyncio.run(self._run(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            except Exception as exc:
                print(f"could not drop the database {name}: {exc}", file=sys.stderr)
        self.created.clear()

    def _where(self) -> str:
        return self.admin_dsn.split("@")[-1]


# --------------------------------------------------------------------------- LiteLLM


def ensure_litellm_venv() -> Path:
    """LiteLLM's own venv (created once, outside the benchmark's time budget)."""
    litellm = LITELLM_VENV / "bin" / "litellm"
    if litellm.exists():
        return litellm
    print(f"creating {LITELLM_VENV} and installing 'litellm[proxy]' (first run only) ...")
    python3 = shutil.which("python3") or sys.executable
    subprocess.run([python3, "-m", "venv", str(LITELLM_VENV)], check=True)
    pip = LITELLM_VENV / "bin" / "pip"
    result = subprocess.run(
        [str(pip), "install", "--quiet", "litellm[proxy]"], timeout=1800, check=False
    )
    if result.returncode != 0 or not litellm.exists():
        raise BenchError(
            f"could not install litellm[proxy] into {LITELLM_VENV} (pip exit {result.returncode})"
        )
    return litellm


def litellm_config(stub_port: int) -> str:
    """One model routed to the stub, a master key, no database, minimal logging."""
    return (
        "model_list:\n"
        f"  - model_name: {MODEL}\n"
        "    litellm_params:\n"
        "      model: openai/stub\n"
        f"      api_base: http://127.0.0.1:{stub_port}/v1\n"
        "      api_key: sk-stub-upstream\n"
        "litellm_settings:\n"
        "  set_verbose: false\n"
        "  json_logs: false\n"
        "general_settings:\n"
        f"  master_key: {LITELLM_MASTER_KEY}\n"
    )


def launch_litellm(
    spec: Spec, tmp: Path, stub_port: int, procs: Processes, cpus: set[int] | None
) -> Pending:
    litellm = ensure_litellm_venv()
    home = tmp / spec.name
    home.mkdir(parents=True)
    config = home / "litellm_config.yaml"
    config.write_text(litellm_config(stub_port))
    port = free_port()
    log = home / "litellm.log"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DATABASE_URL", "REDIS_", "LITELLM_", "OPENAI_"))
    }
    env.update(
        {
            # no internet: the bundled model price map, no telemetry, no update checks
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "LITELLM_TELEMETRY_DISABLED": "true",
            "LITELLM_LOG": "ERROR",
            "PYTHONUNBUFFERED": "1",
        }
    )
    cmd = [str(litellm), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--num_workers", str(spec.workers)]
    proc = _start_group(cmd, env, cpus, log, procs)
    target = Target(
        spec.name,
        f"http://127.0.0.1:{port}/v1/chat/completions",
        {"Authorization": f"Bearer {LITELLM_MASTER_KEY}"},
        proc,
        spec,
        version=litellm_version(),
    )
    return Pending(target, f"http://127.0.0.1:{port}/health/liveliness", log, 180)


def litellm_version() -> str:
    return subprocess.run(
        [
            str(LITELLM_VENV / "bin" / "python"),
            "-c",
            "import importlib.metadata as m; print(m.version('litellm'))",
        ],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()


# --------------------------------------------------------------------------- readiness


def wait_ready(pending: Pending) -> Target:
    target = pending.target
    wait_http(pending.health_url, target.proc, target.name, pending.log, pending.timeout)
    check_target(target)
    return target


def check_target(target: Target) -> None:
    """One real request: the target must answer the stub's completion, or it is not measured."""
    last = ""
    for _ in range(3):
        try:
            resp = httpx.post(
                target.url,
                content=BODY,
                headers={**target.headers, "Content-Type": "application/json"},
                timeout=30,
            )
        except httpx.HTTPError as exc:
            last = repr(exc)
            time.sleep(1)
            continue
        if resp.status_code == 200:
            try:
                content = resp.json()["choices"][0]["message"]["content"]
            except (ValueError, KeyError, IndexError, TypeError):
                content = None
            if content == EXPECTED_CONTENT:
                return
        last = f"HTTP {resp.status_code}: {resp.text[:500]}"
        time.sleep(1)
    raise BenchError(f"{target.name} does not answer a chat completion for {MODEL}: {last}")
