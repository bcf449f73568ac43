"""The batch executor of `/v1/conversations`: a conversation start (its JSON body, on the job's
model or agent) in, the conversation response out, checked, limited, accounted and stored as the
live endpoint would (see `gateway.executors`). Its unit of work is its own, and no transaction is
open while the model answers (the service releases it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from maestrale.config import Settings
from maestrale.conversations.histories import Histories
from maestrale.conversations.schemas import ConversationStart
from maestrale.conversations.server_tools import ToolboxFactory
from maestrale.conversations.service import ConversationService
from maestrale.conversations.turn_lease import TurnLeasePolicy, TurnLeases
from maestrale.core.auth.principal import Tenant
from maestrale.core.db import Database
from maestrale.core.uow import UnitOfWork
from maestrale.core.validation import parse_body
from maestrale.engines.registry import EngineRegistry
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller


class ConversationServices(Protocol):
    """What a batch conversation reads of the process's services."""

    @property
    def settings(self) -> Settings: ...

    @property
    def db(self) -> Database: ...

    @property
    def engines(self) -> EngineRegistry: ...

    @property
    def gateway(self) -> Gateway: ...

    @property
    def histories(self) -> Histories: ...

    @property
    def toolboxes(self) -> ToolboxFactory | None: ...


async def run_conversation(
    services: ConversationServices,
    caller: Caller,
    body: dict[str, Any],
    correlation_id: str,
    source: str,
    extra: Mapping[str, Any],
) -> dict[str, Any]:
    """Start a conversation. Its calls are correlated to the conversation, as every turn of a
    conversation is; `extra` (the batch job's and line's ids) goes with their events."""
    request: ConversationStart = parse_body(ConversationStart, body)
    async with services.db.transaction() as work:
        service = conversation_service(services, work, caller, source=source, extra=extra)
        response = await service.execute(await service.prepare_start(request))
    return response.model_dump(mode="json")


def conversation_service(
    services: ConversationServices,
    work: UnitOfWork,
    caller: Caller,
    *,
    source: str,
    extra: Mapping[str, Any] | None = None,
    tenant: Tenant | None = None,
    correlation_id: str | None = None,
) -> ConversationService:
    """The conversation service of `caller` in `work` (a request's, a job's)."""
    tenant = tenant or Tenant(caller.organization_id, caller.workspace_id, caller.user_id)
    settings = services.settings
    policy = TurnLeasePolicy(
        settings.conversation_turn_lease_seconds, settings.conversation_turn_wait_seconds
    )
    return ConversationService(
        work,
        tenant,
        services.engines,
        services.gateway,
        caller,
        services.histories,
        TurnLeases(services.db, tenant, policy),
        source=source,
        extra=extra,
        correlation_id=correlation_id,
        toolboxes=services.toolboxes,
    )
