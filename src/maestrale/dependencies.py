"""Typed FastAPI access to the process's services (`maestrale.services`), which the lifespan
opens and keeps on the app: handlers name what they need (`GatewayDep`, `Engines`, `Blobs`...)
and never read `request.app.state` themselves."""

from __future__ import annotations

from typing import Annotated, cast

from fastapi import Depends, Request
from starlette.requests import HTTPConnection

from maestrale.config import Settings
from maestrale.services import Services


def app_services(connection: HTTPConnection) -> Services:
    """The services of the app serving this request (or WebSocket)."""
    return cast(Services, connection.app.state.services)


async def get_services(request: Request) -> Services:
    return app_services(request)


async def get_settings(request: Request) -> Settings:
    return app_services(request).settings


AppServices = Annotated[Services, Depends(get_services)]
AppSettings = Annotated[Settings, Depends(get_settings)]
