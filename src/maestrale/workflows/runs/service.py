"""Runs: the executions of the workspace listed from the index (the running ones of a page
refreshed from Temporal), one run by its id (the latest of an execution, or an earlier one a
reset or a continue-as-new left behind), and its history."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import replace
from datetime import datetime
from typing import Any

import orjson

from maestrale.core.clock import as_utc
from maestrale.core.errors import BadRequest
from maestrale.core.pagination import decode_cursor, encode_cursor
from maestrale.workflows.errors import WorkflowError, not_found
from maestrale.workflows.executions.schemas import ExecutionOut, ExecutionSummary
from maestrale.workflows.executions.service import ExecutionService
from maestrale.workflows.executions.sync import observe, record, snapshot
from maestrale.workflows.executions.tables import Execution, ExecutionStatus
from maestrale.workflows.runs.repository import RunRepository, key_of
from maestrale.workflows.runs.schemas import RunFilters, RunList, SortBy
from maestrale.workflows.temporal.control import INVALID, TemporalControl


def invalid_token() -> WorkflowError:
    return WorkflowError("invalid next_page_token", INVALID, status_code=400)


def canonical_run_id(run_id: str) -> str | None:
    """Temporal's form of a run id (a UUID), or None for what cannot be one."""
    if len(run_id) > 64:
        return None
    try:
        return str(uuid.UUID(run_id))
    except ValueError:
        return None


class RunService:
    def __init__(self, service: ExecutionService) -> None:
        self.service = service
        self.temporal = TemporalControl(service.engine)

    @property
    def runs(self) -> RunRepository:
        return RunRepository(self.service.work.session, self.service.tenant)

    # -- list -------------------------------------------------------------------------------

    def _digest(self, filters: RunFilters, sort_by: SortBy, descending: bool) -> str:
        """What a page token is bound to: the workspace and the listing's filters and order
        (a token of another listing would page through this one from a wrong place)."""
        seed = orjson.dumps(
            [self.service.tenant.workspace_id, filters.canonical(), sort_by, descending],
            option=orjson.OPT_SORT_KEYS,
        )
        return hashlib.sha256(seed).hexdigest()[:16]

    def _after(self, token: str, digest: str) -> tuple[datetime, str]:
        try:
            values = decode_cursor(token)
        except BadRequest as exc:
            raise invalid_token() from exc
        key, id_ = values.get("k"), values.get("i")
        if values.get("d") != digest or not isinstance(key, str) or not isinstance(id_, str):
            raise invalid_token()
        try:
            return as_utc(datetime.fromisoformat(key)), id_
        except ValueError as exc:
            raise invalid_token() from exc

    async def list_runs(
        self,
        filters: RunFilters,
        *,
        sort_by: SortBy,
        descending: bool,
        page_size: int,
        token: str | None,
    ) -> RunList:
        """A page of runs, newest first by default; the RUNNING ones asked of Temporal."""
        digest = self._digest(filters, sort_by, descending)
        after = self._after(token, digest) if token else None
        if filters.user_id == "current":
            if self.service.user_id is None:  # a key of no user started nothing as one
                return RunList(executions=[], next_page_token=None)
            filters = replace(filters, user_id=self.service.user_id)
        rows = await self.runs.page(
            filters, sort_by=sort_by, descending=descending, after=after, limit=page_size + 1
        )
        more = len(rows) > page_size
        rows = rows[:page_size]
        next_token = None
        if more:
            # Keyed as the rows were ordered, before a refresh gives a running one an end time.
            last = rows[-1]
            next_token = encode_cursor(
                {"k": key_of(last, sort_by).isoformat(), "i": last.id, "d": digest}
            )
        await self._refresh([r for r in rows if r.status == ExecutionStatus.RUNNING])
        return RunList(
            executions=[ExecutionSummary.of(r) for r in rows], next_page_token=next_token
        )

    async def _refresh(self, rows: list[Execution]) -> None:
        """Temporal's state of `rows`, written back; the page's objects are the session's, so
        they show it (a row that moved meanwhile keeps what the other writer wrote)."""
        if not rows:
            return
        before = snapshot(rows)
        observed = await observe(self.temporal, list(before))
        await record(self.runs, observed, before)

    # -- one run ----------------------------------------------------------------------------

    async def resolve(self, run_id: str) -> tuple[Execution, str]:
        """The execution (of this workspace) a run belongs to, and the run's canonical id."""
        canonical = canonical_run_id(run_id)
        if canonical is None:
            raise not_found(f"run {run_id[:64]!r}")
        row = await self.runs.by_run(canonical)
        if row is not None:
            return row, canonical
        # Not the latest run the index knows: an earlier one, which Temporal's visibility
        # can name the execution of.
        execution_id = await self.temporal.execution_of_run(canonical)
        row = await self.runs.get(execution_id) if execution_id is not None else None
        if row is None:
            raise not_found(f"run {run_id!r}")
        return row, canonical

    async def get(self, run_id: str) -> ExecutionOut:
        row, run_id = await self.resolve(run_id)
        if row.run_id == run_id:
            latest = await self.service.get(row.id)
            if latest.run_id == run_id:
                return latest
            row = await self.service.row(row.id)  # a newer run began meanwhile
        base = ExecutionOut.of(row)
        described = await self.temporal.engine.describe(row.id, run_id)
        result: Any = None
        if described.status == ExecutionStatus.COMPLETED:
            result = await self.service.engine.outcome(row.id, run_id)
        start = described.start_time or base.start_time
        end = described.close_time
        duration = None
        if end is not None:
            duration = max(0, int((end - start).total_seconds() * 1000))
        return base.model_copy(
            update={
                "status": described.status,
                "run_id": run_id,
                "start_time": start,
                "end_time": end,
                "result": result,
                "total_duration_ms": duration,
            }
        )

    async def history(self, run_id: str, decode_payloads: bool) -> dict[str, Any]:
        row, run_id = await self.resolve(run_id)
        return await self.temporal.history(row.id, run_id, decode_payloads=decode_payloads)
