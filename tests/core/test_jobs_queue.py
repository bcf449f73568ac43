"""The durable job queue and its worker, on SQLite and Postgres: transactional enqueue, claims
that never overlap, leases that expire, fencing, retries, timeouts, cancellation, shutdown."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from functools import partial
from typing import Any

import pytest
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.db import Database
from maestrale.core.jobs.queue import MAX_ERROR_CHARS, JobQueue
from maestrale.core.jobs.tables import Job
from maestrale.core.jobs.worker import (
    JobContext,
    JobRegistry,
    PermanentJobError,
    Wakeup,
    Worker,
)

pytestmark = pytest.mark.both_databases()


@pytest.fixture
def queue(db: Database) -> JobQueue:
    return JobQueue(db, lease_seconds=30, backoff_base=0.01)


async def enqueue(db: Database, kind: str = "t.work", payload: Any = None, **kw: Any) -> str:
    async with db.transaction() as work:
        return (await JobQueue(db).enqueue(work.session, kind, payload or {}, **kw)).id


async def load(db: Database, job_id: str) -> Job:
    async with db.sessionmaker() as session:
        job = await session.get(Job, job_id)
        assert job is not None
        return job


async def follow_ups(db: Database, kind: str = "t.follow-up") -> list[dict[str, Any]]:
    async with db.sessionmaker() as session:
        return list((await session.execute(select(Job.payload).where(Job.kind == kind))).scalars())


@asynccontextmanager
async def running(w: Worker) -> AsyncIterator[None]:
    stop = asyncio.Event()
    task = asyncio.create_task(w.run(stop))
    try:
        yield
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)


def worker(db: Database, handlers: dict[str, Any] | JobRegistry, **kw: Any) -> Worker:
    registry = handlers if isinstance(handlers, JobRegistry) else JobRegistry()
    for kind, handler in handlers.items() if isinstance(handlers, dict) else ():
        registry.register(kind, handler)
    options = {"owner": "w1", "concurrency": 2, "lease_seconds": 3.0, "poll_seconds": 0.05, **kw}
    return Worker(db, registry, queue=JobQueue(db, backoff_base=0.01), grace_seconds=0.3, **options)


async def test_enqueue_belongs_to_the_callers_transaction(db: Database, queue: JobQueue) -> None:
    async def failing_request() -> None:
        async with db.transaction() as work:
            await queue.enqueue(work.session, "t.work", {"n": 1}, dedupe_key="k-rolled-back")
            raise RuntimeError("the request failed")

    with pytest.raises(RuntimeError):
        await failing_request()
    assert await follow_ups(db, kind="t.work") == []


async def test_enqueue_with_a_dedupe_key_is_idempotent(db: Database, queue: JobQueue) -> None:
    tenant = Tenant("org-1", "ws-1")
    async with db.transaction() as work:
        first = await queue.enqueue(work.session, "t.work", {"n": 1}, tenant=tenant, dedupe_key="k")
        again = await queue.enqueue(work.session, "t.work", {"n": 2}, dedupe_key="k")
        assert again.id == first.id
    async with db.transaction() as work:
        later = await queue.enqueue(work.session, "t.work", {"n": 3}, dedupe_key="k")
        assert (later.id, later.payload, later.workspace_id) == (first.id, {"n": 1}, "ws-1")
        assert await queue.get(work.session, first.id, tenant=Tenant("org-1", "ws-2")) is None
        assert (await queue.enqueue(work.session, "t.work", {}, dedupe_key="other")).id != first.id


async def test_claim_takes_due_jobs_by_priority_then_age(db: Database, queue: JobQueue) -> None:
    low = await enqueue(db, priority=0)
    high = await enqueue(db, priority=5)
    older = await enqueue(db, run_at=utcnow().replace(year=2020))
    await enqueue(db, delay=3600)  # not due
    await enqueue(db, kind="t.other")  # not asked for
    batches = [await queue.claim("w", limit=1, kinds=["t.work"]) for _ in range(4)]
    assert [[job.id for job in batch] for batch in batches] == [[high], [older], [low], []]
    job = await load(db, high)
    assert (job.status, job.attempts, job.lease_owner) == ("running", 1, "w") and job.started_at


async def test_concurrent_claimers_never_get_the_same_job(db: Database, queue: JobQueue) -> None:
    ids = {await enqueue(db) for _ in range(30)}
    batches = await asyncio.gather(
        *(queue.claim(f"w{i}", limit=3, kinds=["t.work"]) for i in range(20))
    )
    assert all(len(batch) <= 3 for batch in batches)
    claimed = [job.id for batch in batches for job in batch]
    assert len(claimed) == len(set(claimed)) == 30 and set(claimed) == ids
    assert len({job.token for batch in batches for job in batch}) == 30


async def test_expired_lease_is_reclaimed_and_fenced(db: Database) -> None:
    short = JobQueue(db, lease_seconds=0.2)
    job_id = await enqueue(db)
    [a] = await short.claim("A", limit=1, kinds=["t.work"])
    await asyncio.sleep(0.4)
    [b] = await short.claim("B", limit=1, kinds=["t.work"])
    assert (b.id, b.attempt, a.attempt) == (job_id, 2, 1) and b.token != a.token
    applied: list[str] = []

    async def effects(owner: str, session: AsyncSession) -> None:
        applied.append(owner)
        await short.enqueue(session, "t.follow-up", {"by": owner})

    assert (await short.heartbeat(job_id, a.token)).held is False
    assert await short.fail(job_id, a.token, "late") is None
    by_a, by_b = partial(effects, "A"), partial(effects, "B")
    assert await short.complete(job_id, a.token, {"by": "A"}, effects=by_a) is False
    assert await short.complete(job_id, b.token, {"by": "B"}, effects=by_b) is True
    job = await load(db, job_id)
    assert (job.status, job.result, job.attempts, applied) == ("succeeded", {"by": "B"}, 2, ["B"])
    assert await follow_ups(db) == [{"by": "B"}]


async def test_failing_effects_roll_the_completion_back(db: Database, queue: JobQueue) -> None:
    job_id = await enqueue(db)
    [job] = await queue.claim("w", limit=1, kinds=["t.work"])

    async def broken(session: AsyncSession) -> None:
        await queue.enqueue(session, "t.follow-up", {})
        raise RuntimeError("side effect failed")

    with pytest.raises(RuntimeError):
        await queue.complete(job_id, job.token, {"ok": True}, effects=broken)
    assert (await load(db, job_id)).status == "running"
    assert await queue.complete(job_id, job.token, None) is True
    assert await follow_ups(db) == []


async def test_lease_expired_on_the_last_attempt_fails_the_job(db: Database) -> None:
    short = JobQueue(db, lease_seconds=0.1)
    job_id = await enqueue(db, max_attempts=1)
    assert len(await short.claim("A", limit=1, kinds=["t.work"])) == 1
    await asyncio.sleep(0.3)
    assert await short.claim("B", limit=1, kinds=["t.work"]) == []
    job = await load(db, job_id)
    assert (job.status, job.lease_token) == ("failed", None)
    assert job.last_error == "lease expired after 1 attempts"


async def test_fail_retries_with_backoff_then_fails(db: Database, queue: JobQueue) -> None:
    job_id = await enqueue(db, max_attempts=3)
    statuses = []
    for _ in range(3):
        [claimed] = await queue.claim("w", limit=1, kinds=["t.work"])
        before = utcnow()
        statuses.append(await queue.fail(job_id, claimed.token, "x" * 10_000))
        job = await load(db, job_id)
        assert job.lease_token is None and len(job.last_error or "") == MAX_ERROR_CHARS
        assert job.run_at > before or job.status == "failed"
        await asyncio.sleep(0.2)  # well past the backoff (0.01 s, then 0.02 s, + 10 %)
    assert statuses == ["queued", "queued", "failed"]
    assert (await load(db, job_id)).attempts == 3
    steps = [JobQueue(db, jitter=0.0).backoff(n) for n in (1, 2, 3, 10, 20)]
    assert steps == [1.0, 2.0, 4.0, 300.0, 300.0]


async def test_worker_runs_retries_and_applies_effects_once(db: Database) -> None:
    calls: list[int] = []

    async def flaky(ctx: JobContext) -> dict[str, Any]:
        calls.append(ctx.attempt)
        if ctx.attempt < 3:
            raise ValueError(f"transient failure {ctx.attempt}")

        async def effects(session: AsyncSession) -> None:
            await JobQueue(db).enqueue(session, "t.follow-up", {"after": ctx.job_id})

        ctx.on_complete(effects)
        return {"attempt": ctx.attempt, "owner": ctx.owner}

    registry = {"t.work": flaky}
    job_id = await enqueue(db)
    other = await enqueue(db, kind="t.unknown")
    await worker(db, registry).run_until_idle(timeout=20)
    job = await load(db, job_id)
    assert (job.status, job.result) == ("succeeded", {"attempt": 3, "owner": "w1"})
    assert (calls, job.last_error) == ([1, 2, 3], "ValueError: transient failure 2")
    assert (await load(db, other)).status == "queued"  # unknown kinds are never claimed
    assert await follow_ups(db) == [{"after": job_id}]


async def test_permanent_errors_and_timeouts(db: Database) -> None:
    async def refuse(ctx: JobContext) -> None:
        raise PermanentJobError(f"bad input for key {ctx.payload['api_key']}")

    registry = JobRegistry()
    registry.register("t.refuse", refuse)
    registry.register("t.hang", Long(), timeout=0.2)
    refused = await enqueue(db, "t.refuse", {"api_key": "sk-very-secret"})
    hung = await enqueue(db, "t.hang", max_attempts=2)
    await worker(db, registry).run_until_idle(timeout=20)
    job = await load(db, refused)
    secret_free = "PermanentJobError: bad input for key [redacted]"
    assert (job.status, job.attempts, job.last_error) == ("failed", 1, secret_free)
    job = await load(db, hung)
    assert (job.status, job.attempts, job.last_error) == ("failed", 2, "timed out after 0.2 s")


class Long:
    """A handler that runs until cancelled, and says when it started and when it was stopped."""

    def __init__(self) -> None:
        self.started, self.stopped = asyncio.Event(), asyncio.Event()

    async def __call__(self, ctx: JobContext) -> None:
        self.started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            self.stopped.set()
            raise

    def registry(self) -> dict[str, Any]:
        return {"t.long": self}


async def test_cancel_queued_and_running_jobs(db: Database, queue: JobQueue) -> None:
    long = Long()
    queued = await enqueue(db, "t.long", delay=3600)
    async with db.transaction() as work:
        cancelled = await queue.request_cancel(work.session, queued)
        assert cancelled is not None and cancelled.status == "cancelled"
    job_id = await enqueue(db, "t.long")
    async with running(worker(db, long.registry(), lease_seconds=0.6)):
        await asyncio.wait_for(long.started.wait(), 10)
        async with db.transaction() as work:
            job = await queue.request_cancel(work.session, job_id)
            assert job is not None and (job.status, job.cancel_requested) == ("running", True)
        for _ in range(300):  # generous bound: 30 s
            if (job := await load(db, job_id)).status != "running":
                break
            await asyncio.sleep(0.1)
        assert (
            job.status == "cancelled"
            and long.stopped.is_set()
            and job.finished_at is not None
            and job.lease_token is None
        )
    assert (await load(db, queued)).attempts == 0


async def test_worker_stops_a_handler_whose_lease_was_lost(db: Database) -> None:
    long = Long()
    job_id = await enqueue(db, "t.long")
    async with running(worker(db, long.registry(), lease_seconds=0.6)):
        await asyncio.wait_for(long.started.wait(), 10)
        async with db.transaction() as work:  # as if another worker had reclaimed it
            lease = utcnow() + timedelta(seconds=60)  # (no sweep frees the new holder's lease)
            await work.session.execute(
                update(Job).values(lease_token="someone-else", lease_expires_at=lease)
            )
        await asyncio.wait_for(long.stopped.wait(), 10)
    job = await load(db, job_id)  # untouched: the new holder decides
    assert (job.status, job.lease_token, job.result) == ("running", "someone-else", None)


async def test_graceful_stop_releases_leases(db: Database, queue: JobQueue) -> None:
    long = Long()
    job_id = await enqueue(db, "t.long")
    async with running(worker(db, long.registry(), lease_seconds=30.0)):  # then a graceful stop
        await asyncio.wait_for(long.started.wait(), 10)
    job = await load(db, job_id)
    assert (job.status, job.attempts, job.lease_token) == ("queued", 0, None)
    assert long.stopped.is_set()
    [again] = await queue.claim("w2", limit=1, kinds=["t.long"])  # at once, no lease to wait
    assert (again.id, again.attempt) == (job_id, 1)


async def test_run_until_idle_runs_everything_or_times_out(db: Database) -> None:
    async def record(ctx: JobContext) -> dict[str, Any]:
        await asyncio.sleep(0.05)
        return {"n": ctx.payload["n"]}

    registry = {"t.long": Long(), "t.work": record}
    ids = [await enqueue(db, payload={"n": n}) for n in range(5)]
    await worker(db, registry, concurrency=3).run_until_idle(timeout=20)
    assert [(await load(db, i)).result for i in ids] == [{"n": n} for n in range(5)]
    job_id = await enqueue(db, "t.long")
    with pytest.raises(TimeoutError):
        await worker(db, registry).run_until_idle(timeout=0.5)
    assert (await load(db, job_id)).status == "queued"  # handed back, not lost


async def test_after_commit_actions_follow_the_completion_only(
    db: Database, queue: JobQueue
) -> None:
    done: list[str] = []
    job_id = await enqueue(db)
    [job] = await queue.claim("w", limit=1, kinds=["t.work"])

    async def broken(session: AsyncSession) -> None:
        raise RuntimeError("side effect failed")

    def after(label: str) -> Any:
        async def action() -> None:
            # The completion is visible once the action runs: it follows the commit.
            done.append(f"{label}:{(await load(db, job_id)).status}")

        return action

    with pytest.raises(RuntimeError):
        await queue.complete(job_id, job.token, None, effects=broken, after_commit=[after("a")])
    assert await queue.complete(job_id, "not-the-lease", None, after_commit=[after("b")]) is False
    assert done == []
    assert await queue.complete(job_id, job.token, None, after_commit=[after("c")]) is True
    assert done == ["c:succeeded"]


async def test_a_handler_acts_after_its_completion_commits(db: Database) -> None:
    seen: list[str] = []

    async def handler(ctx: JobContext) -> dict[str, Any]:
        async def effects(session: AsyncSession) -> None:
            await JobQueue(db).enqueue(session, "t.follow-up", {"after": ctx.job_id})

        async def after() -> None:
            seen.append(str((await follow_ups(db))[0]["after"]))

        ctx.on_complete(effects)
        ctx.after_complete(after)
        return {}

    job_id = await enqueue(db)
    await worker(db, {"t.work": handler}).run_until_idle(timeout=20)
    assert (await load(db, job_id)).status == "succeeded" and seen == [job_id]


async def test_workspaces_take_turns_within_their_bound(db: Database) -> None:
    # B queued five long jobs first, then A one: claims alternate, and B never runs more than
    # its bound at once (first come first served gave B every slot).
    queue = JobQueue(db, per_workspace=3)
    a, b = Tenant("org", "workspace-a"), Tenant("org", "workspace-b")
    base = utcnow().replace(year=2020)
    for minute in range(5):
        await enqueue(db, tenant=b, run_at=base.replace(minute=minute))
    for minute in (10, 11):
        await enqueue(db, tenant=a, run_at=base.replace(minute=minute))
    await enqueue(db, priority=5)  # a job of no workspace: unbounded, by priority first
    claims = [await queue.claim("w", limit=1, kinds=["t.work"]) for _ in range(7)]
    order = [batch[0].workspace_id if batch else "-" for batch in claims]
    assert order == [None, *["workspace-b", "workspace-a"] * 2, "workspace-b", "-"]
    # One of B's jobs ends: its next one may run.
    job = next(batch[0] for batch in claims if batch and batch[0].workspace_id == b.workspace_id)
    assert await queue.complete(job.id, job.token, None)
    assert [j.workspace_id for j in await queue.claim("w", limit=4, kinds=["t.work"])] == [
        "workspace-b"
    ]


async def test_concurrent_claimers_keep_a_workspace_within_its_bound(db: Database) -> None:
    queue = JobQueue(db, per_workspace=3)
    flooder = Tenant("org", "workspace-b")
    for _ in range(12):
        await enqueue(db, tenant=flooder)
    other = await enqueue(db, tenant=Tenant("org", "workspace-a"))
    batches = await asyncio.gather(
        *(queue.claim(f"w{i}", limit=2, kinds=["t.work"]) for i in range(8))
    )
    claimed = [job for batch in batches for job in batch]
    assert sum(job.workspace_id == flooder.workspace_id for job in claimed) == 3
    assert other in {job.id for job in claimed}


async def test_a_rung_worker_claims_at_once_not_at_its_next_poll(db: Database) -> None:
    ran = asyncio.Event()

    async def handler(ctx: JobContext) -> None:
        ran.set()

    wakeup = Wakeup()
    async with running(worker(db, {"t.work": handler}, poll_seconds=60.0, wakeup=wakeup)):
        await asyncio.sleep(0.2)  # its first claim found nothing: the next poll is a minute away
        await enqueue(db)
        wakeup.ring()
        await asyncio.wait_for(ran.wait(), 10)
