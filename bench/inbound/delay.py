"""The delay from a delivery to the work it starts: deliveries sent at a steady pace to a
webhook with one trigger; the client notes when each answer arrived (wall clock, the same host as
the server), then reads the trigger's events (`GET /v1/triggers/{id}/events`) and what each
started. Delays, from the delivery's answer:
- `submitted_at`: the dispatch job picked the delivery up and wrote the trigger event;
- `triggered_at`: the work is started (the workflow execution accepted by Temporal; for an agent,
  the conversation stored with its first turn run on the builtin model);
- the started object's own time: the conversation's `created_at`, the execution's `start_time`.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx

from bench.gateway.processes import BenchError
from bench.harness import percentile
from bench.inbound.signing import Deliveries


@dataclass
class Delays:
    label: str
    sent: int = 0
    rate: float = 0.0
    submitted_ms: list[float] = field(default_factory=list)
    triggered_ms: list[float] = field(default_factory=list)
    started_ms: list[float] = field(default_factory=list)  # the started object's own time
    started_name: str = ""
    not_triggered: int = 0
    answer_ms: list[float] = field(default_factory=list)


def _epoch(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


async def paced(
    http: httpx.AsyncClient, path: str, count: int, rate: float
) -> tuple[dict[str, float], list[float]]:
    """`count` deliveries, one every 1/`rate` s (each in its own task, so a slow answer does
    not delay the next): the wall-clock time each answer arrived, by delivery id, and the answer
    latencies (ms)."""
    deliveries = Deliveries()
    answered: dict[str, float] = {}
    latencies: list[float] = []

    async def one() -> None:
        body, headers = deliveries.next()
        started = time.perf_counter()
        resp = await http.post(path, content=body, headers=headers)
        if resp.status_code != 200:
            raise BenchError(f"delivery refused: {resp.status_code} {resp.text[:300]}")
        answered[resp.json()["delivery_id"]] = time.time()
        latencies.append((time.perf_counter() - started) * 1000)

    tasks = []
    begin = time.perf_counter()
    for i in range(count):
        await asyncio.sleep(max(0.0, begin + i / rate - time.perf_counter()))
        tasks.append(asyncio.create_task(one()))
    await asyncio.gather(*tasks)
    return answered, latencies


async def events_of(
    api: httpx.AsyncClient, trigger_id: str, expected: int, timeout: float
) -> list[dict[str, Any]]:
    """The trigger's events once `expected` of them are final (or `timeout` passed)."""
    deadline = time.monotonic() + timeout
    events: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        resp = await api.get(f"/v1/triggers/{trigger_id}/events", params={"limit": 1000})
        resp.raise_for_status()
        events = resp.json()["data"]
        if len(events) >= expected and all(e["status"] != "SUBMITTED" for e in events):
            break
        await asyncio.sleep(0.25)
    return events


async def measure(
    label: str,
    url: str,
    api: httpx.AsyncClient,
    path: str,
    trigger_id: str,
    count: int,
    rate: float,
) -> Delays:
    """Send `count` deliveries at `rate`/s to `path`, then read what the trigger started."""
    result = Delays(label, rate=rate)
    async with httpx.AsyncClient(base_url=url, timeout=30) as provider:
        answered, result.answer_ms = await paced(provider, path, count, rate)
    result.sent = len(answered)
    events = await events_of(api, trigger_id, len(answered), timeout=120)
    for event in events:
        at = answered.get(event["source_id"])
        if at is None:
            continue
        if event["status"] != "TRIGGERED":
            result.not_triggered += 1
            continue
        result.submitted_ms.append((_epoch(event["submitted_at"]) - at) * 1000)
        result.triggered_ms.append((_epoch(event["triggered_at"]) - at) * 1000)
        started = await _started_at(api, event["url"])
        if started is not None:
            result.started_name, when = started
            result.started_ms.append((_epoch(when) - at) * 1000)
    result.not_triggered += len(answered) - sum(1 for e in events if e["source_id"] in answered)
    return result


async def _started_at(api: httpx.AsyncClient, link: str | None) -> tuple[str, str] | None:
    """The started object's creation time, read through its link."""
    if not link:
        return None
    resp = await api.get(httpx.URL(link).path)
    if resp.status_code != 200:
        return None
    body = resp.json()
    if "start_time" in body:
        return "execution start_time", str(body["start_time"])
    return "conversation created_at", str(body["created_at"])


def table(rows: list[Delays]) -> list[str]:
    head = (
        f"{'path':<40} {'sent':>5} {'rate/s':>6} {'answer p50':>10} "
        f"{'job p50':>8} {'job p99':>8} {'started p50':>11} {'started p99':>11} "
        f"{'object p50':>10} {'object p99':>10} {'lost':>4}"
    )
    out = [head, "-" * len(head)]
    for r in rows:
        out.append(
            f"{r.label:<40} {r.sent:>5} {r.rate:>6.1f} {percentile(r.answer_ms, 50):>10.1f} "
            f"{percentile(r.submitted_ms, 50):>8.0f} {percentile(r.submitted_ms, 99):>8.0f} "
            f"{percentile(r.triggered_ms, 50):>11.0f} {percentile(r.triggered_ms, 99):>11.0f} "
            f"{percentile(r.started_ms, 50):>10.0f} {percentile(r.started_ms, 99):>10.0f} "
            f"{r.not_triggered:>4}"
        )
    out.append(
        "  (ms from the delivery's answer: job = the trigger event's submitted_at, started ="
        " its triggered_at, object = the conversation's created_at or the execution's"
        " start_time; lost = not TRIGGERED within 120 s)"
    )
    return out
