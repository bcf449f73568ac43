"""What Maestrale adds to a conversation append over the model call, with 1,000 entries of
history (target p50 ≤ 5 ms), and the time to read a 10,000-entry history (target ≤ 50 ms).

    .venv/bin/python -m bench.conversations.run [--database-url URL] [--appends 50]

In process (the ASGI app over httpx, no network), on the builtin engine. The engine's own time
is measured by wrapping its `chat`, so the overhead is the append's latency minus that.
"""

from __future__ import annotations

import argparse
import asyncio
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


async def fill(app: Any, conversation_id: str, count: int) -> None:
    """Add `count` entries (user / assistant pairs) straight to the database."""
    tenant = await default_tenant(app.state.db)
    async with app.state.db.session() as session:
        repo = ConversationRepository(session, tenant)
        row = await repo.get(conversation_id)
        assert isinstance(row, Conversation)
        bodies = []
        for i in range(count // 2):
            bodies.append(entry("message.input", role="user", content=f"question {i}"))
            bodies.append(message_output(f"echo: question {i}", None, "maestrale-echo"))
        await repo.add_entries(row, bodies)


async def run(database_url: str, appends: int) -> None:
    await upgrade_async(database_url)
    with tempfile.TemporaryDirectory() as tmp:
        app = create_app(test_settings(database_url, Path(tmp) / "data"))
        async with app.router.lifespan_context(app), make_client(app) as client:
            engine = app.state.engines.resolve("maestrale-echo").engine
            engine_seconds: list[float] = []
            chat = engine.chat

            async def timed_chat(request: Any) -> Any:
                started = time.perf_counter()
                try:
                    return await chat(request)
                finally:
                    engine_seconds.append(time.perf_counter() - started)

            engine.chat = timed_chat
            start = await client.post(
                "/v1/conversations", json={"model": "maestrale-echo", "inputs": "hello"}
            )
            conversation_id = start.json()["conversation_id"]
            await fill(app, conversation_id, 998)
            url = f"/v1/conversations/{conversation_id}"
            overheads, totals = [], []
            for i in range(appends + 5):
                engine_seconds.clear()
                started = time.perf_counter()
                response = await client.post(url, json={"inputs": f"append {i}"})
                total = time.perf_counter() - started
                assert response.status_code == 200, response.text
                if i >= 5:  # warm-up
                    totals.append(total * 1000)
                    overheads.append((total - sum(engine_seconds)) * 1000)
            print(
                f"append on 1,000 entries: p50 {statistics.median(totals):.2f} ms total, "
                f"p50 overhead over the model call {statistics.median(overheads):.2f} ms "
                f"(p95 {statistics.quantiles(overheads, n=20)[18]:.2f} ms)"
            )

            big = await client.post(
                "/v1/conversations", json={"model": "maestrale-echo", "inputs": "big"}
            )
            big_id = big.json()["conversation_id"]
            await fill(app, big_id, 9998)
            reads = []
            for _ in range(10):
                started = time.perf_counter()
                response = await client.get(f"/v1/conversations/{big_id}/history")
                reads.append((time.perf_counter() - started) * 1000)
                assert len(response.json()["entries"]) == 10_000
            print(f"history of 10,000 entries: p50 {statistics.median(reads):.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--appends", type=int, default=50)
    args = parser.parse_args()
    if args.database_url:
        asyncio.run(run(args.database_url, args.appends))
        return
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(run(f"sqlite+aiosqlite:///{tmp}/bench.db", args.appends))


if __name__ == "__main__":
    main()
