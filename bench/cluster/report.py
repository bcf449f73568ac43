"""What a fault run measures (per fault: requests sent, failed, lost, duplicated, the recovery
time, and the claims checked), its parameters, and the table it prints."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from bench.cluster.load import Call


@dataclass(frozen=True)
class Params:
    """The full bench's sizes; `SHORT` is the CI test's."""

    settle: float = 3.0  # seconds of load before a fault
    after: float = 8.0  # seconds of load after it (outages: at least recovery_bound + 1)
    concurrency: int = 6  # client loops of the steady load
    batch_lines: int = 10_000
    line_sleep_ms: int = 10  # each batch line's model time (the builtin engine's /sleep)
    campaign_events: int = 1500
    postgres_outage: float = 10.0
    redis_outage: float = 5.0
    hang_bound: float = 12.0  # no request may take longer (the pool timeout, 10 s, + margin)
    recovery_bound: float = 5.0  # full service within this of the dependency's return
    kill_detect_bound: float = 3.0  # the load balancer takes a dead replica out within this
    rps_limit: int = 5
    spend_limit: float = 1.0


SHORT = Params(
    settle=2.0, after=3.0, concurrency=4, batch_lines=1000, campaign_events=100, redis_outage=3.0
)


@dataclass
class Claim:
    text: str
    ok: bool
    detail: str = ""


@dataclass
class FaultReport:
    name: str
    sent: int = 0
    failed: int = 0
    lost: int = 0
    duplicated: int = 0
    recovery: float | None = None  # seconds (what it measures is in `recovery_what`)
    recovery_what: str = ""
    seconds: float = 0.0  # how long the scenario took
    claims: list[Claim] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def claim(self, text: str, ok: bool, detail: str = "") -> bool:
        self.claims.append(Claim(text, bool(ok), detail))
        return bool(ok)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.claims)

    def failures(self) -> list[str]:
        return [f"{self.name}: {c.text} -- {c.detail}" for c in self.claims if not c.ok]

    def count(self, calls: list[Call]) -> None:
        self.sent = len(calls)
        self.failed = sum(not c.ok for c in calls)


def describe(calls: list[Call], since: float, at_most: int = 5) -> str:
    shown = "; ".join(c.describe(since) for c in calls[:at_most])
    more = f" (+{len(calls) - at_most} more)" if len(calls) > at_most else ""
    return f"{shown}{more}"


def breakdown(calls: list[Call]) -> str:
    """The failures by status and error code, e.g. `503 service_unavailable x12`."""
    counts = Counter(
        f"{c.status} {c.code}".strip() if c.status else c.error.split(":")[0] for c in calls
    )
    return ", ".join(f"{what} x{n}" for what, n in counts.most_common())


def table(reports: list[FaultReport]) -> list[str]:
    head = f"{'fault':<46} {'sent':>6} {'failed':>6} {'lost':>5} {'dup':>4} {'recovery':>9}  claims"
    out = [head, "-" * len(head)]
    for r in reports:
        recovery = f"{r.recovery:.2f} s" if r.recovery is not None else "-"
        passed = sum(c.ok for c in r.claims)
        verdict = "ok" if r.ok else "FAILED"
        out.append(
            f"{r.name:<46} {r.sent:>6} {r.failed:>6} {r.lost:>5} {r.duplicated:>4} "
            f"{recovery:>9}  {passed}/{len(r.claims)} {verdict}"
        )
    out.append("")
    for r in reports:
        recovery = f"; recovery: {r.recovery_what}" if r.recovery_what else ""
        out.append(f"{r.name} ({r.seconds:.0f} s{recovery}):")
        for c in r.claims:
            mark = "ok  " if c.ok else "FAIL"
            out.append(f"  [{mark}] {c.text}" + (f": {c.detail}" if c.detail else ""))
        out.extend(f"  - {note}" for note in r.notes)
    return out
