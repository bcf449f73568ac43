"""Schedules: Temporal schedules that start a workflow, owned by a workspace.

The schedule, its state and its history live in Temporal; the `workflow_schedules` row says
whose it is (every call is scoped by it: another workspace's id is a 404 `WF_1200`) and keeps
its spec as written. No transaction is open while Temporal is called (docs/architecture.md §3: the
request's engine ends it before each call): a creation reserves the id, which that commits, then
creates the schedule, and frees the id if Temporal refused.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any

from pydantic import ValidationError
from sqlalchemy.exc import IntegrityError
from temporalio.client import Schedule as TemporalSchedule
from temporalio.client import ScheduleOverlapPolicy, ScheduleState, ScheduleUpdate

from maestrale.core.auth.principal import Tenant
from maestrale.core.pagination import decode_cursor, encode_cursor
from maestrale.core.uow import UnitOfWork
from maestrale.workflows.errors import SCHEDULE_INVALID, WorkflowError, not_found
from maestrale.workflows.executions.service import ExecutionService, ExecutionSettings
from maestrale.workflows.schedules import temporal
from maestrale.workflows.schedules.repository import ScheduleRepository
from maestrale.workflows.schedules.schemas import (
    MAX_PAGE,
    SPEC_FIELDS,
    ScheduleDefinitionIn,
    ScheduleList,
    ScheduleOut,
    ScheduleRequest,
    ScheduleSpecIn,
)
from maestrale.workflows.schedules.tables import Schedule
from maestrale.workflows.temporal.engine import TemporalEngine

# Temporal calls at once when a page of schedules is described.
_PARALLEL = 8


class ScheduleService:
    def __init__(
        self,
        work: UnitOfWork,
        tenant: Tenant,
        engine: TemporalEngine,
        settings: ExecutionSettings,
        user_id: str | None,
    ) -> None:
        self.work = work
        self.tenant = tenant
        self.engine = engine
        self.settings = settings
        self.user_id = user_id

    @property
    def schedules(self) -> ScheduleRepository:
        return ScheduleRepository(self.work.session, self.tenant)

    async def _row(self, schedule_id: str) -> Schedule:
        row = await self.schedules.get(schedule_id)
        if row is None:
            raise temporal.not_found(schedule_id)
        return row

    async def _handle(self, schedule_id: str) -> Any:
        client = await self.engine.client()
        return client.get_schedule_handle(schedule_id)

    async def _call(self, schedule_id: str, method: str, *args: Any, **kwargs: Any) -> Any:
        """A call on the schedule's Temporal handle, outside any transaction."""
        handle = await self._handle(schedule_id)
        try:
            return await getattr(handle, method)(*args, **kwargs)
        except Exception as exc:
            raise temporal.translated(exc, schedule_id) from exc

    # -- create -----------------------------------------------------------------------------

    async def create(self, body: ScheduleRequest) -> str:
        routing = ExecutionService(self.work, self.tenant, self.engine, self.settings)
        registration_id = body.workflow_registration_id or body.workflow_version_id
        deployment_name = body.deployment_name or body.workflow_task_queue
        identifier = body.workflow_identifier or ""
        if registration_id:
            found = await routing.registry.registration(registration_id)
            if found is None:
                raise not_found(f"workflow registration {registration_id!r}")
            identifier = found[0].workflow_id
            deployment_name = deployment_name or found[1].name
        workflow, registration, deployment = await routing.route(identifier, deployment_name)
        schedule_id = body.schedule_id or body.schedule.schedule_id or f"schedule-{uuid.uuid4()}"
        spec = ScheduleSpecIn.model_validate(body.schedule.model_dump(include=set(SPEC_FIELDS)))
        schedules = self.schedules
        row = Schedule(
            id=schedule_id,
            workflow_id=workflow.id,
            deployment_name=deployment.name,
            user_id=self.user_id,
            spec=spec.model_dump(mode="json"),
        )
        if await schedules.taken(schedule_id):
            raise _taken(schedule_id)
        try:
            await schedules.add(row)
        except IntegrityError as exc:  # taken meanwhile
            raise _taken(schedule_id) from exc
        timeout = registration.definition.get("execution_timeout")

        definition = body.schedule
        schedule = TemporalSchedule(
            action=temporal.action_of(
                workflow.name,
                definition.input,
                schedule_id=schedule_id,
                task_queue=deployment.name,
                namespace=self.settings.namespace,
                execution_timeout=timedelta(seconds=float(timeout)) if timeout else None,
            ),
            spec=temporal.spec_of(spec),
            policy=temporal.policy_of(definition.policy),
            state=_limit(ScheduleState(), definition.max_executions),
        )
        try:
            client = await self.engine.client()
            await client.create_schedule(schedule_id, schedule)
        except Exception as exc:
            await self.schedules.delete(await self._row(schedule_id))
            # Committed now: the reservation was, and the failed request's rollback would not
            # free the id.
            await self.work.release()
            raise temporal.translated(exc, schedule_id) from exc
        return schedule_id

    # -- read -------------------------------------------------------------------------------

    async def get(self, schedule_id: str) -> ScheduleOut:
        row = await self._row(schedule_id)
        spec = ScheduleSpecIn.model_validate(row.spec)
        described = await self._call(schedule_id, "describe")
        return temporal.output_of(described, spec)

    async def _describe(self, row: Schedule, gate: asyncio.Semaphore) -> ScheduleOut | None:
        async with gate:
            try:
                handle = await self._handle(row.id)
                described = await handle.describe()
            except Exception as exc:
                error = temporal.translated(exc, row.id)
                if error.status_code == 404:
                    return None  # deleted in Temporal behind the platform's back
                raise error from exc
        return temporal.output_of(described, ScheduleSpecIn.model_validate(row.spec))

    async def list(
        self,
        *,
        workflow_name: str | None,
        user_id: str | None,
        status: str | None,
        page_size: int | None,
        token: str | None,
        search: str | None = None,
    ) -> ScheduleList:
        """A page of the workspace's schedules by id, each described by Temporal (one it no
        longer has is left out); `status` keeps the `active` or the `paused` ones, `search`
        those of the workflows whose name starts with it."""
        size = page_size or MAX_PAGE
        after = _after(token) if token else None
        if user_id == "current":
            user_id = self.user_id or ""
        out: list[ScheduleOut] = []
        exhausted = False
        gate = asyncio.Semaphore(_PARALLEL)
        while len(out) < size and not exhausted:
            rows = await self.schedules.page(
                after=after,
                limit=size,
                workflow_name=workflow_name,
                user_id=user_id,
                search=search,
            )
            exhausted = len(rows) < size
            described = await asyncio.gather(*(self._describe(row, gate) for row in rows))
            for row, one in zip(rows, described, strict=True):
                if len(out) == size:
                    exhausted = False
                    break
                after = row.id
                if one is not None and status in (None, "paused" if one.paused else "active"):
                    out.append(one)
        next_token = None if exhausted or after is None else encode_cursor({"id": after})
        return ScheduleList(schedules=out, next_page_token=next_token)

    # -- change -----------------------------------------------------------------------------

    async def update(self, schedule_id: str, changes: ScheduleDefinitionIn) -> str:
        """Apply the fields `changes` sets; the others keep their values."""
        row = await self._row(schedule_id)
        given = changes.model_fields_set
        spec = ScheduleSpecIn.model_validate(row.spec)
        try:  # the change may not fit what it keeps (an end before the start kept)
            spec = ScheduleSpecIn.model_validate(
                {**spec.model_dump(), **changes.model_dump(include=given & set(SPEC_FIELDS))}
            )
        except ValidationError as exc:
            message = "; ".join(str(e["msg"]) for e in exc.errors())
            raise WorkflowError(message, SCHEDULE_INVALID, status_code=400) from exc
        namespace = self.settings.namespace

        def updated(update: Any) -> ScheduleUpdate:
            schedule = update.description.schedule
            if "input" in given:
                old = schedule.action
                schedule.action = temporal.action_of(
                    old.workflow,
                    changes.input,
                    schedule_id=old.id,
                    task_queue=old.task_queue,
                    namespace=namespace,
                    execution_timeout=old.execution_timeout,
                )
            if given & set(SPEC_FIELDS):
                schedule.spec = temporal.spec_of(spec)
            if "policy" in given:
                schedule.policy = temporal.policy_of(changes.policy)
            if "max_executions" in given:
                schedule.state = _limit(schedule.state, changes.max_executions)
            return ScheduleUpdate(schedule=schedule)

        await self._call(schedule_id, "update", updated)
        row = await self._row(schedule_id)
        row.spec = spec.model_dump(mode="json")
        await self.work.session.flush()
        return schedule_id

    async def pause(self, schedule_id: str, note: str | None) -> None:
        await self._row(schedule_id)
        await self._call(schedule_id, "pause", note=note)

    async def resume(self, schedule_id: str, note: str | None) -> None:
        await self._row(schedule_id)
        await self._call(schedule_id, "unpause", note=note)

    async def trigger(self, schedule_id: str, overlap: int | None) -> None:
        """Start the schedule's workflow now (whatever its spec, paused or not)."""
        await self._row(schedule_id)
        policy = ScheduleOverlapPolicy(overlap) if overlap else None
        await self._call(schedule_id, "trigger", overlap=policy)

    async def delete(self, schedule_id: str) -> None:
        """Delete the schedule (its running executions go on); one Temporal no longer has is
        forgotten all the same."""
        await self._row(schedule_id)
        try:
            await self._call(schedule_id, "delete")
        except WorkflowError as exc:
            if exc.status_code != 404:
                raise
        row = await self.schedules.get(schedule_id)
        if row is not None:
            await self.schedules.delete(row)


def _taken(schedule_id: str) -> WorkflowError:
    return WorkflowError(f"schedule id {schedule_id!r} is taken", SCHEDULE_INVALID, status_code=409)


def _after(token: str) -> str:
    value = decode_cursor(token).get("id")
    if not isinstance(value, str) or len(value) > 200:
        raise WorkflowError("invalid next_page_token", "WF_1000", status_code=400)
    return value


def _limit(state: ScheduleState, max_executions: int | None) -> ScheduleState:
    """`state` limited to `max_executions` more actions (None: no limit)."""
    state.limited_actions = max_executions is not None
    state.remaining_actions = max_executions or 0
    return state
