"""Running a batch job's lines: read the input files line by line, skip lines already recorded,
run the others through the live endpoints' code path under the per-job and per-worker limits,
and record results in small transactions. Memory stays flat: lines are read as they are needed
and results leave memory at each flush.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator
from datetime import timedelta
from typing import Any

import orjson

from maestrale.batch.endpoints import LineServices, execute, target
from maestrale.batch.progress import DoneLines, Progress
from maestrale.batch.tables import BatchJob, BatchStatus
from maestrale.core.clock import as_utc, utcnow
from maestrale.core.errors import INTERNAL_ERROR, AppError, error_body
from maestrale.core.jobs.worker import JobContext
from maestrale.files.lines import TOO_LONG, iter_lines
from maestrale.gateway.hooks import Caller

log = logging.getLogger("maestrale.batch")

FLUSH_SECONDS = 0.2
FLUSH_ROWS = 500
MAX_PENDING = 5000
STATUS_POLL_SECONDS = 1.0
RATE_LIMIT_RETRIES = 4
RATE_LIMIT_DELAY = 0.5  # doubled at each retry, unless the answer says how long to wait


class LineError(Exception):
    """A line that cannot be read as `{"custom_id", "body"}`."""


class InputMissing(Exception):
    """An input file was deleted before the job could read it."""


def _read_line(raw: bytes, line: int) -> tuple[str, dict[str, Any]]:
    if raw == TOO_LONG:
        raise LineError(f"line {line} of the job is too long to be read")
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise LineError(f"line {line} of the job is not valid JSON ({exc})") from exc
    if not isinstance(doc, dict):
        raise LineError(f"line {line} of the job is not a JSON object")
    custom_id = doc.get("custom_id")
    custom = str(custom_id) if isinstance(custom_id, (str, int)) else str(line)
    body = doc.get("body")
    if not isinstance(body, dict):
        raise LineError(f"line {line} of the job (custom_id {custom}) has no `body` object")
    return custom, body


def _custom_id_of(raw: bytes, line: int) -> str:
    with contextlib.suppress(Exception):
        doc = orjson.loads(raw)
        if isinstance(doc, dict) and isinstance(doc.get("custom_id"), (str, int)):
            return str(doc["custom_id"])
    return str(line)


class BatchRun:
    """One attempt at a job's remaining lines. `run()` returns why it stopped: `done`,
    `cancelled`, `timeout`, `deleted` or `failed` (then `errors` says why)."""

    def __init__(
        self,
        services: LineServices,
        ctx: JobContext,
        batch: BatchJob,
        progress: Progress,
        worker_limit: asyncio.Semaphore,
    ) -> None:
        self.services, self.ctx, self.batch, self.progress = services, ctx, batch, progress
        self.worker_limit = worker_limit
        self.job_limit = asyncio.Semaphore(services.settings.batch_concurrency)
        self.caller = Caller(batch.organization_id, batch.workspace_id, batch.key_id, batch.user_id)
        self.deadline = as_utc(batch.created_at) + timedelta(hours=batch.timeout_hours)
        self.pending: list[dict[str, Any]] = []
        self.stop: str | None = None
        self.errors: list[dict[str, Any]] = []
        self._flushed = asyncio.Event()
        self._closing = asyncio.Event()
        self._lock = asyncio.Lock()

    async def run(self) -> str:
        inflight: set[asyncio.Task[None]] = set()
        flusher = asyncio.create_task(self._flush_loop())
        try:
            await self._dispatch(inflight)
            if inflight:  # lines in flight finish, even after a cancel request
                await asyncio.wait(inflight)
        except BaseException:
            for task in inflight:
                task.cancel()
            flusher.cancel()
            raise
        self._closing.set()
        await flusher
        await self._flush()
        return self.stop or "done"

    async def _dispatch(self, inflight: set[asyncio.Task[None]]) -> None:
        done = DoneLines(self.progress)
        loop = asyncio.get_running_loop()
        try:
            async with contextlib.aclosing(self._lines()) as lines:
                async for line, raw in lines:
                    if self.stop is None and utcnow() >= self.deadline:
                        self.stop = "timeout"
                    if self.stop is not None:
                        return
                    if await done.contains(line):
                        continue
                    self.ctx.check()
                    while len(self.pending) > MAX_PENDING:  # the database lags: wait for it
                        self._flushed.clear()
                        await self._flushed.wait()
                    await self.job_limit.acquire()
                    try:
                        await self.worker_limit.acquire()
                    except BaseException:
                        self.job_limit.release()
                        raise
                    if self.stop is not None:  # noted while waiting for a slot
                        self.worker_limit.release()
                        self.job_limit.release()
                        return
                    task = loop.create_task(self._run_line(line, raw))
                    inflight.add(task)
                    task.add_done_callback(self._release(inflight))
        except InputMissing as exc:
            self.stop = "failed"
            self.errors.append({"message": str(exc), "count": 1})

    def _release(self, inflight: set[asyncio.Task[None]]) -> Any:
        def done(task: asyncio.Task[None]) -> None:
            inflight.discard(task)
            self.worker_limit.release()
            self.job_limit.release()

        return done

    async def _lines(self) -> AsyncGenerator[tuple[int, bytes]]:
        """Every line of the job, numbered from 0: the input files in order, then the inline
        requests."""
        keys = await self.progress.input_keys(self.batch)
        sources: list[tuple[str, str]] = []
        for file_id in self.batch.input_files or []:
            if file_id not in keys:
                raise InputMissing(f"input file {file_id} was deleted before the job read it")
            sources.append((file_id, keys[file_id]))
        if self.batch.requests_blob:
            sources.append(("requests", self.batch.requests_blob))
        number = 0
        for name, key in sources:
            try:
                async with contextlib.aclosing(iter_lines(self.services.blobs.get(key))) as raws:
                    async for raw in raws:
                        yield number, raw
                        number += 1
            except KeyError as exc:
                raise InputMissing(f"the content of input {name} is no longer stored") from exc

    async def _run_line(self, line: int, raw: bytes) -> None:
        custom_id = str(line)
        try:
            custom_id, body = _read_line(raw, line)
            body["stream"] = False
            target(body, self.batch.model, self.batch.agent_id)
            remaining = (self.deadline - utcnow()).total_seconds()
            deadline = asyncio.timeout(max(0.0, remaining))
            try:
                async with deadline:
                    response = await self._call(body, custom_id)
            except TimeoutError:
                if deadline.expired():
                    return  # the job's deadline passed: the line is not run, so not recorded
                raise
            row = self._row(line, custom_id, 200, response, None)
        except LineError as exc:
            custom_id = _custom_id_of(raw, line) if raw != TOO_LONG else custom_id
            body = error_body(str(exc), "invalid_request_error", "invalid_batch_line")
            row = self._row(line, custom_id, 400, body, (str(exc), "invalid_batch_line"))
        except AppError as exc:
            error = (exc.message, exc.code)
            row = self._row(line, custom_id, exc.status_code, exc.body(), error)
        except Exception:
            log.exception("batch %s line %d failed unexpectedly", self.batch.id, line)
            error = ("internal error", "internal_error")
            row = self._row(line, custom_id, 500, INTERNAL_ERROR, error)
        self.pending.append(row)

    async def _call(self, body: dict[str, Any], custom_id: str) -> dict[str, Any]:
        """The line's answer, as the live endpoint gives it. It runs in the line's own task,
        which holds no database connection (results are recorded by the flusher's task)."""
        # JSONB refuses NUL: the event keeps the custom_id without it.
        extra = {"batch_id": self.batch.id, "custom_id": custom_id.replace("\x00", "")}
        delay = RATE_LIMIT_DELAY
        for attempt in range(RATE_LIMIT_RETRIES + 1):
            try:
                return await execute(
                    self.services,
                    self.caller,
                    self.batch.endpoint,
                    body,
                    correlation_id=self.batch.id,
                    source="batch",
                    extra=extra,
                )
            except AppError as exc:
                # Rate limits are the deployment's, not the line's: wait and try again.
                if exc.status_code != 429 or attempt == RATE_LIMIT_RETRIES:
                    raise
                retry_after = (exc.headers or {}).get("Retry-After", "")
                digits = retry_after.isascii() and retry_after.isdigit()
                wait = float(retry_after) if digits else delay
                await asyncio.sleep(min(wait, 30.0))
                delay *= 2
        raise AssertionError("unreachable")

    def _row(
        self,
        line: int,
        custom_id: str,
        status: int,
        body: dict[str, Any],
        error: tuple[str, str] | None,
    ) -> dict[str, Any]:
        record = {
            "id": f"{self.batch.id}-{line}",
            "custom_id": custom_id,
            "response": {"status_code": status, "body": body},
            "error": None if error is None else {"message": error[0], "code": error[1]},
        }
        return {
            "batch_id": self.batch.id,
            "line": line,
            "ok": error is None,
            "status_code": status,
            # Text columns refuse NUL on Postgres; a line may have put one in the message.
            "error": None if error is None else error[0][:2000].replace("\x00", ""),
            "record": orjson.dumps(record).decode(),
        }

    async def _flush(self) -> None:
        async with self._lock:
            while self.pending:
                rows = self.pending[:FLUSH_ROWS]
                del self.pending[:FLUSH_ROWS]
                try:
                    status = await self.progress.write(rows)
                except BaseException:
                    self.pending[:0] = rows  # written on the next try
                    raise
                self._note(status)
            self._flushed.set()

    def _note(self, status: str | None) -> None:
        if status is None:
            self.stop = "deleted"
        elif status == BatchStatus.CANCELLATION_REQUESTED and self.stop is None:
            self.stop = "cancelled"

    async def _flush_loop(self) -> None:
        """Record results every FLUSH_SECONDS (and watch for a cancel request) until closing."""
        loop = asyncio.get_running_loop()
        polled = loop.time()
        while not self._closing.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), FLUSH_SECONDS)
            try:
                if self.pending:
                    await self._flush()
                    polled = loop.time()
                elif loop.time() - polled >= STATUS_POLL_SECONDS:
                    self._note(await self.progress.status())
                    polled = loop.time()
            except Exception:
                log.warning(
                    "batch %s: recording results failed; will retry", self.batch.id, exc_info=True
                )
