"""The connectors services a handler is given, built from the request's unit of work, the
caller's workspace and the process's connector runtime."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, Request

from maestrale.connectors.authorization import ConnectorAuthorization
from maestrale.connectors.runtime import ConnectorRuntime
from maestrale.connectors.service import ConnectorService, ConnectorSettings
from maestrale.connectors.tools import ConnectorTools
from maestrale.core.auth.dependencies import CurrentTenant
from maestrale.core.auth.principal import Tenant
from maestrale.core.errors import ServiceUnavailable
from maestrale.core.routing import Work
from maestrale.core.uow import UnitOfWork
from maestrale.dependencies import AppServices, app_services
from maestrale.services import Services


def connector_settings(services: Services) -> ConnectorSettings:
    settings = services.settings
    return ConnectorSettings(
        allow_private=settings.connector_allow_private,
        tool_timeout=settings.connector_tool_timeout_seconds,
        tools_ttl=settings.connector_tools_ttl_seconds,
        return_origins=tuple(settings.connector_oauth_return_origins),
    )


def runtime_of(services: Services) -> ConnectorRuntime:
    if services.connectors is None:
        raise ServiceUnavailable("connectors are not available in this process")
    return services.connectors


def service_factory(services: Services, work: UnitOfWork) -> Callable[[Tenant], ConnectorService]:
    """Services of the request's unit of work for a tenant the request learns on the way (the
    OAuth2 redirect, whose state names it)."""
    runtime, settings = runtime_of(services), connector_settings(services)
    return lambda tenant: ConnectorService(work.session, tenant, runtime, settings)


async def connector_service(
    services: AppServices, work: Work, tenant: CurrentTenant
) -> ConnectorService:
    return service_factory(services, work)(tenant)


Service = Annotated[ConnectorService, Depends(connector_service)]


async def connector_tools(service: Service, work: Work) -> ConnectorTools:
    return ConnectorTools(service, work.release)


async def connector_authorization(service: Service, work: Work) -> ConnectorAuthorization:
    return ConnectorAuthorization(service, work.release)


Tools = Annotated[ConnectorTools, Depends(connector_tools)]
Authorization = Annotated[ConnectorAuthorization, Depends(connector_authorization)]


def base_url(request: Request) -> str:
    """This server's public base URL (the OAuth2 redirect is under it)."""
    settings = app_services(request).settings
    return (settings.public_url or str(request.base_url)).rstrip("/")
