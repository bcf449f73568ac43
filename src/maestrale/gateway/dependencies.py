"""FastAPI access to the gateway, and the caller of a request."""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import Depends, Request

from maestrale.core.auth.dependencies import StandardAuth
from maestrale.core.logs import request_id_var
from maestrale.dependencies import app_services
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller

_SANE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,200}$")


async def get_gateway(request: Request) -> Gateway:
    gateway: Gateway = app_services(request).gateway
    return gateway


async def get_caller(principal: StandardAuth) -> Caller:
    assert principal.workspace_id is not None
    return Caller(
        principal.organization_id, principal.workspace_id, principal.key_id, principal.user_id
    )


def sane_correlation_id(given: str | None) -> str | None:
    """A caller's `x-correlation-id` if it is sane (a bounded id-like string), else None."""
    return given if given and _SANE_ID.match(given) else None


async def correlation_id(request: Request) -> str:
    """The caller's `x-correlation-id` when it sent a sane one, else this request's id."""
    return (
        sane_correlation_id(request.headers.get("x-correlation-id")) or request_id_var.get() or ""
    )


GatewayDep = Annotated[Gateway, Depends(get_gateway)]
CallerDep = Annotated[Caller, Depends(get_caller)]
CorrelationId = Annotated[str, Depends(correlation_id)]
