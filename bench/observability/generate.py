"""Bulk-generate chat completion events for the observability scale benchmark.

Realistic variety: several workspaces (the benchmark's own gets `share` of the rows), weighted
models, mostly-200 status codes, log-normal latencies and token counts, a few conversation
shapes, `extra_fields` keys of every type (some absent), created_at spread over 30 days in
insertion order (as captured events are).

Postgres: binary COPY through asyncpg (`copy_records_to_table`); SQLite: `executemany` in big
transactions. Both write the exact column encodings the application writes (JSONB / JSON text,
timestamptz / SQLite's naive UTC text), so the server reads the rows like recorded ones.

    .venv/bin/python -m bench.observability.generate --url sqlite+aiosqlite:///x.db \
        --workspace <id> --organization <id> --events 1000000
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import orjson

COLUMNS = (
    "id",
    "organization_id",
    "workspace_id",
    "key_id",
    "correlation_id",
    "source",
    "model",
    "status_code",
    "latency_ms",
    "request_messages",
    "response_messages",
    "enabled_tools",
    "nb_input_tokens",
    "nb_output_tokens",
    "nb_messages",
    "extra_fields",
    "created_at",
)
MODELS = [
    ("mistral-small-latest", 0.30),
    ("mistral-medium-latest", 0.20),
    ("mistral-large-latest", 0.12),
    ("ministral-8b-latest", 0.10),
    ("ministral-3b-latest", 0.08),
    ("codestral-latest", 0.08),
    ("open-mistral-nemo", 0.07),
    ("smollm2-135m-instruct", 0.05),
]
STATUSES = [(200, 0.93), (400, 0.02), (422, 0.01), (429, 0.02), (500, 0.01), (503, 0.01)]
SOURCES = [("api", 0.80), ("batch", 0.10), ("conversations", 0.07), ("agents", 0.03)]
TEAMS = ["red", "blue", "green", "yellow", "purple"]
ENVS = ["prod", "staging", "dev"]
TIERS = ["free", "pro", "enterprise"]
PROMPTS = [
    "Summarise the quarterly report in three bullet points.",
    "Translate this paragraph into French, keeping the tone formal.",
    "Write a Python function that parses ISO 8601 dates.",
    "What are the opening hours of the Lyon office?",
    "Classify this support ticket: my invoice is wrong.",
    "Explain the difference between TCP and UDP to a beginner.",
    "Draft a polite reply declining the meeting invitation.",
    "List the risks of migrating the billing database this weekend.",
]
ANSWERS = [
    "Here is a short summary of the main points.",
    "Voici la traduction demandée.",
    "def parse(value: str) -> datetime: return datetime.fromisoformat(value)",
    "The office is open from 9:00 to 18:00, Monday to Friday.",
    "Category: billing. Priority: normal.",
    "TCP is reliable and ordered; UDP is fast and connectionless.",
    "Thank you for the invitation; unfortunately I cannot attend.",
    "Data loss, downtime during peak hours, and rollback complexity.",
]
TOOLS = [{"type": "function", "function": {"name": "lookup_order", "parameters": {}}}]
# What makes message texts differ beyond the eight prompts: a product named in 60% of requests
# (200 products, ~0.3% of events each) and a reference number in 40% (~1 event per number).
PRODUCTS = [
    f"{a}{b}"
    for a in (
        "Astra",
        "Borea",
        "Cirro",
        "Dorado",
        "Egeo",
        "Fonte",
        "Garbin",
        "Ionio",
        "Libeccio",
        "Maestro",
    )
    for b in (
        "lite",
        "pro",
        "max",
        "one",
        "go",
        "air",
        "plus",
        "nano",
        "mini",
        "ultra",
        "core",
        "flex",
        "duo",
        "neo",
        "zen",
        "hub",
        "kit",
        "box",
        "pad",
        "cam",
    )
]


def _pick(rng: np.random.Generator, choices: list[tuple[Any, float]], n: int) -> np.ndarray:
    values = np.array([c for c, _ in choices], dtype=object)
    weights = np.array([w for _, w in choices])
    return values[rng.choice(len(choices), size=n, p=weights / weights.sum())]


def _conversations() -> dict[tuple[int, int, bool], tuple[str, str, str, int]]:
    """Every (prompt, turns, answered) conversation as JSON text, built once; the request ends
    with an open `"...` string, closed per event with its own last words (`_request`)."""
    out = {}
    for p in range(len(PROMPTS)):
        for turns in (1, 2, 3):
            request = [{"role": "system", "content": "You are a helpful assistant."}]
            request += [
                {"role": "user", "content": PROMPTS[(p + t) % len(PROMPTS)]} for t in range(turns)
            ]
            for ok in (True, False):
                response = [{"role": "assistant", "content": ANSWERS[p]}] if ok else []
                out[(p, turns, ok)] = (
                    orjson.dumps(request).decode()[: -len('"}]')],
                    orjson.dumps(response).decode(),
                    orjson.dumps(TOOLS if p == 7 else []).decode(),
                    len(request) + len(response),
                )
    return out


def _request(prefix: str, product: int, reference: int) -> str:
    """The request's JSON: the last user message gets its product and reference (ASCII only,
    nothing to escape)."""
    tail = ""
    if product >= 0:
        tail += f" It is about our {PRODUCTS[product]} plan."
    if reference >= 0:
        tail += f" Ref T-{reference:06d}."
    return prefix + tail + '"}]'


def batches(
    n: int,
    workspaces: list[tuple[str, str]],
    share: float,
    now: datetime,
    batch: int = 50_000,
    seed: int = 7,
) -> Iterator[list[tuple[Any, ...]]]:
    """Rows as tuples in COLUMNS order: JSON as text, created_at as a naive UTC datetime."""
    rng = np.random.default_rng(seed + n)
    others = len(workspaces) - 1
    weights = [share] + [(1 - share) / others] * others if others else [1.0]
    start = np.datetime64(now.replace(tzinfo=None) - timedelta(days=30), "us")
    conversations = _conversations()
    for offset in range(0, n, batch):
        size = min(batch, n - offset)
        ws = rng.choice(len(workspaces), size=size, p=weights).tolist()
        models = _pick(rng, MODELS, size).tolist()
        statuses = _pick(rng, STATUSES, size).tolist()
        sources = _pick(rng, SOURCES, size).tolist()
        latency = np.round(rng.lognormal(6.5, 0.7, size), 1).tolist()
        tokens_in = (rng.lognormal(5.8, 1.0, size).astype(np.int64) + 5).tolist()
        tokens_out = (rng.lognormal(5.0, 0.9, size).astype(np.int64) + 1).tolist()
        # Time-ordered like captured events (rows of a day sit together on disk), with the
        # batch's own span of the 30 days.
        span = 30 * 86400 * 10**6
        low, high = span * offset // n, span * (offset + size) // n
        micros = np.sort(rng.integers(low, max(high, low + 1), size))
        created = (start + micros.astype("timedelta64[us]")).astype(object).tolist()
        prompt = rng.integers(0, len(PROMPTS), size).tolist()
        turns = rng.integers(1, 4, size).tolist()
        present = rng.random((size, 6)).tolist()
        score = np.round(rng.uniform(0, 10, size), 2).tolist()
        customer = rng.integers(0, 20_000, size).tolist()
        team = rng.integers(0, len(TEAMS), size).tolist()
        env = rng.integers(0, len(ENVS), size).tolist()
        tier = rng.integers(0, len(TIERS), size).tolist()
        ids = [str(u) for u in (uuid.UUID(bytes=b, version=4) for b in _random_ids(rng, size))]
        corr = rng.integers(0, 2**63, size).tolist()
        product = np.where(rng.random(size) < 0.6, rng.integers(0, len(PRODUCTS), size), -1)
        reference = np.where(rng.random(size) < 0.4, rng.integers(0, 10**6, size), -1)
        products, references = product.tolist(), reference.tolist()
        rows = []
        for i in range(size):
            org, workspace = workspaces[ws[i]]
            ok = statuses[i] == 200
            prefix, response, tools, nb = conversations[(prompt[i], turns[i], ok)]
            request = _request(prefix, products[i], references[i])
            has = present[i]
            extra: dict[str, Any] = {"env": ENVS[env[i]]}
            if has[0] < 0.8:
                extra["team"] = TEAMS[team[i]]
            if has[1] < 0.5:
                extra["customer_id"] = f"cust-{customer[i]:05d}"
            if has[2] < 0.3:
                extra["score"] = score[i]
            if has[3] < 0.2:
                extra["flag"] = has[4] < 0.5
            if has[5] < 0.4:
                extra["user_tier"] = TIERS[tier[i]]
            if has[4] < 0.1:
                extra["tags"] = ["beta", TEAMS[team[i]]]
            rows.append(
                (
                    ids[i],
                    org,
                    workspace,
                    None,
                    f"corr-{corr[i]:016x}",
                    sources[i],
                    models[i],
                    statuses[i],
                    latency[i],
                    request,
                    response,
                    tools,
                    tokens_in[i],
                    tokens_out[i] if ok else 0,
                    nb,
                    orjson.dumps(extra).decode(),
                    created[i],
                )
            )
        yield rows


def _random_ids(rng: np.random.Generator, size: int) -> list[bytes]:
    raw = rng.bytes(16 * size)
    return [raw[i : i + 16] for i in range(0, len(raw), 16)]


def _sqlite_path(url: str) -> str:
    return url.split(":///", 1)[1]


def generate_sqlite(url: str, rows: Iterator[list[tuple[Any, ...]]]) -> int:
    conn = sqlite3.connect(_sqlite_path(url))
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=OFF")
    conn.execute("PRAGMA cache_size=-200000")
    sql = (
        f"INSERT INTO chat_completion_events ({', '.join(COLUMNS)}) "
        f"VALUES ({', '.join('?' * len(COLUMNS))})"
    )
    total = 0
    for batch in rows:
        # SQLAlchemy's SQLite DATETIME text: naive UTC with microseconds; JSON as text.
        converted = [(*r[:16], r[16].isoformat(" ", "microseconds")) for r in batch]
        with conn:
            conn.executemany(sql, converted)
        total += len(batch)
        print(f"  {total} rows", flush=True)
    conn.execute("ANALYZE")
    conn.close()
    return total


def pg_dsn(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://", 1)


async def generate_postgres(url: str, rows: Iterator[list[tuple[Any, ...]]]) -> int:
    import asyncpg

    conn = await asyncpg.connect(pg_dsn(url))
    # JSON as text (asyncpg's jsonb codec); naive datetimes are UTC for timestamptz.
    total = 0
    try:
        for batch in rows:
            await conn.copy_records_to_table(
                "chat_completion_events", records=batch, columns=list(COLUMNS)
            )
            total += len(batch)
            print(f"  {total} rows", flush=True)
        await conn.execute("VACUUM ANALYZE chat_completion_events")
        await conn.execute("VACUUM ANALYZE chat_completion_event_texts")
    finally:
        await conn.close()
    return total


def generate(url: str, n: int, workspaces: list[tuple[str, str]], share: float) -> float:
    """Insert `n` events; the first workspace gets `share` of them. Returns seconds taken."""
    started = time.perf_counter()
    rows = batches(n, workspaces, share, datetime.now(UTC))
    if url.startswith("sqlite"):
        generate_sqlite(url, rows)
    else:
        asyncio.run(generate_postgres(url, rows))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True)
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--organization", required=True)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--share", type=float, default=0.6)
    args = parser.parse_args()
    workspaces = [(args.organization, args.workspace)] + [
        (str(uuid.uuid4()), str(uuid.uuid4())) for _ in range(4)
    ]
    seconds = generate(args.url, args.events, workspaces, args.share)
    print(f"{args.events} events in {seconds:.1f}s ({args.events / seconds:.0f}/s)")


if __name__ == "__main__":
    main()
