"""FastAPI access to the gateway, and the caller of a request."""

from __future__ import annotations

import json
import re
from typing import Annotated

from fastapi import Depends, Request

from maestrale.core.app_services import app_services
from maestrale.core.auth.dependencies import StandardAuth
from maestrale.core.logs import request_id_var
from maestrale.core.routing import Work
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller
from maestrale.gateway.platform_calls import PlatformCalls

_SANE_ID = re.compile(r"^[A-Za-z0-9._:-]{1,200}$")


async def get_gateway(request: Request, work: Work) -> Gateway:
    """The process's gateway, ending the request's transaction before each model call."""
    gateway: Gateway = app_services(request).gateway
    return gateway.releasing(work.release)


async def get_platform_calls(request: Request, work: Work) -> PlatformCalls:
    """The platform's own model calls, ending the request's transaction before each."""
    calls: PlatformCalls = app_services(request).platform_calls
    return calls.releasing(work.release)


async def get_caller(principal: StandardAuth) -> Caller:
    assert principal.workspace_id is not None
    return Caller(
        principal.organization_id,
        principal.workspace_id,
        principal.key_id,
        principal.user_id,
        principal.service_account_id,
    )


def sane_correlation_id(given: str | None) -> str | None:
    """A caller's `x-correlation-id` if it is sane (a bounded id-like string), else None."""
    return given if given and _SANE_ID.match(given) else None


def workflow_execution_id(request: Request) -> str | None:
    """The workflow execution a call comes from: the official workflows worker's clients send
    `x-metadata: {"call_type": "workflows", "execution_id": ...}` with every platform call."""
    raw = request.headers.get("x-metadata")
    if not raw or len(raw) > 4096:
        return None
    try:
        metadata = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(metadata, dict) or metadata.get("call_type") != "workflows":
        return None
    execution_id = metadata.get("execution_id")
    return sane_correlation_id(execution_id) if isinstance(execution_id, str) else None


async def correlation_id(request: Request) -> str:
    """The caller's `x-correlation-id` when it sent a sane one, else the workflow execution the
    call comes from, else this request's id."""
    return (
        sane_correlation_id(request.headers.get("x-correlation-id"))
        or workflow_execution_id(request)
        or request_id_var.get()
        or ""
    )


GatewayDep = Annotated[Gateway, Depends(get_gateway)]
PlatformCallsDep = Annotated[PlatformCalls, Depends(get_platform_calls)]
CallerDep = Annotated[Caller, Depends(get_caller)]
CorrelationId = Annotated[str, Depends(correlation_id)]
