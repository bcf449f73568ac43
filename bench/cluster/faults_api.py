"""Faults of the request path, under the steady load: an API replica killed, Postgres stopped,
Redis stopped; and the rate and spend limits across the replicas."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from typing import Any

import httpx

from bench.cluster.context import FLUSH_WAIT, Bench, finished, now, until
from bench.cluster.load import CYCLE, Call
from bench.cluster.report import FaultReport, breakdown, describe

PRICE = 10000 / 1_000_000  # priced-echo's price per token (see cluster.MODELS)
PROMPT = "hello world"
MAX_TOKENS = 6


async def _writes(bench: Bench, report: FaultReport, calls: list[Call]) -> list[Call]:
    """Count the window's writes lost and duplicated; the lost ones (to excuse some)."""
    await asyncio.sleep(FLUSH_WAIT)
    writes = await bench.store.writes(calls)
    report.lost = len(writes.lost)
    report.duplicated = len(writes.duplicated)
    report.notes.append(
        f"{writes.acknowledged} writes acknowledged (chat events, conversations, files)"
        + (
            f"; {len(writes.failed_but_stored)} answered with an error yet stored"
            if writes.failed_but_stored
            else ""
        )
    )
    report.claim(
        "nothing written twice",
        not writes.duplicated,
        describe(writes.duplicated, calls[0].start if calls else 0.0),
    )
    return writes.lost


async def steady(bench: Bench) -> FaultReport:
    """No fault: the baseline every other row is read against."""
    report = FaultReport("steady load, no fault")
    t0 = now()
    await asyncio.sleep(bench.params.settle * 2)
    calls = bench.load.between(t0, now())
    await finished(calls, 60)
    report.count(calls)
    failed = [c for c in calls if not c.ok]
    report.claim("every request succeeds", not failed, describe(failed, t0))
    lost = await _writes(bench, report, calls)
    report.claim("nothing written is lost", not lost, describe(lost, t0))
    return report


