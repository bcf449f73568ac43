"""FastAPI access to the conversations' long-lived objects (the histories of the conversations
this process serves, the factory of the tools the server runs for them) and to the caller's
conversation service (conversations and responses run on it)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from maestrale.conversations.executors import conversation_service
from maestrale.conversations.histories import Histories
from maestrale.conversations.server_tools import ToolboxFactory
from maestrale.conversations.service import ConversationService
from maestrale.core.app_services import app_services
from maestrale.core.auth.dependencies import CurrentTenant
from maestrale.core.routing import Work
from maestrale.gateway.dependencies import CallerDep, workflow_execution_id


async def get_histories(request: Request) -> Histories:
    histories: Histories = app_services(request).histories
    return histories


async def get_toolboxes(request: Request) -> ToolboxFactory | None:
    toolboxes: ToolboxFactory | None = app_services(request).toolboxes
    return toolboxes


HistoriesDep = Annotated[Histories, Depends(get_histories)]
Toolboxes = Annotated[ToolboxFactory | None, Depends(get_toolboxes)]


async def get_service(
    request: Request, work: Work, tenant: CurrentTenant, caller: CallerDep
) -> ConversationService:
    return conversation_service(
        app_services(request),
        work,
        caller,
        source="api",
        tenant=tenant,
        correlation_id=workflow_execution_id(request),
    )


Service = Annotated[ConversationService, Depends(get_service)]
