"""The dispatch of a webhook delivery (job `inbound.delivery`, enqueued by the receiver with the
delivery's row in one transaction): each trigger of the webhook whose filter the event passes
starts its work, a workflow execution or an agent conversation, at the delivery's depth + 1.

Exactly once, as far as it can be known:
- the trigger event of (trigger, delivery) is written SUBMITTED (unique key) before the work is
  started, in its own short transaction, and TRIGGERED with what started once it has; a retried
  job skips what is TRIGGERED (or failed for good);
- a workflow execution's id is derived from (trigger, delivery): a retry finds it in the
  execution index or on Temporal (a closed run too) and starts nothing;
- a conversation carries the event's id in its metadata: a retry that finds it starts nothing.
  The window left: an attempt killed while the conversation's model turns ran stored nothing,
  and the retry runs the turns again (the tool calls of the lost turns may have run).
No transaction is open while Temporal or a model is called (read, close, call, write).
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import orjson

from maestrale.conversations.executors import ConversationServices, run_conversation
from maestrale.conversations.repository import ConversationRepository
from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.errors import AppError
from maestrale.core.jobs.worker import JobContext, JobRegistry
from maestrale.core.pagination import PageParams
from maestrale.gateway.hooks import Caller
from maestrale.inbound.triggers.filters import FilterFailed, event_document, matches
from maestrale.inbound.triggers.repository import TriggerEventRepository, TriggerRepository
from maestrale.inbound.triggers.tables import TriggerStatus
from maestrale.inbound.webhooks.repository import DeliveryRepository, WebhookRepository
from maestrale.tracing import TRIGGER_DEPTH_HEADER, at_trigger_depth
from maestrale.workflows.dependencies import execution_settings
from maestrale.workflows.errors import WorkflowError
from maestrale.workflows.executions.repository import ExecutionRepository
from maestrale.workflows.executions.schemas import ExecutionRequest
from maestrale.workflows.executions.service import ExecutionService
from maestrale.workflows.temporal.engine import TemporalEngine

KIND = "inbound.delivery"
ACCEPTED = "accepted"
WORKFLOW, CONVERSATION = "workflow_execution", "conversation"
# The metadata key a triggered conversation carries: the trigger event that started it.
EVENT_KEY = "maestrale_trigger_event_id"
FINAL = frozenset(
    {TriggerStatus.TRIGGERED, TriggerStatus.SUBMISSION_FAILED, TriggerStatus.TRIGGER_FAILED}
)

log = logging.getLogger("maestrale.inbound.triggers")


class DispatchServices(ConversationServices, Protocol):
    """What the dispatch reads of the process's services: a conversation's, and Temporal."""

    @property
    def workflows(self) -> TemporalEngine | None: ...


@dataclass(frozen=True, slots=True)
class Delivery:
    id: str
    webhook_id: str
    received_at: datetime
    event_type: str | None
    event_id: str | None
    depth: int
    body: str | None
    document: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Fired:
    """One trigger's part of a delivery: what its event says."""

    trigger_id: str
    handler: str
    primitive_id: str
    filters: str | None


@dataclass(slots=True)
class Outcome:
    started: list[dict[str, Any]] = field(default_factory=list)
    retry: list[str] = field(default_factory=list)


def execution_id_of(trigger_id: str, delivery_id: str) -> str:
    """The execution a (trigger, delivery) starts: the same on every attempt."""
    digest = hashlib.sha256(f"{trigger_id}\n{delivery_id}".encode()).hexdigest()
    return f"trigger-{digest[:40]}"


