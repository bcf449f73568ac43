"""The opening of a realtime WebSocket of one model: authenticated as the HTTP routes (an API
key as `Authorization: Bearer`, or a client secret of the model, from a browser as the
subprotocols `["realtime", "rt_..."]`; refused with HTTP 401 on the upgrade), accepted, then
the model's call opened and admitted through the gateway (a refusal is an `error` event and
the close)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from fastapi import WebSocket

from maestrale.audio.realtime.messages import error_body
from maestrale.core.app_services import app_services
from maestrale.core.auth.client_sessions.authenticate import accepted_subprotocol
from maestrale.core.auth.dependencies import authenticate_standard
from maestrale.core.auth.principal import Principal
from maestrale.core.errors import AppError, BadRequest
from maestrale.core.websocket import deny
from maestrale.gateway.call import Call
from maestrale.gateway.capabilities import Capability
from maestrale.gateway.dependencies import sane_correlation_id
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller

E = TypeVar("E")


@dataclass(frozen=True, slots=True)
class Opened(Generic[E]):
    principal: Principal
    call: Call[E]
    request_id: str


async def open_realtime(
    websocket: WebSocket,
    capability: Capability[E],
    default_model: Callable[[Gateway], str] | None = None,
) -> Opened[E] | None:
    """The admitted call of the socket's `model` query parameter (`default_model` when it has
    none; without one the parameter is required), or None once the socket is refused."""
    gateway: Gateway = app_services(websocket).gateway
    try:
        principal = await authenticate_standard(websocket)
    except AppError as exc:
        await deny(websocket, exc)
        return None
    assert principal.workspace_id is not None
    caller = Caller(
        principal.organization_id,
        principal.workspace_id,
        principal.key_id,
        principal.user_id,
        principal.service_account_id,
    )
    request_id = uuid.uuid4().hex
    correlation = sane_correlation_id(websocket.headers.get("x-correlation-id")) or request_id
    await websocket.accept(subprotocol=accepted_subprotocol(websocket))
    try:
        model = websocket.query_params.get("model", "")
        if not model:
            if default_model is None:
                raise BadRequest("the `model` query parameter is required", param="model")
            model = default_model(gateway)
        call = await gateway.open(caller, model, capability, correlation_id=correlation)
        await gateway.admit(call, 0)
    except AppError as exc:
        with contextlib.suppress(Exception):  # unless the client is gone already
            await websocket.send_json(error_body(exc))
            await websocket.close(1011 if exc.status_code >= 500 else 1008)
        return None
    return Opened(principal, call, request_id)
