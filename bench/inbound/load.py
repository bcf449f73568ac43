"""The receiving endpoint under load: `clients` concurrent httpx senders in a closed loop for
`seconds`, each posting a new signed delivery (`bench.inbound.signing`) as soon as the previous
one is answered. Every answer is counted by status; latencies are kept for all answers and for
the accepted ones; the CPU of the watched processes (the server, the client) is read from /proc
before and after."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field

import httpx

from bench.harness import CpuWatch, percentile
from bench.inbound.signing import Deliveries


@dataclass
class Load:
    label: str
    clients: int
    seconds: float = 0.0
    statuses: Counter[int] = field(default_factory=Counter)
    accepted_ms: list[float] = field(default_factory=list)
    all_ms: list[float] = field(default_factory=list)
    failures: int = 0  # no answer (connection error, timeout)
    first_failure: str = ""
    cpu: dict[str, float] = field(default_factory=dict)

    @property
    def answers(self) -> int:
        return sum(self.statuses.values())

    @property
    def accepted(self) -> int:
        return len(self.accepted_ms)

    @property
    def rate(self) -> float:
        return self.accepted / self.seconds if self.seconds else 0.0

    @property
    def refused_share(self) -> float:
        sent = self.answers + self.failures
        return (sent - self.accepted) / sent if sent else 0.0

    def cpu_ms(self, name: str) -> float:
        """CPU of process `name` per answer (ms)."""
        return self.cpu.get(name, 0.0) * 1000 / max(1, self.answers)

    def refusals(self) -> str:
        parts = [f"{n}x{code}" for code, n in sorted(self.statuses.items()) if code != 200]
        if self.failures:
            parts.append(f"{self.failures}x no answer ({self.first_failure})")
        return ", ".join(parts) or "none"


async def flood(
    label: str,
    url: str,
    paths: list[str],
    clients: int,
    seconds: float,
    pids: dict[str, list[int]],
) -> Load:
    """Client k posts to `paths[k % len(paths)]` (several webhooks spread the load)."""
    result = Load(label, clients)
    deliveries = Deliveries()
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)

    async def post(http: httpx.AsyncClient, path: str) -> None:
        body, headers = deliveries.next()
        started = time.perf_counter()
        try:
            resp = await http.post(path, content=body, headers=headers)
        except httpx.HTTPError as exc:
            result.failures += 1
            result.first_failure = result.first_failure or f"{type(exc).__name__}: {exc}"
            return
        spent = (time.perf_counter() - started) * 1000
        result.statuses[resp.status_code] += 1
        result.all_ms.append(spent)
        if resp.status_code == 200:
            result.accepted_ms.append(spent)

    async def sender(http: httpx.AsyncClient, path: str, end: float) -> None:
        while time.perf_counter() < end:
            await post(http, path)

    async with httpx.AsyncClient(base_url=url, timeout=30, limits=limits) as http:
        # Warm-up, not counted: each client's connection opened, the webhooks' settings cached.
        await asyncio.gather(*(post(http, paths[k % len(paths)]) for k in range(clients)))
        result = Load(label, clients)
        watch = CpuWatch(pids)
        started = time.perf_counter()
        end = started + seconds
        await asyncio.gather(*(sender(http, paths[k % len(paths)], end) for k in range(clients)))
        result.seconds = time.perf_counter() - started
        result.cpu = watch.since()
    return result


def table(rows: list[Load], watched: tuple[str, ...]) -> list[str]:
    head = (
        f"{'path':<44} {'c':>3} {'answers':>7} {'accepted/s':>10} {'refused':>7} "
        f"{'p50 ms':>7} {'p99 ms':>7} {'acc p99':>7}"
        + "".join(f" {'CPU ' + name:>11}" for name in watched)
    )
    out = [head, "-" * len(head)]
    for r in rows:
        out.append(
            f"{r.label:<44} {r.clients:>3} {r.answers:>7} {r.rate:>10.1f} "
            f"{100 * r.refused_share:>6.1f}% {percentile(r.all_ms, 50):>7.2f} "
            f"{percentile(r.all_ms, 99):>7.2f} {percentile(r.accepted_ms, 99):>7.2f}"
            + "".join(f" {r.cpu_ms(name):>11.2f}" for name in watched)
        )
    out.append("  (CPU: ms per answer, utime + stime from /proc; refused: answers not 200)")
    out += [
        f"  {r.label} c={r.clients}: refused {r.refusals()}" for r in rows if r.refusals() != "none"
    ]
    return out