async def replica_kill(bench: Bench) -> FaultReport:
    """SIGKILL one API replica under load, then restart it."""
    report = FaultReport("SIGKILL an API replica")
    report.recovery_what = "kill to HAProxy marking it DOWN"
    cluster, params = bench.cluster, bench.params
    victim = cluster.replicas[len(cluster.replicas) // 2]

    # When the victim was last seen other than UP, from the start of that look: HAProxy may mark
    # it UP any moment after, so only a call that started before then was sent to it while out.
    last_out = [0.0]

    def victim_state() -> str:
        looked = now()
        state = cluster.haproxy_servers().get(victim, "?")
        if not state.startswith("UP"):
            last_out[0] = looked
        return state

    t0 = now()
    await asyncio.sleep(params.settle)
    # The process dies for a while after the signal (Linux frees its memory before it closes
    # its sockets: ~0.1 s for a replica here), and a connection made meanwhile still reaches it:
    # a request under way at any moment from the signal until it is gone was in flight on it.
    t_kill, t_gone = await bench.in_thread(cluster.kill, victim)
    in_flight = {
        c for c in bench.load.calls if c.start <= t_gone and (not c.end or c.end >= t_kill)
    }
    down_at = await until(lambda: not victim_state().startswith("UP"), 10)
    t_restart = now()  # at once, as a supervisor would: nothing may reach it until it is UP
    await bench.in_thread(cluster.start, victim)
    up_at = await until(lambda: victim_state().startswith("UP"), 30)
    back = await until(
        lambda: any(c.served_by == victim and c.start > (up_at or now()) for c in bench.load.calls),
        15,
    )
    await asyncio.sleep(max(0.0, t_kill + params.after - now()))
    calls = bench.load.between(t0, now())
    await finished(calls, 60)
    report.count(calls)
    failed = [c for c in calls if not c.ok]
    stray = [c for c in failed if c not in in_flight]
    report.claim(
        "only the requests in flight on it fail",
        not stray,
        f"{len(stray)} failed that started after it was gone ({1000 * (t_gone - t_kill):.0f}"
        f" ms after the signal): {describe(stray, t_kill)}"
        if stray
        else f"{len(failed)} failed, of {len(in_flight)} in flight at the kill (all replicas;"
        f" the process was gone {1000 * (t_gone - t_kill):.0f} ms after the signal)",
    )
    if failed:
        report.notes.append(f"failed: {describe(failed, t_kill)}")
    report.claim(
        f"HAProxy takes it out within {params.kill_detect_bound:g} s",
        down_at is not None and down_at - t_kill <= params.kill_detect_bound,
        f"DOWN after {down_at - t_kill:.2f} s" if down_at else "never marked DOWN",
    )
    if down_at is not None:
        report.recovery = down_at - t_kill
    out_until = last_out[0] if up_at is not None else now()
    dead = [c for c in calls if c.served_by == victim and t_kill < c.start < out_until]
    report.claim("nothing is sent to it until it is UP again", not dead, describe(dead, t_kill))
    report.claim(
        "it rejoins once restarted",
        up_at is not None and back is not None,
        f"UP {up_at - t_restart:.1f} s after the restart" if up_at else "never UP again",
    )
    lost = await _writes(bench, report, calls)
    # Accounting rows (chat completion events) are written in the background within 0.25 s:
    # those of calls the killed replica answered just before it died die with it.
    buffered = {
        c for c in lost if c.op == "chat" and c.served_by == victim and c.end >= t_kill - 1.0
    }
    really_lost = [c for c in lost if c not in buffered]
    report.lost = len(really_lost)
    report.claim(
        "nothing written is lost (API writes; accounting of calls it answered just before)",
        not really_lost,
        describe(really_lost, t_kill),
    )
    if buffered:
        report.notes.append(
            f"{len(buffered)} chat completion events the killed replica held in its accounting"
            " buffer (answered < 1 s before the kill) were lost with it"
        )
    return report


async def replica_stop(bench: Bench) -> FaultReport:
    """SIGTERM one API replica under load (what a rolling restart does), then start it again:
    it drains (/health says so, HAProxy takes it out) and finishes what it has in flight."""
    report = FaultReport("SIGTERM an API replica (graceful stop)")
    report.recovery_what = "SIGTERM to HAProxy taking it out"
    cluster, params = bench.cluster, bench.params
    victim = cluster.replicas[0]
    proc = cluster.procs[victim]

    # When the victim was last seen other than UP, from the start of that look: HAProxy may mark
    # it UP any moment after, so only a call that started before then was sent to it while out.
    last_out = [0.0]

    def victim_state() -> str:
        looked = now()
        state = cluster.haproxy_servers().get(victim, "?")
        if not state.startswith("UP"):
            last_out[0] = looked
        return state

    t0 = now()
    await asyncio.sleep(params.settle)
    t_term = now()
    proc.signal(signal.SIGTERM)
    out_at = await until(lambda: not victim_state().startswith("UP"), 15)
    gone_at = await until(lambda: not proc.alive(), 60)
    t_restart = now()
    await bench.in_thread(cluster.start, victim)
    up_at = await until(lambda: victim_state().startswith("UP"), 30)
    await asyncio.sleep(max(0.0, t_term + params.after - now()))
    calls = bench.load.between(t0, now())
    await finished(calls, 60)
    report.count(calls)
    failed = [c for c in calls if not c.ok]
    report.claim("no request fails", not failed, describe(failed, t_term))
    if out_at is not None:
        report.recovery = out_at - t_term
    report.claim(
        "HAProxy takes it out before it exits",
        out_at is not None and (gone_at is None or out_at <= gone_at),
        f"out after {out_at - t_term:.2f} s" if out_at else "never taken out",
    )
    report.claim(
        "it exits (within the shutdown grace)",
        gone_at is not None,
        f"exited {gone_at - t_term:.1f} s after SIGTERM" if gone_at else "still running",
    )
    report.claim(
        "it rejoins once restarted",
        up_at is not None,
        f"UP {up_at - t_restart:.1f} s after the restart" if up_at else "never UP again",
    )
    lost = await _writes(bench, report, calls)
    report.lost = len(lost)
    report.claim("nothing written is lost", not lost, describe(lost, t_term))
    return report


async def _outage(
    bench: Bench,
    report: FaultReport,
    stop: Any,
    start: Any,
    seconds: float,
    hang_bound: float,
    check: str,
) -> tuple[list[Call], float, float]:
    """Stop a dependency under load for `seconds`, start it, keep the load on; the calls, the
    stop and the return times. Checks: no hung request, clean 503s with Retry-After, full
    service within the recovery bound, nothing lost or duplicated."""
    params = bench.params
    t0 = now()
    await asyncio.sleep(params.settle)
    t_stop = now()
    await bench.in_thread(stop)
    pool, readiness = await _pool_during(bench, seconds, check)
    await bench.in_thread(start)
    t_back = now()
    ready_at = await until(lambda: _ready(bench, check), 30)
    report.claim(
        f"/ready says not ready ({check} unreachable) while it is down, ready after",
        "unreachable" in readiness and ready_at is not None,
        f"{check} seen as {sorted(set(readiness))}; ready "
        + (f"{ready_at - t_back:.2f} s after the return" if ready_at else "never again"),
    )
    replicas = len(bench.cluster.replicas)
    report.claim(
        "the replicas stay in the load balancer's pool (/health is liveness)",
        min(pool, default=0) == replicas,
        f"as few as {min(pool, default=0)} of {replicas} UP during the outage",
    )
    await asyncio.sleep(max(params.after, params.recovery_bound + 1))
    calls = bench.load.between(t0, now())
    await finished(calls, hang_bound + 10)
    report.count(calls)
    failed = [c for c in calls if not c.ok]
    unclean = [c for c in failed if not (c.status == 503 and c.retry_after)]
    report.claim(
        "clean 503s with Retry-After (no 500, no dropped connection)",
        not unclean,
        describe(unclean, t_stop),
    )
    hung = [c for c in calls if c.seconds > hang_bound]
    slowest = max((c.seconds for c in calls), default=0.0)
    report.claim(
        f"no hung request (none over {hang_bound:g} s)",
        not hung,
        f"slowest {slowest:.2f} s" + (f": {describe(hung, t_stop)}" if hung else ""),
    )
    late = [c for c in failed if c.start >= t_back]
    recovered_at = max((c.end for c in late), default=t_back)
    report.recovery = recovered_at - t_back
    served_after = {c.op for c in calls if c.ok and c.start > recovered_at}
    missing = sorted(set(CYCLE) - served_after)
    report.claim(
        f"full service within {params.recovery_bound:g} s of its return, without a restart",
        report.recovery <= params.recovery_bound and not missing,
        f"last failure {report.recovery:.2f} s after the return"
        + (f"; never served again: {missing}" if missing else ""),
    )
    during = [c for c in calls if t_stop <= c.start <= t_back]
    report.notes.append(
        f"{len(during)} requests sent during the outage: {sum(c.ok for c in during)} succeeded,"
        f" {sum(c.status == 503 for c in during)} got 503"
    )
    if failed:
        first, last = min(c.start for c in failed), max(c.end for c in failed)
        report.notes.append(
            f"failures: {breakdown(failed)}, from {first - t_stop:+.2f} s to {last - t_stop:+.2f} s"
            f" after the stop (back at {t_back - t_stop:+.2f} s)"
        )
    answered = [c for c in during if c.ok and c.op == "chat"]
    if answered:
        report.notes.append(
            f"{len(answered)} chat completions answered during the outage: their accounting"
            " rows are among the writes checked"
        )
    lost = await _writes(bench, report, calls)
    report.lost = len(lost)
    report.claim(
        "nothing written is lost (accounting rows included)", not lost, describe(lost, t_stop)
    )
    return calls, t_stop, t_back


async def _pool_during(bench: Bench, seconds: float, check: str) -> tuple[list[int], list[str]]:
    """Wait `seconds`, sampling how many replicas HAProxy has UP, and what a replica's /ready
    says of `check`."""
    pool: list[int] = []
    readiness: list[str] = []
    end = now() + seconds
    url = bench.cluster.replica_url(bench.cluster.replicas[0]) + "/ready"
    while now() < end:
        with contextlib.suppress(OSError):
            states = await bench.in_thread(bench.cluster.haproxy_servers)
            pool.append(sum(state == "UP" for state in states.values()))
        with contextlib.suppress(httpx.HTTPError, ValueError):
            answer = await bench.client.get(url, timeout=5)
            readiness.append(str(answer.json().get("checks", {}).get(check)))
        await asyncio.sleep(min(0.25, max(0.0, end - now())))
    return pool, readiness


async def _ready(bench: Bench, check: str) -> bool:
    url = bench.cluster.replica_url(bench.cluster.replicas[0]) + "/ready"
    answer = await bench.client.get(url, timeout=5)
    return answer.status_code == 200 and answer.json()["checks"][check] == "ok"


async def postgres_outage(bench: Bench) -> FaultReport:
    """pg_ctl stop -m fast, the outage, pg_ctl start, under load."""
    params = bench.params
    report = FaultReport(f"stop Postgres for {params.postgres_outage:g} s")
    report.recovery_what = "Postgres accepting connections to the last failed request"
    pg = bench.cluster.postgres
    calls, t_stop, t_back = await _outage(
        bench, report, pg.stop, pg.start, params.postgres_outage, params.hang_bound, "database"
    )
    refused = [c for c in calls if t_stop <= c.start <= t_back and c.status == 503]
    report.claim(
        "requests that need the database are refused while it is down",
        bool(refused),
        f"{len(refused)} refused",
    )
    return report


async def redis_outage(bench: Bench) -> FaultReport:
    """Redis stopped (SIGTERM) and started again under load, the organization limited."""
    params, cluster = bench.params, bench.cluster
    fail_open = cluster.spec.limits_fail_open
    mode = "open" if fail_open else "closed"
    report = FaultReport(f"stop Redis for {params.redis_outage:g} s (fail {mode})")
    report.recovery_what = "Redis back to the last failed request"
    # The cluster's default rate limit (Spec.requests_per_second) puts every call to a model
    # under the limits, whose counters are in Redis.
    calls, t_stop, t_back = await _outage(
        bench,
        report,
        lambda: cluster.stop("redis"),
        lambda: cluster.start("redis"),
        params.redis_outage,
        hang_bound=params.recovery_bound,
        check="redis",
    )
    during = [c for c in calls if t_stop <= c.start <= t_back]
    refused = [c for c in during if c.status == 503]
    if fail_open:
        report.claim("limits fail open: nothing refused", not refused, describe(refused, t_stop))
    else:
        codes = {c.code for c in refused}
        report.claim(
            "limits fail closed: model calls get 503 limits_unavailable",
            any(c.op == "chat" for c in refused) and codes <= {"limits_unavailable"},
            f"codes {sorted(codes)}",
        )
        others = [c for c in during if not c.ok and c.op in ("upload", "list", "models")]
        report.claim("what needs no limit is served", not others, describe(others, t_stop))
    return report


def _chat(model: str) -> dict[str, Any]:
    return {
        "model": model,
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": MAX_TOKENS,
    }


async def limits(bench: Bench) -> FaultReport:
    """Rate and spend limits through the load balancer: together the replicas allow the limit
    (within one request), not N times it. Run without the steady load (same organization)."""
    params = bench.params
    report = FaultReport("rate and spend limits, 3 replicas")
    limits_ = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    sent: list[httpx.Response] = []
    async with httpx.AsyncClient(
        base_url=bench.cluster.url,
        headers={"Authorization": f"Bearer {bench.cluster.api_key}"},
        timeout=60,
        limits=limits_,
    ) as client:
        await bench.cli("limits", "set", "--rps", str(params.rps_limit))
        try:
            await asyncio.sleep(1.2)
            for burst in range(2):
                started = now()
                responses = await asyncio.gather(
                    *(
                        client.post("/v1/chat/completions", json=_chat("maestrale-echo"))
                        for _ in range(36)
                    )
                )
                elapsed = now() - started
                sent += responses
                admitted = sum(r.status_code == 200 for r in responses)
                by = {r.headers.get("x-served-by") for r in responses}
                bound = params.rps_limit if elapsed < 1.0 else params.rps_limit * (int(elapsed) + 1)
                report.claim(
                    f"burst {burst + 1}: {params.rps_limit} req/s admitted across the replicas"
                    " (within one)",
                    abs(admitted - params.rps_limit) <= 1
                    if elapsed < 1.0
                    else admitted <= bound + 1,
                    f"{admitted} of 36 admitted in {elapsed:.2f} s, answered by {sorted(by)}",
                )
                await asyncio.sleep(1.2)
        finally:
            await bench.cli("limits", "set", "--rps", "default")
        await asyncio.sleep(1.2)
        current = (await bench.admin.get("/v1/admin/spend-limit")).json()
        used = float(current["limits"]["completion"]["usage"] or 0.0)
        limit = round(used + params.spend_limit, 6)
        resp = await bench.admin.post("/v1/admin/spend-limit", json={"amount": limit})
        spent, refusals = 0.0, []
        try:
            if resp.status_code != 200:
                report.claim("spend limit set", False, resp.text[:200])
            for _ in range(40):
                responses = await asyncio.gather(
                    *(
                        client.post("/v1/chat/completions", json=_chat("priced-echo"))
                        for _ in range(12)
                    )
                )
                sent += responses
                ok = [r for r in responses if r.status_code == 200]
                spent += sum(r.json()["usage"]["total_tokens"] for r in ok) * PRICE
                refusals += [r for r in responses if r.status_code == 429]
                if not ok:
                    break
        finally:
            await bench.admin.post("/v1/admin/spend-limit", json={"no_monthly_limit": True})
    worst = (len(PROMPT) // 4 + MAX_TOKENS) * PRICE
    report.claim(
        f"spend stops within one request of the limit ({params.spend_limit:g})",
        params.spend_limit - worst < spent <= params.spend_limit + 1e-9,
        f"spent {spent:.4f}, one request costs up to {worst:.4f}",
    )
    codes = {_code(r) for r in refusals}
    report.claim(
        "refusals are 429 spend_limit_exceeded", codes == {"spend_limit_exceeded"}, str(codes)
    )
    report.sent = len(sent)
    report.failed = sum(r.status_code not in (200, 429) for r in sent)
    report.claim("no error but 429", report.failed == 0)
    report.notes.append(f"{sum(r.status_code == 429 for r in sent)} refused with 429")
    return report


def _code(response: httpx.Response) -> str:
    try:
        return str(response.json().get("code"))
    except ValueError:
        return response.text[:60]
