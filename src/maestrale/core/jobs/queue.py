"""The SQL of the durable job queue: enqueue in the caller's transaction, claim due jobs under
leases (Postgres: `FOR UPDATE SKIP LOCKED`; SQLite: one UPDATE under its single writer, fenced
by the condition it selected on), finish a job only while its lease token still holds.

With `per_workspace`, claims share the workers between workspaces: a workspace runs at most that
many jobs at once (on all workers together), and within a priority the workspaces take turns
(a workspace's n-th job, counting those it runs already, comes after every other workspace's
(n-1)-th), so one workspace's long jobs never hold every slot and its flood never stands in
front of another's job. Jobs of no workspace are not bounded."""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.db import Database, UTCDateTime
from maestrale.core.jobs.tables import Job, JobStatus
from maestrale.core.uow import AfterCommit

logger = logging.getLogger("maestrale.jobs")
MAX_ERROR_CHARS = 4000
# The transaction-scoped advisory lock Postgres claims take with `per_workspace`: the running
# counts a claim reads must not change under it (SQLite's single writer serialises them anyway).
CLAIM_LOCK = 0x6D61657374726C  # "maestrl"
Effects = Callable[[AsyncSession], Awaitable[None]]
_RUNNING, _QUEUED, _CANCELLED = JobStatus.RUNNING, JobStatus.QUEUED, JobStatus.CANCELLED


@dataclass(frozen=True, slots=True)
class ClaimedJob:
    """A job handed to one worker: `token` is its lease and must accompany every later call."""

    id: str
    kind: str
    payload: dict[str, Any]
    attempt: int
    max_attempts: int
    priority: int
    run_at: datetime
    token: str
    owner: str
    organization_id: str | None
    workspace_id: str | None


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """Whether the lease is still held, and whether someone asked to cancel the job."""

    held: bool
    cancel_requested: bool


def _update() -> Any:  # callers re-read the rows they care about: no session synchronisation
    return sa.update(Job).execution_options(synchronize_session=False)


async def _set(session: AsyncSession, where: Any, returning: Any = Job.status, **v: Any) -> Any:
    # One fenced single-row UPDATE: `returning` of the row it changed, or None.
    changed = await session.execute(_update().where(where).values(**v).returning(returning))
    return changed.scalar_one_or_none()


def _held(job_id: str, token: str) -> sa.ColumnElement[bool]:
    return sa.and_(Job.id == job_id, Job.lease_token == token, Job.status == _RUNNING)


def _expired(entity: Any, now: datetime) -> sa.ColumnElement[bool]:
    return sa.and_(entity.status == _RUNNING, entity.lease_expires_at < now)


def _claimable(entity: Any, now: datetime) -> sa.ColumnElement[bool]:
    due = sa.and_(entity.status == _QUEUED, entity.run_at <= now)
    retake = sa.and_(entity.attempts < entity.max_attempts, sa.not_(entity.cancel_requested))
    return sa.or_(due, sa.and_(_expired(entity, now), retake))


async def _end_lease(session: AsyncSession, fence: Any, **values: Any) -> Any:
    # The job's next state, written only if `fence` (the lease token) still holds. Error text
    # is bounded: a runaway message must not bloat the row.
    if isinstance(error := values.get("last_error"), str):
        values["last_error"] = error[:MAX_ERROR_CHARS]
    values.update(lease_token=None, lease_expires_at=None, updated_at=utcnow())
    return await _set(session, fence, **values)


def _if_cancel_requested(then: Any, otherwise: Any) -> Any:
    # Resolved inside the UPDATE, so a cancel request landing concurrently is never lost.
    return sa.case((Job.cancel_requested, then), else_=otherwise)


