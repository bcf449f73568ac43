"""The /v1/triggers group (mistralai 3.x `beta.triggers`, 3.7.0 `triggers`): create, list, get,
delete, and the events of a trigger: the deliveries that fired it, with links to what each
started."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import Depends, Query, Response

from maestrale.config.dependencies import AppSettings
from maestrale.core.auth.dependencies import StandardAuth
from maestrale.core.auth.principal import Tenant
from maestrale.core.errors import error_responses
from maestrale.core.routing import Work, domain_router
from maestrale.inbound.triggers.schemas import (
    Handler,
    TriggerCreate,
    TriggerEventList,
    TriggerOut,
)
from maestrale.inbound.triggers.service import TriggerService
from maestrale.inbound.triggers.sources import EventSources
from maestrale.inbound.webhooks.dependencies import Service as Webhooks

router = domain_router(prefix="/triggers", tags=["triggers"])

MAX_EVENTS = 1000


def trigger_service(
    work: Work, principal: StandardAuth, settings: AppSettings, webhooks: Webhooks
) -> TriggerService:
    tenant = Tenant.of(principal)
    sources = EventSources(webhooks)
    liveness = timedelta(seconds=settings.workflow_worker_liveness_seconds)
    return TriggerService(work.session, tenant, sources, liveness)


Service = Annotated[TriggerService, Depends(trigger_service)]


@router.post("", status_code=201, responses=error_responses((404,)))
async def create_trigger(
    body: TriggerCreate, service: Service, principal: StandardAuth
) -> TriggerOut:
    """Bind a webhook of the workspace (`event_source_id`) to a handler: `workflows` with action
    `start_workflow` (`primitive_id`: a workflow's id or name) or `agents` with action
    `start_agent_session` (an agent's id). Every verified delivery of the webhook that passes
    `filters` (a JMESPath expression over the event: its JSON body's fields, `event_type`,
    `event_id`, `body`, `headers`) starts one execution or conversation. `spaces` is not
    served (400); an unknown webhook, workflow or agent is a 404."""
    return await service.create(body, principal.user_id or principal.key_id)


@router.get("")
async def list_triggers(
    service: Service,
    handler: Annotated[Handler | None, Query()] = None,
    primitive_id: Annotated[str | None, Query(max_length=200)] = None,
    event_source_id: Annotated[str | None, Query(max_length=200)] = None,
) -> list[TriggerOut]:
    """The workspace's triggers, newest first, filtered by handler, primitive or webhook."""
    return await service.list(handler, primitive_id, event_source_id)


@router.get("/{trigger_id}")
async def get_trigger(trigger_id: str, service: Service) -> TriggerOut:
    """One trigger. Its `event_source` is its webhook as served now, or as it was when the
    trigger was made once the webhook is deleted (the trigger no longer fires then)."""
    return await service.get(trigger_id)


@router.delete("/{trigger_id}", status_code=204)
async def delete_trigger(trigger_id: str, service: Service) -> Response:
    """Delete a trigger and its events; deliveries no longer fire it."""
    await service.delete(trigger_id)
    return Response(status_code=204)


@router.get("/{trigger_id}/events")
async def list_trigger_events(
    trigger_id: str,
    service: Service,
    limit: Annotated[int, Query(ge=1, le=MAX_EVENTS)] = 10,
) -> TriggerEventList:
    """The deliveries that fired the trigger, newest first: each one's status (SUBMITTED while
    its work is being started, TRIGGERED once started, SUBMISSION_FAILED when it could not be,
    TRIGGER_FAILED when the filter failed on it), the delivery's id (`source_id`) and `url`,
    the link to the execution or conversation it started."""
    return await service.list_events(trigger_id, limit)