class Dispatch:
    def __init__(self, services: DispatchServices) -> None:
        self.services = services

    def _link(self, path: str) -> str:
        public = self.services.settings.public_url
        return f"{public.rstrip('/')}{path}" if public else path

    async def run(self, ctx: JobContext) -> dict[str, Any] | None:
        tenant = ctx.tenant
        delivery_id = str(ctx.payload["delivery_id"])
        async with self.services.db.transaction() as work:
            row = await DeliveryRepository(work.session, tenant).get(delivery_id)
            if row is None or row.status != ACCEPTED:
                return None  # gone with its webhook, or never to run
            if await WebhookRepository(work.session, tenant).get(row.webhook_id) is None:
                return None  # the webhook was deleted: its triggers no longer fire
            delivery = Delivery(
                row.id,
                row.webhook_id,
                row.received_at,
                row.event_type,
                row.event_id,
                row.depth,
                row.body,
                event_document(row.body, row.event_type, row.event_id, row.headers),
            )
            triggers = [
                Fired(t.id, t.handler, t.primitive_id, t.filters)
                for t in await TriggerRepository(work.session, tenant).of_source(row.webhook_id)
            ]
        outcome = Outcome()
        for trigger in triggers:
            ctx.check()
            await self._fire(ctx, tenant, delivery, trigger, outcome)
        async with self.services.db.transaction() as work:
            await DeliveryRepository(work.session, tenant).mark_dispatched(
                delivery.id, outcome.started
            )
        if outcome.retry:
            # The others are done (and skipped next time): the job's retry starts these again.
            raise RuntimeError(f"triggers to retry: {', '.join(outcome.retry)}")
        return {"started": len(outcome.started)}

    async def _fire(
        self, ctx: JobContext, tenant: Tenant, delivery: Delivery, trigger: Fired, out: Outcome
    ) -> None:
        failed: str | None = None
        if trigger.filters:
            try:
                if not matches(trigger.filters, delivery.document):
                    return  # not for this trigger: no event
            except FilterFailed as exc:
                failed = str(exc)
        async with self.services.db.transaction() as work:
            events = TriggerEventRepository(work.session, tenant)
            known = await events.of_delivery(trigger.trigger_id, delivery.id)
            event = await events.open(
                trigger.trigger_id,
                delivery.id,
                delivery.received_at,
                depth=delivery.depth + 1,
                **({"status": TriggerStatus.TRIGGER_FAILED, "detail": failed} if failed else {}),
            )
            event_id, status = event.id, event.status
            kind, started_id, url = event.started_kind, event.started_id, event.url
        if status in FINAL:
            if status == TriggerStatus.TRIGGERED and started_id is not None:
                out.started.append(self._started(trigger, kind, started_id, url))
            return
        try:
            if trigger.handler == "workflows":
                kind = WORKFLOW
                started_id = await self._start_workflow(
                    tenant, delivery, trigger, resumed=known is not None
                )
                url = self._link(f"/v1/workflows/executions/{started_id}")
            else:
                kind = CONVERSATION
                started_id = await self._start_conversation(
                    tenant, delivery, trigger, event_id, resumed=known is not None
                )
                url = self._link(f"/v1/conversations/{started_id}")
        except Exception as exc:
            # A refusal (the agent or workflow is gone, the request is wrong) stays one; an
            # outage, a timeout or a rate limit may pass: the job's next attempt tries again.
            code = exc.status_code if isinstance(exc, AppError) else 500
            permanent = code < 500 and code not in (408, 429)
            last = ctx.attempt >= ctx.max_attempts
            detail = _reason(exc)
            if permanent or last:
                values: dict[str, Any] = {"status": TriggerStatus.SUBMISSION_FAILED}
            else:
                out.retry.append(trigger.trigger_id)
                detail = f"attempt {ctx.attempt} failed, retried: {detail}"
                values = {}
            log.warning("trigger %s on delivery %s: %s", trigger.trigger_id, delivery.id, detail)
            async with self.services.db.transaction() as work:
                await TriggerEventRepository(work.session, tenant).update(
                    event_id, detail=detail, **values
                )
            return
        async with self.services.db.transaction() as work:
            await TriggerEventRepository(work.session, tenant).update(
                event_id,
                status=TriggerStatus.TRIGGERED,
                triggered_at=utcnow(),
                detail=None,
                url=url,
                started_kind=kind,
                started_id=started_id,
            )
        out.started.append(self._started(trigger, kind, started_id, url))

    @staticmethod
    def _started(
        trigger: Fired, kind: str | None, started_id: str, url: str | None
    ) -> dict[str, Any]:
        return {"trigger_id": trigger.trigger_id, "kind": kind, "id": started_id, "url": url}

    async def _start_workflow(
        self, tenant: Tenant, delivery: Delivery, trigger: Fired, *, resumed: bool
    ) -> str:
        """The execution's id, started now or by an earlier attempt."""
        engine = self.services.workflows
        if engine is None:
            raise RuntimeError("workflows are off: no Temporal to start the execution on")
        execution_id = execution_id_of(trigger.trigger_id, delivery.id)
        db = self.services.db
        scoped = engine.for_workspace(tenant.workspace_id)
        if resumed:  # an earlier attempt may have started it (and it may have closed since)
            async with db.transaction() as work:
                indexed = await ExecutionRepository(work.session, tenant).get(execution_id)
            if indexed is not None:
                return execution_id
            try:
                await scoped.describe(execution_id)
                return execution_id
            except WorkflowError as exc:
                if exc.status_code != 404:
                    raise
        depth = delivery.depth + 1
        request = ExecutionRequest(
            execution_id=execution_id,
            input={
                "event": _parsed(delivery.body),
                "event_type": delivery.event_type,
                "event_id": delivery.event_id,
                "webhook_id": delivery.webhook_id,
                "delivery_id": delivery.id,
                "trigger_id": trigger.trigger_id,
                "trigger_depth": depth,
                # What the workflow's own HTTP calls pass on, so a loop back is cut.
                "headers": {TRIGGER_DEPTH_HEADER: str(depth)},
            },
        )
        async with db.transaction() as work:
            engine_view = scoped.releasing(work.release, db)
            service = ExecutionService(
                work, tenant, engine_view, execution_settings(self.services.settings, engine_view)
            )
            try:
                out = await service.execute(trigger.primitive_id, request)
            except WorkflowError as exc:
                if exc.status_code == 409 and exc.wf_code == "WF_1101":
                    return execution_id  # running already: this delivery's, started before
                raise
        return str(out.execution_id)

    async def _start_conversation(
        self, tenant: Tenant, delivery: Delivery, trigger: Fired, event_id: str, *, resumed: bool
    ) -> str:
        """The conversation's id, started now or by an earlier attempt."""
        if resumed:
            async with self.services.db.transaction() as work:
                found = await ConversationRepository(work.session, tenant).page(
                    PageParams(0, 1), {EVENT_KEY: event_id}
                )
            if found:
                return found[0].id
        caller = Caller(tenant.organization_id, tenant.workspace_id)
        body = {
            "agent_id": trigger.primitive_id,
            "inputs": [{"role": "user", "content": agent_input(delivery)}],
            "store": True,
            "metadata": {
                EVENT_KEY: event_id,
                "trigger_id": trigger.trigger_id,
                "webhook_id": delivery.webhook_id,
                "delivery_id": delivery.id,
            },
        }
        extra = {"trigger_id": trigger.trigger_id, "delivery_id": delivery.id}
        with at_trigger_depth(delivery.depth + 1):
            response = await run_conversation(
                self.services, caller, body, event_id, "trigger", extra
            )
        return str(response["conversation_id"])


def agent_input(delivery: Delivery) -> str:
    """What the agent is told: which event, then the body as received (its text: a JSON body
    stays JSON, a plain-text one stays plain)."""
    head = f"Event {delivery.event_type or 'unknown'}"
    if delivery.event_id:
        head += f" ({delivery.event_id})"
    return f"{head} received by webhook {delivery.webhook_id}:\n{delivery.body or ''}"


def _parsed(body: str | None) -> Any:
    if not body:
        return body
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return body


def _reason(exc: BaseException) -> str:
    message = exc.message if isinstance(exc, AppError) else str(exc)
    return f"{type(exc).__name__}: {message}"[:1000]


def register(registry: JobRegistry, services: DispatchServices) -> None:
    registry.register(KIND, Dispatch(services).run)
