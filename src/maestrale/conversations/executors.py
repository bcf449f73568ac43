"""The batch executor of `/v1/conversations`: a conversation start (its JSON body, on the job's
model or agent) in, the conversation response out, checked, limited, accounted and stored as the
live endpoint would (see `gateway.executors`). Its unit of work is its own, and no transaction is
open while the model answers (the service releases it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from maestrale.conversations.schemas import ConversationStart
from maestrale.conversations.service import ConversationService
from maestrale.conversations.turns import TurnPolicy, Turns
from maestrale.core.auth.principal import Tenant
from maestrale.core.uow import unit_of_work
from maestrale.core.validation import parse_body
from maestrale.gateway.hooks import Caller
from maestrale.services import Services


async def run_conversation(
    services: Services,
    caller: Caller,
    body: dict[str, Any],
    correlation_id: str,
    source: str,
    extra: Mapping[str, Any],
) -> dict[str, Any]:
    """Start a conversation. Its calls are correlated to the conversation, as every turn of a
    conversation is; `extra` (the batch job's and line's ids) goes with their events."""
    request: ConversationStart = parse_body(ConversationStart, body)
    tenant = Tenant(caller.organization_id, caller.workspace_id, caller.user_id)
    settings = services.settings
    policy = TurnPolicy(
        settings.conversation_turn_lease_seconds, settings.conversation_turn_wait_seconds
    )
    async with unit_of_work(services.db.sessionmaker) as work:
        service = ConversationService(
            work,
            tenant,
            services.engines,
            services.gateway,
            caller,
            services.histories,
            Turns(services.db, tenant, policy),
            source=source,
            extra=extra,
            toolboxes=services.toolboxes,
        )
        response = await service.execute(await service.prepare_start(request))
    return response.model_dump(mode="json")
