"""What Maestrale adds to a conversation append over the model call, with 1,000 entries of
history (target p50 ≤ 5 ms), and the time to read a 10,000-entry history (target ≤ 50 ms), on
SQLite and on Postgres.

    .venv/bin/python -m bench.conversations.run [--backend sqlite|postgres|both] [--appends 100]
        [--reads 20] [--history 1000] [--agent]

Postgres runs in a fresh database made next to MAESTRALE_TEST_POSTGRES_URL (as the tests do) and
dropped at the end; `both` (the default when that variable is set) runs SQLite then Postgres.

In process (the ASGI app over httpx, no network), on the builtin engine. The engine's own time is
measured by wrapping its `chat`, so the overhead of an append is its latency minus that: the HTTP
layer, authentication, the conversation's reads and writes, the gateway (validation, limits,
accounting) and the response — everything but the model. Each append adds two entries, so the
appends run on 1,000 to 1,000 + 2 * appends entries. The overhead is also given in CPU time of
this process (the engine's CPU time taken out): steadier than the latency on a loaded machine,
but it leaves out the Postgres server's work and counts the background accounting writes that
fall within an append. `--history 30` gives the part of the overhead that does not depend on
the history.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from maestrale.app import create_app
from maestrale.conversations.entries import entry, message_output
from maestrale.conversations.repository import ConversationRepository
from maestrale.conversations.tables import Conversation
from maestrale.core.migrate import upgrade_async
from tests.support.app_fixtures import default_tenant, make_client, test_settings
from tests.support.databases import (
    POSTGRES_ENV,
    create_postgres_database,
    drop_postgres_database,
)

WARM_UP = 10


def p50_p95(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"p50 {statistics.median(ordered):6.2f} ms  p95 {p95:6.2f} ms"


async def fill(app: Any, conversation_id: str, count: int) -> None:
    """Add `count` entries (user / assistant pairs) straight to the database."""
    tenant = await default_tenant(app.state.services.db)
    async with app.state.services.db.transaction() as work:
        repo = ConversationRepository(work.session, tenant)
        row = await repo.get(conversation_id)
        assert isinstance(row, Conversation)
        bodies = []
        for i in range(count // 2):
            bodies.append(entry("message.input", role="user", content=f"question {i}"))
            bodies.append(message_output(f"echo: question {i}", None, "maestrale-echo"))
        await repo.add_entries(row.id, row.entry_count, bodies)


async def run(
    label: str, database_url: str, appends: int, reads: int, history: int, on_agent: bool
) -> None:
    await upgrade_async(database_url)
    with tempfile.TemporaryDirectory() as tmp:
        # As `maestrale serve` runs (the tests turn the collector settings off).
        app = create_app(test_settings(database_url, Path(tmp) / "data", gc_freeze=True))
        async with app.router.lifespan_context(app), make_client(app) as client:
            engine = app.state.services.engines.resolve("maestrale-echo").engine
            engine_seconds: list[float] = []
            engine_cpu: list[float] = []
            chat = engine.chat

            async def timed_chat(request: Any) -> Any:
                started, cpu = time.perf_counter(), time.process_time()
                try:
                    return await chat(request)
                finally:
                    engine_seconds.append(time.perf_counter() - started)
                    engine_cpu.append(time.process_time() - cpu)

            engine.chat = timed_chat
            target: dict[str, Any] = {"model": "maestrale-echo"}
            if on_agent:
                agent = await client.post(
                    "/v1/agents",
                    json={"model": "maestrale-echo", "name": "bench", "instructions": "Be brief."},
                )
                target = {"agent_id": agent.json()["id"]}
            start = await client.post("/v1/conversations", json={**target, "inputs": "hello"})
            conversation_id = start.json()["conversation_id"]
            # `history` entries (1,000) before the first measured append.
            await fill(app, conversation_id, history - 2 - 2 * WARM_UP)
            url = f"/v1/conversations/{conversation_id}"
            overheads, totals, engine_ms, cpu_overheads = [], [], [], []
            for i in range(appends + WARM_UP):
                engine_seconds.clear()
                engine_cpu.clear()
                started, cpu = time.perf_counter(), time.process_time()
                response = await client.post(url, json={"inputs": f"append {i}"})
                total, total_cpu = time.perf_counter() - started, time.process_time() - cpu
                assert response.status_code == 200, response.text
                if i >= WARM_UP:
                    totals.append(total * 1000)
                    engine_ms.append(sum(engine_seconds) * 1000)
                    overheads.append((total - sum(engine_seconds)) * 1000)
                    cpu_overheads.append((total_cpu - sum(engine_cpu)) * 1000)
            on = "an agent" if on_agent else "a model"
            print(
                f"[{label}] append to a conversation on {on}, {history:,} to "
                f"{history + 2 * appends:,} entries of history:"
            )
            print(f"  overhead over the model call   {p50_p95(overheads)}   (target p50 ≤ 5 ms)")
            print(f"  the same in CPU time           {p50_p95(cpu_overheads)}")
            print(f"  total latency                  {p50_p95(totals)}")
            print(f"  the model call (builtin)       {p50_p95(engine_ms)}")

            big = await client.post(
                "/v1/conversations", json={"model": "maestrale-echo", "inputs": "big"}
            )
            big_id = big.json()["conversation_id"]
            await fill(app, big_id, 9998)
            times = []
            for i in range(reads + 1):
                started = time.perf_counter()
                response = await client.get(f"/v1/conversations/{big_id}/history")
                elapsed = (time.perf_counter() - started) * 1000
                assert len(response.json()["entries"]) == 10_000
                if i:  # the first read warms up
                    times.append(elapsed)
            print(f"[{label}] history of 10,000 entries: {p50_p95(times)}   (target ≤ 50 ms)")


async def run_postgres(appends: int, reads: int, history: int, on_agent: bool) -> None:
    url = await create_postgres_database()
    try:
        await run("postgres", url, appends, reads, history, on_agent)
    finally:
        await drop_postgres_database(url)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default=None)
    parser.add_argument("--appends", type=int, default=100)
    parser.add_argument("--reads", type=int, default=20)
    parser.add_argument("--history", type=int, default=1000, help="entries before the appends")
    parser.add_argument("--agent", action="store_true", help="a conversation on an agent")
    args = parser.parse_args()
    backend = args.backend or ("both" if os.environ.get(POSTGRES_ENV) else "sqlite")
    if backend in ("sqlite", "both"):
        with tempfile.TemporaryDirectory() as tmp:
            url = f"sqlite+aiosqlite:///{tmp}/bench.db"
            asyncio.run(run("sqlite", url, args.appends, args.reads, args.history, args.agent))
    if backend in ("postgres", "both"):
        if not os.environ.get(POSTGRES_ENV):
            parser.error(f"set {POSTGRES_ENV} to run on Postgres")
        asyncio.run(run_postgres(args.appends, args.reads, args.history, args.agent))
    print(f"load average while it ran: {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
