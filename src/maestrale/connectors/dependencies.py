"""The connectors services a handler is given, built from the request's unit of work, the
caller's workspace and the process's connector runtime."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, Request
from starlette.requests import HTTPConnection

from maestrale.config import Settings
from maestrale.config.dependencies import AppSettings
from maestrale.connectors.authorization import ConnectorAuthorization
from maestrale.connectors.keychain import Keychain
from maestrale.connectors.network import ConnectorRuntime
from maestrale.connectors.service import ConnectorService, ConnectorSettings
from maestrale.connectors.tools import ConnectorTools
from maestrale.core.app_services import app_services
from maestrale.core.auth.dependencies import CurrentTenant
from maestrale.core.auth.principal import Tenant
from maestrale.core.errors import ServiceUnavailable
from maestrale.core.routing import Work
from maestrale.core.uow import UnitOfWork


def connector_settings(settings: Settings) -> ConnectorSettings:
    """What the connectors' service reads of the process's settings."""
    return ConnectorSettings(
        allow_private=settings.connector_allow_private,
        tool_timeout=settings.connector_tool_timeout_seconds,
        tools_ttl=settings.connector_tools_ttl_seconds,
        return_origins=tuple(settings.connector_oauth_return_origins),
    )


def runtime_of(connection: HTTPConnection) -> ConnectorRuntime:
    """The connector runtime of the app serving `connection`; 503 in a process without one."""
    runtime: ConnectorRuntime | None = app_services(connection).connectors
    if runtime is None:
        raise ServiceUnavailable("connectors are not available in this process")
    return runtime


def keychain_factory(
    runtime: ConnectorRuntime, settings: Settings, work: UnitOfWork
) -> Callable[[Tenant], Keychain]:
    """Keychains of the request's unit of work for a tenant the request learns on the way (the
    OAuth2 redirect, whose state names it)."""
    config = connector_settings(settings)
    return lambda tenant: Keychain(ConnectorService(work.session, tenant, runtime, config))


async def connector_service(
    request: Request, work: Work, tenant: CurrentTenant, settings: AppSettings
) -> ConnectorService:
    return ConnectorService(work.session, tenant, runtime_of(request), connector_settings(settings))


Service = Annotated[ConnectorService, Depends(connector_service)]


async def connector_keychain(service: Service) -> Keychain:
    return Keychain(service)


Credentials = Annotated[Keychain, Depends(connector_keychain)]


async def connector_tools(keychain: Credentials, work: Work) -> ConnectorTools:
    return ConnectorTools(keychain, work.release)


async def connector_authorization(keychain: Credentials, work: Work) -> ConnectorAuthorization:
    return ConnectorAuthorization(keychain, work.release)


Tools = Annotated[ConnectorTools, Depends(connector_tools)]
Authorization = Annotated[ConnectorAuthorization, Depends(connector_authorization)]


def base_url(request: Request) -> str:
    """This server's public base URL (the OAuth2 redirect is under it)."""
    settings: Settings = app_services(request).settings
    return (settings.public_url or str(request.base_url)).rstrip("/")
