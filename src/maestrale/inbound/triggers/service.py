"""Triggers: create (the event source must be a webhook of the workspace, the action must fit
the handler, its workflow or agent must exist), list, get, delete, and the events of one.

The handlers this platform serves: `workflows` (action `start_workflow`, `primitive_id` a
workflow id or name) and `agents` (action `start_agent_session`, `primitive_id` an agent id).
`spaces` (`build_app`, `deploy_app`) builds apps, which this platform has not: refused (400)."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from maestrale.agents.repository import AgentRepository
from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.errors import BadRequest, NotFound
from maestrale.core.ids import new_id
from maestrale.inbound.triggers.repository import TriggerEventRepository, TriggerRepository
from maestrale.inbound.triggers.schemas import (
    TriggerAction,
    TriggerCreate,
    TriggerEventList,
    TriggerEventOut,
    TriggerOut,
)
from maestrale.inbound.triggers.sources import EventSources
from maestrale.inbound.triggers.tables import Trigger, TriggerEvent
from maestrale.workflows.registry.repository import RegistryRepository

# The action each served handler takes.
ACTION_OF = {"workflows": "start_workflow", "agents": "start_agent_session"}
APP_ACTIONS = frozenset({"build_app", "deploy_app"})


class TriggerNotFound(NotFound):
    code = "trigger_not_found"


class TriggerNotServed(BadRequest):
    code = "trigger_not_served"


class TriggerMismatch(BadRequest):
    code = "trigger_action_mismatch"


class TriggerService:
    def __init__(
        self,
        session: AsyncSession,
        tenant: Tenant,
        sources: EventSources,
        worker_liveness: timedelta,
    ) -> None:
        self.session = session
        self.tenant = tenant
        self.sources = sources
        self.liveness = worker_liveness
        self.triggers = TriggerRepository(session, tenant)
        self.events = TriggerEventRepository(session, tenant)

    async def create(self, body: TriggerCreate, creator_id: str) -> TriggerOut:
        action = body.action
        if body.handler == "spaces" or action.type in APP_ACTIONS:
            raise TriggerNotServed(
                "the spaces handler and its build_app and deploy_app actions are not served:"
                " this platform has no apps; use handler workflows (start_workflow) or agents"
                " (start_agent_session)",
                param="handler",
            )
        if ACTION_OF[body.handler] != action.type:
            raise TriggerMismatch(
                f"handler {body.handler} takes action type {ACTION_OF[body.handler]},"
                f" not {action.type}",
                param="action.type",
            )
        source = await self.sources.one(body.event_source_id)
        if source is None:
            raise NotFound(
                f"event source {body.event_source_id!r} not found (a webhook of this workspace)",
                param="event_source_id",
            )
        await self._check_primitive(body.handler, action.primitive_id)
        now = utcnow()
        row = Trigger(
            id=new_id(),
            creator_id=creator_id,
            owner_type=body.owner_type,
            event_source_id=body.event_source_id,
            event_source=source,
            handler=body.handler,
            action_type=action.type,
            primitive_id=action.primitive_id,
            filters=body.filters,
            title=body.title,
            created_at=now,
            updated_at=now,
        )
        await self.triggers.add(row)
        return self.out(row, source)

    async def _check_primitive(self, handler: str, primitive_id: str) -> None:
        if handler == "workflows":
            registry = RegistryRepository(self.session, self.tenant, self.liveness)
            workflow = await registry.workflow(primitive_id)
            if workflow is None or workflow.archived:
                raise NotFound(f"workflow {primitive_id!r} not found", param="action.primitive_id")
        elif await AgentRepository(self.session, self.tenant).get(primitive_id) is None:
            raise NotFound(f"agent {primitive_id!r} not found", param="action.primitive_id")

    async def list(
        self,
        handler: str | None = None,
        primitive_id: str | None = None,
        event_source_id: str | None = None,
    ) -> list[TriggerOut]:
        rows = await self.triggers.filtered(
            handler=handler, primitive_id=primitive_id, event_source_id=event_source_id
        )
        live = await self.sources.many({row.event_source_id for row in rows})
        return [self.out(row, live.get(row.event_source_id)) for row in rows]

    async def row(self, trigger_id: str) -> Trigger:
        row = await self.triggers.get(trigger_id)
        if row is None:
            raise TriggerNotFound(f"trigger {trigger_id!r} not found")
        return row

    async def get(self, trigger_id: str) -> TriggerOut:
        row = await self.row(trigger_id)
        return self.out(row, await self.sources.one(row.event_source_id))

    async def delete(self, trigger_id: str) -> None:
        """The trigger and its events (the events go with it)."""
        await self.triggers.delete(await self.row(trigger_id))

    async def list_events(self, trigger_id: str, limit: int) -> TriggerEventList:
        row = await self.row(trigger_id)
        events = await self.events.newest(row.id, limit)
        return TriggerEventList(data=[event_out(event) for event in events])

    def out(self, row: Trigger, source: dict[str, object] | None) -> TriggerOut:
        """`source`: the webhook as served now; None once it is deleted (the trigger then shows
        it as it was when the trigger was made)."""
        return TriggerOut(
            id=row.id,
            creator_id=row.creator_id,
            workspace_id=row.workspace_id,
            organization_id=row.organization_id,
            # The platform's customer is the organization: no other account level exists here.
            customer_id=row.organization_id,
            owner_type=row.owner_type,
            event_source=source if source is not None else row.event_source,
            handler=row.handler,
            action=TriggerAction(primitive_id=row.primitive_id, type=row.action_type),
            filters=row.filters,
            title=row.title,
        )


def event_out(row: TriggerEvent) -> TriggerEventOut:
    return TriggerEventOut(
        event_id=row.id,
        trigger_id=row.trigger_id,
        source_id=row.delivery_id,
        status=row.status,
        received_at=row.received_at,
        submitted_at=row.submitted_at,
        triggered_at=row.triggered_at,
        detail=row.detail,
        url=row.url,
    )
