"""Observability at scale: 1M chat completion events, measured through a live `maestrale serve`.

Generates the events once (bench/observability/generate.py; kept in --dir for later runs), then
times over HTTP: a filtered search (model eq + created_at range + nb_input_tokens gt, first page
of 50 and later pages through the cursor), an extra_fields search, a search-ids of ~100,000 ids
(with the server's peak RSS growth while it streams), the field list, field options and option
counts. Prints p50/p95 per query. Targets at 1M: filtered search p50 ≤ 50 ms on Postgres,
≤ 200 ms on SQLite; search-ids memory bounded.

    .venv/bin/python -m bench.observability.run --backend sqlite [--events 1000000]
    .venv/bin/python -m bench.observability.run --backend postgres \
        [--pg postgresql+asyncpg://postgres@127.0.0.1:5432/maestrale_bench_obs]
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import statistics
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from bench.observability.generate import generate, pg_dsn
from tests.support.app_fixtures import API_KEY
from tests.support.live import start_server, stop_server

BASE = "/v1/observability"


def status_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field}")


def reset_peak(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")


async def _pg(url: str, sql: str, *args: Any) -> list[Any]:
    import asyncpg

    conn = await asyncpg.connect(pg_dsn(url))
    try:
        return list(await conn.fetch(sql, *args))
    finally:
        await conn.close()


async def ensure_pg_database(url: str) -> None:
    base, name = url.rsplit("/", 1)
    rows = await _pg(f"{base}/postgres", "SELECT 1 FROM pg_database WHERE datname = $1", name)
    if not rows:
        await _pg(f"{base}/postgres", f'CREATE DATABASE "{name}"')


def query(url: str, sql: str) -> list[Any]:
    if url.startswith("sqlite"):
        conn = sqlite3.connect(url.split(":///", 1)[1])
        try:
            return conn.execute(sql).fetchall()
        finally:
            conn.close()
    return [tuple(r) for r in asyncio.run(_pg(url, sql))]


def timed(
    label: str, runs: int, call: Callable[[], httpx.Response], *, ok: tuple[int, ...] = (200,)
) -> httpx.Response:
    call()  # warm-up (plan caches, pages in memory)
    times = []
    resp = None
    for _ in range(runs):
        started = time.perf_counter()
        resp = call()
        times.append((time.perf_counter() - started) * 1000)
        assert resp.status_code in ok, resp.text
    times.sort()
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    assert resp is not None
    status = "" if resp.status_code == 200 else f"   ({resp.status_code})"
    print(f"  {label:<58} p50 {statistics.median(times):8.1f} ms   p95 {p95:8.1f} ms{status}")
    return resp


def found(resp: httpx.Response) -> str:
    if resp.status_code != 200:
        return str(resp.json()["detail"]["error_code"])
    return f"{len(resp.json()['completion_events']['results'])} on the page"


def measure_text(http: httpx.Client, runs: int) -> None:
    """Search over what was said: request_text / response_text, from the full-text index."""
    now = datetime.now(UTC)

    def search(filters: Any, cursor: str | None = None) -> httpx.Response:
        params: dict[str, Any] = {"page_size": 50}
        if cursor:
            params["cursor"] = cursor
        return http.post(
            f"{BASE}/chat-completion-events/search",
            params=params,
            json={"search_params": {"filters": filters}},
        )

    medium = cond("request_text", "icontains", "doradoflex")  # one product: ~0.3% of events
    recent = cond("created_at", "gte", (now - timedelta(days=7)).isoformat())
    second_line = "you are a helpful assistant.\nwrite a python"
    cases: list[tuple[str, Any]] = [
        (
            "text: request icontains common word (~30%)",
            cond("request_text", "icontains", "translate"),
        ),
        (
            "text: response contains common phrase (~12%)",
            cond("response_text", "contains", "short summary"),
        ),
        ("text: request icontains product (~0.3%)", medium),
        (
            "text: request contains rare reference (~1 event in 1M)",
            cond("request_text", "contains", "Ref T-12345"),
        ),
        ("text: request contains absent text", cond("request_text", "contains", "zebra crossing")),
        (
            "text: request inotcontains common word",
            cond("request_text", "inotcontains", "translate"),
        ),
        (
            "text: request istartswith system + user line",
            cond("request_text", "istartswith", second_line),
        ),
        (
            "text: product + model eq + last 7 days",
            {"AND": [medium, cond("model", "eq", "mistral-medium-latest"), recent]},
        ),
        (
            "text: request contains 2 characters (no trigram)",
            cond("request_text", "contains", "Zz"),
        ),
        ("text: request matches regex", cond("request_text", "matches", "Ref T-12345[0-9]")),
    ]
    for label, filters in cases:

        def call(f: Any = filters) -> httpx.Response:
            return search(f)

        resp = timed(label, runs, call, ok=(200, 408))
        print(f"    {found(resp)}")
    first = search(medium).json()["completion_events"]["cursor"]
    timed("text: product, page 2 via cursor", runs, lambda: search(medium, first))

    def ids() -> httpx.Response:
        return http.post(
            f"{BASE}/chat-completion-events/search-ids", json={"search_params": {"filters": medium}}
        )

    resp = timed("search-ids: request icontains product", max(3, runs // 3), ids)
    print(f"    {len(resp.json()['completion_event_ids'])} ids")


def cond(field: str, op: str, value: Any) -> dict[str, Any]:
    return {"field": field, "op": op, "value": value}


def measure(url: str, pid: int, runs: int) -> None:
    now = datetime.now(UTC)
    iso = lambda d: d.isoformat()  # noqa: E731
    filtered = {
        "AND": [
            cond("model", "eq", "mistral-medium-latest"),
            cond("created_at", "gte", iso(now - timedelta(days=7))),
            cond("created_at", "lt", iso(now - timedelta(days=1))),
            cond("nb_input_tokens", "gt", 300),
        ]
    }
    errors = {
        "AND": [
            cond("status_code", "includes", [500, 503]),
            cond("created_at", "gte", iso(now - timedelta(days=3))),
        ]
    }
    extra = {"AND": [cond("extra_fields.team", "eq", "red"), cond("nb_output_tokens", "gt", 100)]}
    with httpx.Client(
        base_url=url, headers={"Authorization": f"Bearer {API_KEY}"}, timeout=600
    ) as http:
        measure_text(http, runs)

        def search(filters: Any, cursor: str | None = None) -> httpx.Response:
            params: dict[str, Any] = {"page_size": 50}
            if cursor:
                params["cursor"] = cursor
            return http.post(
                f"{BASE}/chat-completion-events/search",
                params=params,
                json={"search_params": {"filters": filters}},
            )

        first = timed(
            "search: model+created_at range+tokens gt, page 1", runs, lambda: search(filtered)
        )
        cursor = first.json()["completion_events"]["cursor"]
        assert cursor and len(first.json()["completion_events"]["results"]) == 50
        timed("search: same, page 2 via cursor", runs, lambda: search(filtered, cursor))
        deep = cursor
        for _ in range(20):
            deep = search(filtered, deep).json()["completion_events"]["cursor"]
        timed("search: same, page 22 via cursor", runs, lambda: search(filtered, deep))
        timed("search: no filter, page 1", runs, lambda: search(None))
        timed("search: status_code includes [500,503] + last 3 days", runs, lambda: search(errors))
        timed("search: extra_fields.team eq + nb_output_tokens gt", runs, lambda: search(extra))

        # search-ids: a created_at window holding ~100,000 of the workspace's events.
        window = {"AND": [cond("created_at", "gte", iso(now - timedelta(days=5)))]}

        def ids() -> httpx.Response:
            return http.post(
                f"{BASE}/chat-completion-events/search-ids",
                json={"search_params": {"filters": window}},
            )

        rss_before = status_mb(pid, "VmRSS")
        reset_peak(pid)
        resp = timed("search-ids: created_at in the last 5 days", max(3, runs // 6), ids)
        peak = status_mb(pid, "VmHWM")
        count = len(resp.json()["completion_event_ids"])
        print(
            f"    {count} ids, {len(resp.content) / 1e6:.1f} MB body; server RSS "
            f"{rss_before:.0f} MB before, peak {peak:.0f} MB (+{peak - rss_before:.0f} MB)"
        )

        def get(path: str, **params: Any) -> Callable[[], httpx.Response]:
            return lambda: http.get(path, params=params)

        timed("fields: definitions and groups", runs, get(f"{BASE}/chat-completion-fields"))
        for field in ("model", "source", "extra_fields.team", "extra_fields.customer_id"):
            timed(
                f"options: {field} eq",
                runs,
                get(f"{BASE}/chat-completion-fields/{field}/options", operator="eq"),
            )
        for field, filters in (
            ("model", None),
            ("model", {"AND": [cond("created_at", "gte", iso(now - timedelta(days=1)))]}),
            ("extra_fields.team", None),
            ("extra_fields.team", {"AND": [cond("model", "eq", "codestral-latest")]}),
        ):
            label = f"option counts: {field}" + (" (filtered)" if filters else "")

            def counts(f: str = field, p: Any = filters) -> httpx.Response:
                return http.post(
                    f"{BASE}/chat-completion-fields/{f}/options-counts",
                    json={"filter_params": {"filters": p}},
                )

            timed(label, max(3, runs // 3), counts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backend", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--generate-only", action="store_true", help="fill the database, no timing")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/maestrale-bench-observability"))
    parser.add_argument(
        "--pg", default="postgresql+asyncpg://postgres@127.0.0.1:5432/maestrale_bench_obs"
    )
    args = parser.parse_args()
    data_dir = args.dir / args.backend / "data"
    data_dir.mkdir(parents=True, exist_ok=True)
    if args.backend == "sqlite":
        url = f"sqlite+aiosqlite:///{data_dir.parent / 'events.db'}"
    else:
        url = args.pg
        asyncio.run(ensure_pg_database(url))
    proc, base = start_server(data_dir, env={"MAESTRALE_DATABASE_URL": url})  # migrates
    try:
        true = "1" if url.startswith("sqlite") else "true"
        org, ws = query(
            url, f"SELECT organization_id, id FROM workspaces WHERE is_default = {true} LIMIT 1"
        )[0]
        have = query(url, f"SELECT count(*) FROM chat_completion_events WHERE workspace_id='{ws}'")
        total = query(url, "SELECT count(*) FROM chat_completion_events")[0][0]
        if total < args.events:
            n = args.events - total
            others = [(str(uuid.uuid4()), str(uuid.uuid4())) for _ in range(4)]
            print(f"generating {n} events on {args.backend} ...", flush=True)
            seconds = generate(url, n, [(org, ws), *others], 0.6)
            print(f"generated {n} events in {seconds:.0f}s ({n / seconds:.0f}/s)")
            have = query(
                url, f"SELECT count(*) FROM chat_completion_events WHERE workspace_id='{ws}'"
            )
            total = query(url, "SELECT count(*) FROM chat_completion_events")[0][0]
        print(f"{args.backend}: {total} events, {have[0][0]} in the benchmark workspace")
        if not args.generate_only:
            measure(base, proc.pid, args.runs)
    finally:
        stop_server(proc)


if __name__ == "__main__":
    main()