@dataclass
class JobQueue:
    """Every statement of the job queue. `backoff_base` is configurable so tests retry fast;
    `per_workspace` bounds the jobs of one workspace running at once (None: unbounded)."""

    db: Database
    _: KW_ONLY
    lease_seconds: float = 30.0
    per_workspace: int | None = None
    backoff_base: float = 1.0
    backoff_factor: float = 2.0
    backoff_cap: float = 300.0
    jitter: float = 0.1

    def backoff(self, attempts: int) -> float:
        """Seconds to wait after `attempts` tries; jittered so failures do not retry in step."""
        delay = min(self.backoff_cap, self.backoff_base * self.backoff_factor ** (attempts - 1))
        return delay + random.uniform(0, delay * self.jitter)

    async def enqueue(
        self,
        session: AsyncSession,
        kind: str,
        payload: Mapping[str, Any],
        *,
        tenant: Tenant | None = None,
        max_attempts: int = 5,
        run_at: datetime | None = None,
        delay: float | timedelta | None = None,
        dedupe_key: str | None = None,
        priority: int = 0,
    ) -> Job:
        """Add a job in the caller's transaction (flushed, never committed). With a `dedupe_key`
        that already exists the existing job is returned; dedupe keys are global, so callers
        namespace them (e.g. `batch:<batch id>`)."""
        if run_at is not None and delay is not None:
            raise ValueError("give run_at or delay, not both")
        if not isinstance(delay, timedelta):
            delay = timedelta(seconds=delay or 0)
        values: dict[str, Any] = {
            "kind": kind,
            "payload": dict(payload),
            "priority": priority,
            "max_attempts": max_attempts,
            "run_at": run_at if run_at is not None else utcnow() + delay,
            "dedupe_key": dedupe_key,
            "organization_id": tenant.organization_id if tenant else None,
            "workspace_id": tenant.workspace_id if tenant else None,
        }
        if dedupe_key is None:
            job = Job(**values)
            session.add(job)
            await session.flush()
            return job
        # ON CONFLICT DO NOTHING, not a caught IntegrityError: a failed INSERT would abort the
        # caller's whole Postgres transaction.
        dialect = postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
        insert = dialect.insert(Job).values(**values)
        await session.execute(insert.on_conflict_do_nothing(index_elements=[Job.dedupe_key]))
        by_key = sa.select(Job).where(Job.dedupe_key == dedupe_key)
        return (await session.execute(by_key)).scalar_one()

    async def get(
        self, session: AsyncSession, job_id: str, *, tenant: Tenant | None = None
    ) -> Job | None:
        """The job, or None; with `tenant`, a job of another workspace is None too."""
        query = sa.select(Job).where(Job.id == job_id)
        if tenant is not None:
            query = query.where(Job.workspace_id == tenant.workspace_id)
        found = await session.execute(query.execution_options(populate_existing=True))
        return found.scalar_one_or_none()

    async def request_cancel(
        self, session: AsyncSession, job_id: str, *, tenant: Tenant | None = None
    ) -> Job | None:
        """Cancel a queued job at once; ask the worker of a running one to stop (it sees the
        request on its next heartbeat). Runs in the caller's transaction."""
        if await self.get(session, job_id, tenant=tenant) is None:
            return None
        now = utcnow()
        # Both UPDATEs are fenced by the status they expect, so a racing claim is harmless.
        queued, running = (sa.and_(Job.id == job_id, Job.status == s) for s in (_QUEUED, _RUNNING))
        await _set(session, queued, status=_CANCELLED, finished_at=now, updated_at=now)
        await _set(session, running, cancel_requested=True, updated_at=now)
        return await self.get(session, job_id, tenant=tenant)

    async def claim(self, owner: str, *, limit: int, kinds: Collection[str]) -> list[ClaimedJob]:
        """Lease up to `limit` due jobs of `kinds`: queued ones whose time has come and running
        ones whose lease expired (their worker died), highest priority then oldest first."""
        if limit <= 0 or not kinds:
            return []
        kinds, now = list(kinds), utcnow()
        async with self.db.transaction() as work:
            postgres = work.session.get_bind().dialect.name == "postgresql"
            if postgres and self.per_workspace is not None:
                await work.session.execute(sa.select(sa.func.pg_advisory_xact_lock(CLAIM_LOCK)))
            await self._sweep_expired(work.session, now)
            # A materialised CTE runs once; as `IN (subquery)` Postgres may rescan the LIMITed
            # SKIP LOCKED select per row and hand out more than `limit` jobs.
            chosen = self._choose(kinds, now, limit).cte("chosen").prefix_with("MATERIALIZED")
            # Made by the database so that each row of the UPDATE gets its own token.
            token: Any = sa.func.lower(sa.func.hex(sa.func.randomblob(16)))
            if postgres:
                token = sa.cast(sa.func.gen_random_uuid(), sa.String)
            claimed = await work.session.execute(
                _update()
                .where(Job.id.in_(sa.select(chosen.c.id)), _claimable(Job, now))
                .values(
                    status=_RUNNING,
                    attempts=Job.attempts + 1,
                    lease_token=token,
                    lease_owner=owner,
                    updated_at=now,
                    lease_expires_at=now + timedelta(seconds=self.lease_seconds),
                    started_at=sa.func.coalesce(Job.started_at, sa.literal(now, UTCDateTime())),
                )
                .returning(
                    Job.id,
                    Job.kind,
                    Job.payload,
                    Job.attempts.label("attempt"),
                    Job.max_attempts,
                    Job.priority,
                    Job.run_at,
                    Job.lease_token.label("token"),
                    Job.organization_id,
                    Job.workspace_id,
                )
            )
            jobs = [ClaimedJob(owner=owner, **row._mapping) for row in claimed.all()]
        return sorted(jobs, key=lambda job: (-job.priority, job.run_at))

    def _choose(self, kinds: list[str], now: datetime, limit: int) -> Any:
        """The ids of the jobs to claim: highest priority, then (with `per_workspace`) each
        workspace's turn, then oldest; locked, skipping rows another transaction holds."""
        pick = aliased(Job)
        if self.per_workspace is None:
            return (
                sa.select(pick.id)
                .where(pick.kind.in_(kinds), _claimable(pick, now))
                .order_by(pick.priority.desc(), pick.run_at, pick.created_at)
                .limit(limit)
                .with_for_update(skip_locked=True)  # rendered on Postgres only
            )
        # Jobs each workspace runs now (a lease that expired is a job to take over, not one
        # running), and the rank of each claimable job within its workspace. The window runs in
        # its own CTE: Postgres refuses FOR UPDATE next to a window function.
        live = aliased(Job)
        running = (
            sa.select(live.workspace_id, sa.func.count().label("jobs"))
            .where(live.status == _RUNNING, live.lease_expires_at >= now)
            .where(live.workspace_id.is_not(None))
            .group_by(live.workspace_id)
            .cte("running")
        )
        mine = aliased(Job)
        rank = sa.func.row_number().over(
            partition_by=mine.workspace_id,
            order_by=(mine.priority.desc(), mine.run_at, mine.created_at),
        )
        ranked = (
            sa.select(mine.id, rank.label("rank"))
            .where(mine.kind.in_(kinds), _claimable(mine, now))
            .cte("ranked")
        )
        turn = ranked.c.rank + sa.func.coalesce(running.c.jobs, 0)
        return (
            sa.select(pick.id)
            .join(ranked, ranked.c.id == pick.id)
            .outerjoin(running, running.c.workspace_id == pick.workspace_id)
            .where(sa.or_(pick.workspace_id.is_(None), turn <= self.per_workspace))
            .order_by(pick.priority.desc(), turn, pick.run_at, pick.created_at)
            .limit(limit)
            .with_for_update(of=pick, skip_locked=True)  # rendered on Postgres only
        )

    async def _sweep_expired(self, session: AsyncSession, now: datetime) -> None:
        """Finish dead workers' jobs that must not run again (cancel requested, attempts used)."""
        old = aliased(Job)
        doomed = sa.or_(old.cancel_requested, old.attempts >= old.max_attempts)
        ids = sa.select(old.id).where(_expired(old, now), doomed).with_for_update(skip_locked=True)
        exhausted = "lease expired after " + sa.cast(Job.attempts, sa.String) + " attempts"
        swept = await session.execute(
            _update()
            .where(Job.id.in_(ids), _expired(Job, now))
            .values(
                status=_if_cancel_requested(_CANCELLED, JobStatus.FAILED),
                last_error=_if_cancel_requested("cancelled; lease expired", exhausted),
                lease_token=None,
                lease_expires_at=None,
                finished_at=now,
                updated_at=now,
            )
            .returning(Job.id, Job.status)
        )
        for job_id, status in swept.all():
            logger.warning("job %s %s: its lease expired", job_id, status)

    async def heartbeat(self, job_id: str, token: str) -> Heartbeat:
        """Extend the lease if `token` still holds it."""
        now = utcnow()
        async with self.db.transaction() as work:
            cancel_requested = await _set(
                work.session,
                _held(job_id, token),
                Job.cancel_requested,
                lease_expires_at=now + timedelta(seconds=self.lease_seconds),
                updated_at=now,
            )
        return Heartbeat(cancel_requested is not None, bool(cancel_requested))

    async def complete(
        self,
        job_id: str,
        token: str,
        result: dict[str, Any] | None,
        *,
        effects: Effects | None = None,
        after_commit: Sequence[AfterCommit] = (),
    ) -> bool:
        """Succeed the job and run `effects` in that unit of work, only if `token` still holds
        the lease (else False, no effects); if `effects` raises, nothing commits. The
        `after_commit` actions run once it has committed, never otherwise."""
        async with self.db.transaction() as work:
            # The fenced UPDATE comes first: it takes the row (or SQLite's write) lock, so no
            # claim can slip in before the effects commit.
            done = await _end_lease(
                work.session,
                _held(job_id, token),
                status=JobStatus.SUCCEEDED,
                finished_at=utcnow(),
                result=sa.null() if result is None else result,
            )
            if done is None:
                return False
            for action in after_commit:
                work.on_commit(action)
            if effects is not None:
                await effects(work.session)
        return True

    async def fail(self, job_id: str, token: str, error: str, *, retry: bool = True) -> str | None:
        """Record a failed attempt: queued again after a backoff if `retry` and attempts are
        left, else failed (cancelled if a cancel was requested). Returns the new status, or None
        if `token` no longer holds the lease."""
        async with self.db.transaction() as work:
            counts = sa.select(Job.attempts, Job.max_attempts).where(_held(job_id, token))
            row = (await work.session.execute(counts)).first()
            if row is None:
                return None
            now, again = utcnow(), retry and row.attempts < row.max_attempts
            finished = sa.literal(now, UTCDateTime())
            status = await _end_lease(
                work.session,
                _held(job_id, token),
                status=_if_cancel_requested(_CANCELLED, _QUEUED if again else JobStatus.FAILED),
                finished_at=_if_cancel_requested(finished, sa.null() if again else finished),
                run_at=now + timedelta(seconds=self.backoff(row.attempts)) if again else Job.run_at,
                last_error=error,
            )
        return None if status is None else str(status)

    async def release(self, job_id: str, token: str, reason: str) -> bool:
        """Give a job back at once (its worker is shutting down): queued and due now, the
        interrupted attempt not counted; cancelled instead if a cancel was requested."""
        finished = sa.literal(now := utcnow(), UTCDateTime())
        async with self.db.transaction() as work:
            status = await _end_lease(
                work.session,
                _held(job_id, token),
                status=_if_cancel_requested(_CANCELLED, _QUEUED),
                attempts=_if_cancel_requested(Job.attempts, Job.attempts - 1),
                finished_at=_if_cancel_requested(finished, sa.null()),
                run_at=now,
                last_error=reason,
            )
        return status is not None

    async def next_due(self, kinds: Collection[str]) -> datetime | None:
        """When the earliest queued job of `kinds` is due (for idle detection)."""
        due = sa.select(sa.func.min(Job.run_at)).where(Job.status == _QUEUED)
        query = due.where(Job.kind.in_(list(kinds)))
        async with self.db.transaction() as work:
            return (await work.session.execute(query)).scalar_one_or_none()
