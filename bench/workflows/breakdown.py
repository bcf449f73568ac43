"""Where the time of an execute-and-wait goes inside Maestrale, step by step: the app in process
(the ASGI app over httpx, as bench/conversations runs it), its steps timed by wrapping the
service, repository, Temporal engine and unit-of-work methods, and its SQL statements counted,
on the embedded Temporal with the benchmark's worker process.

    .venv/bin/python -m bench.workflows.breakdown [--calls 60] [--postgres URL]

Wall times (ms) per step; a step includes the steps indented under it.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import statistics
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine

from bench.gateway.processes import stop_process
from bench.gateway.targets import PostgresDatabases
from bench.workflows.servers import NAMESPACE, start_worker
from bench.workflows.worker import definitions
from maestrale.app import create_app
from maestrale.core.migrate import upgrade_async
from maestrale.core.uow import UnitOfWork
from maestrale.workflows.executions.repository import ExecutionRepository
from maestrale.workflows.executions.service import ExecutionService
from maestrale.workflows.registry.repository import RegistryRepository
from maestrale.workflows.temporal.devserver import EmbeddedTemporal
from maestrale.workflows.temporal.engine import TemporalEngine
from tests.support.app_fixtures import make_client, test_settings

# (indent, class, method) in the order the execute path runs them.
STEPS: tuple[tuple[int, type, str], ...] = (
    (0, ExecutionService, "execute"),
    (1, ExecutionService, "route"),
    (2, RegistryRepository, "workflow"),
    (2, RegistryRepository, "serving"),
    (1, ExecutionRepository, "owner_of"),  # custom execution ids only
    (1, TemporalEngine, "start"),
    (1, ExecutionRepository, "started"),
    (1, TemporalEngine, "wait_closed"),
    (1, UnitOfWork, "commit"),
)
TIMES: dict[str, list[float]] = {}
SQL: list[str] = []


def _timed(cls: type, name: str) -> None:
    original = getattr(cls, name)
    key = f"{cls.__name__}.{name}"

    @functools.wraps(original)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return await original(*args, **kwargs)
        finally:
            TIMES.setdefault(key, []).append((time.perf_counter() - started) * 1000)

    setattr(cls, name, wrapper)


def _statement(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
    words = statement.split()
    if words[0] == "SELECT" and "FROM" in words:
        SQL.append(f"SELECT ... FROM {words[words.index('FROM') + 1]}")
    else:
        SQL.append(" ".join(words[:3]))


async def measure(db_url: str, tmp: Path, calls: int, warmup: int) -> list[str]:
    temporal = EmbeddedTemporal(tmp, host="127.0.0.1", port=0, namespace=NAMESPACE)
    await temporal.start()
    queue = f"bench-noop-{uuid.uuid4().hex[:8]}"
    worker = None
    try:
        await upgrade_async(db_url)
        settings = test_settings(
            db_url,
            tmp / "data",
            temporal_address=temporal.address,
            temporal_namespace=NAMESPACE,
            gc_freeze=True,  # as `maestrale serve` runs
            strict_connections=False,
        )
        app = create_app(settings)
        async with app.router.lifespan_context(app), make_client(app) as client:
            # The worker serves the workspace's namespace, straight on Temporal.
            namespace = (await client.get("/v1/workflows/workers/whoami")).json()["namespace"]
            worker = await start_worker(temporal.address, namespace, queue, tmp / "worker.log")
            body: dict[str, Any] = {"definitions": definitions(queue), "deployment_name": queue}
            body |= {"worker_name": "bench", "deployment_location": {"location_type": "local"}}
            response = await client.post("/v1/workflows/register", json=body)
            assert response.status_code == 200, response.text
            totals = []
            for i in range(warmup + calls):
                if i == warmup:
                    TIMES.clear()
                    SQL.clear()
                started = time.perf_counter()
                response = await client.post(
                    "/v1/workflows/noop/execute",
                    json={"input": {"i": i}, "wait_for_result": True, "timeout_seconds": 30},
                )
                totals.append((time.perf_counter() - started) * 1000)
                assert response.json().get("status") == "COMPLETED", response.text
    finally:
        if worker is not None:
            stop_process(worker, "")
        await temporal.stop()
    return report(totals[warmup:], calls)


def report(totals: list[float], calls: int) -> list[str]:
    out = [f"{'step':<46} {'per call':>8} {'p50':>7} {'mean':>7} {'ms/call':>8}"]
    out.append(f"{'whole request (in-process HTTP client)':<46} {1:>8} "
               f"{statistics.median(totals):>7.2f} {statistics.mean(totals):>7.2f}")  # fmt: skip
    for indent, cls, name in STEPS:
        times = TIMES.get(f"{cls.__name__}.{name}", [])
        if not times:
            continue
        label = "  " * (indent + 1) + f"{cls.__name__}.{name}"
        out.append(
            f"{label:<46} {len(times) / calls:>8.1f} {statistics.median(times):>7.2f} "
            f"{statistics.mean(times):>7.2f} {sum(times) / calls:>8.2f}"
        )
    temporal = sum(sum(TIMES.get(f"TemporalEngine.{n}", [])) for n in ("start", "wait_closed"))
    outside = statistics.mean(totals) - temporal / calls
    out.append(f"mean time outside Temporal's start + wait: {outside:.2f} ms (Maestrale + httpx)")
    out.append(f"SQL statements per call: {len(SQL) / calls:.1f}")
    for statement, n in Counter(SQL).most_common():
        out.append(f"  {n / calls:5.2f}  {statement}")
    return out


async def main_async(args: argparse.Namespace) -> None:
    event.listen(Engine, "before_cursor_execute", _statement)
    for _, cls, name in STEPS:
        _timed(cls, name)
    backends = [("sqlite", None)] + ([("postgres", args.postgres)] if args.postgres else [])
    for label, admin_url in backends:
        with tempfile.TemporaryDirectory(prefix="maestrale-wfbreak-") as tmp:
            databases = PostgresDatabases(admin_url) if admin_url else None
            try:
                if databases is not None:
                    url = await asyncio.to_thread(databases.create)
                else:
                    url = f"sqlite+aiosqlite:///{tmp}/maestrale.db"
                lines = await measure(url, Path(tmp), args.calls, args.warmup)
            finally:
                if databases is not None:
                    await asyncio.to_thread(databases.drop_all)
        print(f"== {label}: execute-and-wait of the no-op workflow, {args.calls} calls ==")
        print("\n".join(lines))
        print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--postgres", metavar="URL", help="also on Postgres (a scratch database)")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
