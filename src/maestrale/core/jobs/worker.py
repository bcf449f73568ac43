"""Workers: claim due jobs, run their handlers under a heart-beaten lease, and finish them only
while the lease still holds. A handler is `async def handler(ctx: JobContext) -> dict | None`."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Coroutine, Mapping
from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.db import Database
from maestrale.core.fair import BATCH, Share, reset_current, set_current
from maestrale.core.jobs.queue import ClaimedJob, Effects, Heartbeat, JobQueue
from maestrale.core.repeated_failure import RepeatedFailure
from maestrale.core.uow import AfterCommit
from maestrale.tracing import job_span

logger = logging.getLogger("maestrale.jobs")
FIRST = asyncio.FIRST_COMPLETED

Handler = Callable[["JobContext"], Coroutine[Any, Any, dict[str, Any] | None]]
_SECRET_WORDS = ("key", "token", "secret", "password", "authorization", "credential")


class PermanentJobError(Exception):
    """Raise from a handler to fail the job at once, without retry."""


class JobInterrupted(Exception):
    """Raised by `JobContext.heartbeat()` / `check()` once the job was cancelled or its lease
    lost: the handler should stop; the worker records the right outcome."""


@dataclasses.dataclass(frozen=True, slots=True)
class JobSpec:
    """A registered job kind: its handler and its optional timeout in seconds."""

    kind: str
    handler: Handler
    timeout: float | None = None


class JobRegistry:
    """The job kinds a worker runs; a worker claims only these kinds."""

    def __init__(self) -> None:
        self._specs: dict[str, JobSpec] = {}

    def register(self, kind: str, handler: Handler, *, timeout: float | None = None) -> None:
        """Add a kind; registering one twice is a programming error."""
        if kind in self._specs:
            raise ValueError(f"job kind {kind!r} is already registered")
        self._specs[kind] = JobSpec(kind, handler, timeout)

    def get(self, kind: str) -> JobSpec | None:
        """The spec of `kind`, or None."""
        return self._specs.get(kind)

    @property
    def kinds(self) -> frozenset[str]:
        """Every registered kind."""
        return frozenset(self._specs)


class JobContext:
    """What a handler gets: the job, the database (open your own short units of work; never
    across a model or network call), a heartbeat, the cancellation state, `on_complete` to
    commit side effects with the completion and `after_complete` to act once it committed."""

    def __init__(self, job: ClaimedJob, db: Database, queue: JobQueue) -> None:
        self.job_id, self.kind, self.payload = job.id, job.kind, job.payload
        self.attempt, self.max_attempts = job.attempt, job.max_attempts
        self.workspace_id, self.organization_id = job.workspace_id, job.organization_id
        self.db, self.owner = db, job.owner
        self._token, self._queue = job.token, queue
        self.lease_lost = False
        self.cancel_requested = False
        self._effects: list[Effects] = []
        self._after: list[AfterCommit] = []

    @property
    def tenant(self) -> Tenant:
        """The workspace the job was enqueued for: what its repositories are scoped to."""
        if self.organization_id is None or self.workspace_id is None:
            raise PermanentJobError(f"job {self.job_id} ({self.kind}) has no workspace")
        return Tenant(self.organization_id, self.workspace_id)

    @property
    def interrupted(self) -> bool:
        """True once the job was cancelled or its lease lost: stop working."""
        return self.lease_lost or self.cancel_requested

    def check(self) -> None:
        """Raise `JobInterrupted` if the handler should stop."""
        if self.interrupted:
            reason = "lease lost" if self.lease_lost else "cancel requested"
            raise JobInterrupted(reason)

    def record(self, beat: Heartbeat) -> None:
        """Remember what a heartbeat said (the worker's own heartbeats call this too)."""
        self.lease_lost = self.lease_lost or not beat.held
        self.cancel_requested = self.cancel_requested or beat.cancel_requested

    async def heartbeat(self) -> None:
        """Extend the lease now (long steps between the worker's own heartbeats); raises
        `JobInterrupted` if the job was cancelled or the lease lost."""
        self.record(await self._queue.heartbeat(self.job_id, self._token))
        self.check()

    def on_complete(self, effects: Effects) -> None:
        """Run `effects(session)` in the unit of work that marks the job succeeded: they commit
        exactly once, and never if the lease was lost."""
        self._effects.append(effects)

    def after_complete(self, action: AfterCommit) -> None:
        """Run `action()` (sync or async) once that unit of work has committed, never if the
        lease was lost or an effect failed: for what must not run inside a transaction (removing
        blobs, calling out). Register it before the handler returns."""
        self._after.append(action)

    async def run_effects(self, session: AsyncSession) -> None:
        """Apply the registered effects (called by the worker inside the completion)."""
        for effects in self._effects:
            await effects(session)


def describe_error(exc: BaseException, payload: Mapping[str, Any]) -> str:
    """`Type: message`, with secret-looking payload values blanked out of the message."""
    text = f"{type(exc).__name__}: {exc}"
    for key, value in payload.items():
        secret = any(word in key.lower() for word in _SECRET_WORDS)
        if secret and isinstance(value, str) and len(value) >= 4:
            text = text.replace(value, "[redacted]")
    return text


def _outcome(handler: asyncio.Task[Any], reason: str) -> str:
    """How an attempt ended: `succeeded`, `failed` (the handler raised) or why it was stopped
    (`cancelled`, `timeout`, `released`, `lost`)."""
    if reason != "done":
        return reason
    if handler.cancelled():
        return "cancelled"
    return "failed" if handler.exception() is not None else "succeeded"


class Wakeup:
    """A process's ring for its in-process worker: a request that queued a job rings it once its
    transaction has committed, and the worker claims at once instead of at its next poll (the
    poll stays, for jobs that other processes queue)."""

    def __init__(self) -> None:
        self._rung = asyncio.Event()

    def ring(self) -> None:
        self._rung.set()

    async def wait(self) -> None:
        await self._rung.wait()
        self._rung.clear()


class Worker:
    """Claims up to `concurrency` jobs at a time and runs each in its own task."""

    def __init__(
        self,
        db: Database,
        registry: JobRegistry,
        *,
        owner: str,
        concurrency: int,
        lease_seconds: float,
        poll_seconds: float,
        queue: JobQueue | None = None,
        grace_seconds: float = 10.0,
        per_workspace: int | None = None,
        wakeup: Wakeup | None = None,
    ) -> None:
        if concurrency < 1 or lease_seconds <= 0 or poll_seconds <= 0:
            raise ValueError("concurrency, lease_seconds and poll_seconds must be positive")
        self.db, self.registry, self.owner = db, registry, owner
        self.concurrency, self.poll_seconds = concurrency, poll_seconds
        self.lease_seconds, self.grace_seconds = lease_seconds, grace_seconds
        base = queue or JobQueue(db)
        # `per_workspace`: jobs of one workspace running at once, on all workers together.
        bound = base.per_workspace if per_workspace is None else per_workspace
        self.queue = dataclasses.replace(base, lease_seconds=lease_seconds, per_workspace=bound)
        self._release = asyncio.Event()  # set at shutdown: handlers stop, leases go back
        self.wakeup = wakeup
        self._claims = RepeatedFailure(logger, "claiming jobs failed")

    async def run(self, stop: asyncio.Event) -> None:
        """Work until `stop` is set, then stop claiming, let running jobs finish for up to
        `grace_seconds`, and give the rest back to the queue."""
        await self._loop(stop, deadline=None)

    async def run_until_idle(self, timeout: float) -> None:
        """Work until nothing is running and no queued job falls due within `timeout` (tests);
        raises TimeoutError if work remains when it passes."""
        loop = asyncio.get_running_loop()
        if not await self._loop(asyncio.Event(), deadline=loop.time() + timeout):
            raise TimeoutError(f"jobs still pending after {timeout} s")

    async def _loop(self, stop: asyncio.Event, *, deadline: float | None) -> bool:
        loop = asyncio.get_running_loop()
        tasks: set[asyncio.Task[None]] = set()
        stopping = asyncio.ensure_future(stop.wait())
        rung = asyncio.ensure_future(self.wakeup.wait()) if self.wakeup is not None else None
        self._release.clear()
        idle = False
        try:
            while not stop.is_set() and (deadline is None or loop.time() < deadline):
                for job in await self._claim(self.concurrency - len(tasks)):
                    task = asyncio.create_task(self._execute(job), name=f"job:{job.id}")
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                wait = self.poll_seconds
                if deadline is not None and not tasks:
                    due = await self.queue.next_due(self.registry.kinds)
                    left = deadline - loop.time()
                    if due is None or due > utcnow() + timedelta(seconds=left):
                        idle = True
                        break
                    wait = min(wait, max(0.0, (due - utcnow()).total_seconds()))
                waiting = {stopping, *tasks} if rung is None else {stopping, rung, *tasks}
                await asyncio.wait(waiting, timeout=wait, return_when=FIRST)
                if rung is not None and rung.done() and self.wakeup is not None:
                    rung = asyncio.ensure_future(self.wakeup.wait())
        finally:
            stopping.cancel()
            if rung is not None:
                rung.cancel()
            await self._shutdown(tasks, grace=self.grace_seconds if deadline is None else 0.0)
        return idle

    async def _claim(self, room: int) -> list[ClaimedJob]:
        if room <= 0:
            return []
        try:
            claimed = await self.queue.claim(self.owner, limit=room, kinds=self.registry.kinds)
        except Exception as exc:
            # A database outage must not kill the worker: poll again later.
            self._claims.failed(exc)
            return []
        self._claims.succeeded()
        return claimed

    async def _shutdown(self, tasks: set[asyncio.Task[None]], *, grace: float) -> None:
        if not tasks:
            return
        _, pending = await asyncio.wait(set(tasks), timeout=grace)
        if pending:
            logger.info("releasing %d running job(s) at shutdown", len(pending))
            self._release.set()
            _, stuck = await asyncio.wait(pending, timeout=max(grace, self.lease_seconds))
            for task in stuck:
                task.cancel()

    async def _execute(self, job: ClaimedJob) -> None:
        spec = self.registry.get(job.kind)
        ctx = JobContext(job, self.db, self.queue)
        try:
            if spec is None:  # claim filters by kind; only a registry change could get here
                await self.queue.fail(job.id, job.token, f"unknown kind {job.kind}", retry=False)
                return
            logger.info("job %s (%s) attempt %d started", job.id, job.kind, job.attempt)
            # The handler's task starts inside the span: its work is traced under it. It runs
            # as its workspace's batch work: local engines and the sandbox serve interactive
            # calls first, and workspaces in turn.
            with job_span(job.kind, job.id, job.attempt) as traced:
                shared = set_current(Share(job.workspace_id or "", BATCH))
                try:
                    handler = asyncio.create_task(spec.handler(ctx))
                finally:
                    reset_current(shared)
                reason = await self._supervise(ctx, handler, spec.timeout)
                traced.set("maestrale.job.outcome", _outcome(handler, reason))
                await self._finish(ctx, handler, reason, spec.timeout)
        except Exception:
            # The lease then expires and another worker takes the job over.
            logger.exception("job %s (%s): finishing failed", job.id, job.kind)

    async def _supervise(
        self, ctx: JobContext, handler: asyncio.Task[Any], timeout: float | None
    ) -> str:
        """Wait for the handler while heart-beating; stop it when the job was cancelled, the
        lease lost, the timeout passed or the worker is shutting down."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        interval = self.lease_seconds / 3
        next_beat = loop.time() + interval
        releasing = asyncio.ensure_future(self._release.wait())
        try:
            while True:
                wake = next_beat if deadline is None else min(next_beat, deadline)
                pause = max(0.0, wake - loop.time())
                done, _ = await asyncio.wait({handler, releasing}, timeout=pause, return_when=FIRST)
                if handler in done:
                    return "done"
                if releasing in done:
                    reason = "released"
                    break
                if deadline is not None and loop.time() >= deadline:
                    reason = "timeout"
                    break
                next_beat = loop.time() + interval
                try:
                    ctx.record(await self.queue.heartbeat(ctx.job_id, ctx._token))
                except Exception:
                    # The fence keeps a late completion safe; keep working and retry.
                    logger.warning("job %s: heartbeat failed", ctx.job_id, exc_info=True)
                if ctx.interrupted and not handler.done():
                    reason = "lost" if ctx.lease_lost else "cancelled"
                    break
        finally:
            releasing.cancel()
        handler.cancel()
        await asyncio.wait({handler}, timeout=self.grace_seconds)
        return reason

    async def _finish(
        self, ctx: JobContext, handler: asyncio.Task[Any], reason: str, timeout: float | None
    ) -> None:
        q, job_id, token, kind = self.queue, ctx.job_id, ctx._token, ctx.kind
        error = None if not handler.done() or handler.cancelled() else handler.exception()
        if reason == "lost" or ctx.lease_lost:
            logger.warning("job %s (%s): lease lost, another worker owns it", job_id, kind)
        elif reason == "released":
            await q.release(job_id, token, "released: worker shutting down")
        elif reason == "cancelled" or (ctx.cancel_requested and reason == "done" and error):
            # fail() turns a job whose cancel was requested into `cancelled`.
            status = await q.fail(job_id, token, "cancelled on request", retry=False)
            logger.info("job %s (%s) %s", job_id, kind, status or "lost its lease")
        elif reason == "timeout":
            status = await q.fail(job_id, token, f"timed out after {timeout} s")
            logger.warning("job %s (%s) timed out: %s", job_id, kind, status)
        elif handler.cancelled() or error is not None:
            permanent = isinstance(error, PermanentJobError)
            text = describe_error(error, ctx.payload) if error else "handler was cancelled"
            status = await q.fail(job_id, token, text, retry=not permanent)
            logger.warning("job %s (%s) failed (%s): %.500s", job_id, kind, status, text)
        else:
            await self._complete(ctx, handler.result())

    async def _complete(self, ctx: JobContext, result: Any) -> None:
        if result is not None and not isinstance(result, dict):
            error = f"handler returned {type(result).__name__}, not a dict or None"
            await self.queue.fail(ctx.job_id, ctx._token, error, retry=False)
            return
        effects = ctx.run_effects if ctx._effects else None
        try:
            done = await self.queue.complete(
                ctx.job_id, ctx._token, result, effects=effects, after_commit=ctx._after
            )
        except Exception as exc:
            text = describe_error(exc, ctx.payload)
            status = await self.queue.fail(ctx.job_id, ctx._token, f"completing: {text}")
            logger.warning("job %s effects failed (%s): %.500s", ctx.job_id, status, text)
            return
        if done:
            logger.info("job %s (%s) succeeded", ctx.job_id, ctx.kind)
        else:
            logger.warning("job %s (%s): lease lost before completion", ctx.job_id, ctx.kind)
