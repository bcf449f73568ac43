"""FastAPI access to the conversations' long-lived objects: the histories of the conversations
this process serves, and the factory of the tools the server runs for them."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from maestrale.conversations.histories import Histories
from maestrale.conversations.server_tools import ToolboxFactory
from maestrale.core.app_services import app_services


async def get_histories(request: Request) -> Histories:
    histories: Histories = app_services(request).histories
    return histories


async def get_toolboxes(request: Request) -> ToolboxFactory | None:
    toolboxes: ToolboxFactory | None = app_services(request).toolboxes
    return toolboxes


HistoriesDep = Annotated[Histories, Depends(get_histories)]
Toolboxes = Annotated[ToolboxFactory | None, Depends(get_toolboxes)]
