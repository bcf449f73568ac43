"""What a realtime WebSocket presents in place of an API key: a client secret of its model.

The SDKs send a secret as they send a key (`Authorization: Bearer rt_...`); a browser, which
cannot set headers on a WebSocket, offers it as a subprotocol beside `realtime`
(`new WebSocket(url, ["realtime", "rt_..."])`), and the server then accepts the `realtime`
subprotocol (`accepted_subprotocol`), never echoing the secret. `authenticate_standard` takes
a secret on every WebSocket (`core/auth/dependencies.py`); the model is the socket's `model`
query parameter.
"""

from __future__ import annotations

import secrets

from starlette.requests import HTTPConnection

from maestrale.core.app_services import app_services
from maestrale.core.auth.client_sessions.repository import ClientSessionRepository
from maestrale.core.auth.keys import hash_key
from maestrale.core.db import Database
from maestrale.core.errors import Unauthorized

SECRET_PREFIX = "rt_"
SUBPROTOCOL = "realtime"
_BEARER = "bearer "


def generate_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def _offered(connection: HTTPConnection) -> list[str]:
    offered = connection.scope.get("subprotocols") or []
    return [str(name) for name in offered]


def presented_secret(connection: HTTPConnection) -> str | None:
    """The client secret a WebSocket presents (header or subprotocol), if any."""
    if connection.scope.get("type") != "websocket":
        return None
    header = connection.headers.get("authorization", "")
    if header[:7].lower() == _BEARER and header[7:].strip().startswith(SECRET_PREFIX):
        return header[7:].strip()
    offered = _offered(connection)
    if SUBPROTOCOL in offered:
        return next((name for name in offered if name.startswith(SECRET_PREFIX)), None)
    return None


def accepted_subprotocol(connection: HTTPConnection) -> str | None:
    """The subprotocol a realtime WebSocket accepts: `realtime` when the client offered it (a
    browser must get one of its offers back), else none."""
    return SUBPROTOCOL if SUBPROTOCOL in _offered(connection) else None


async def minting_key_hash(connection: HTTPConnection, secret: str) -> str:
    """The hash of the key that minted `secret`, if the secret is unexpired and of the model
    the WebSocket asks for (`?model=`); 401 otherwise. The key itself is checked by the
    caller, as any key (a revoked key's secrets are refused with it)."""
    db: Database = app_services(connection).db
    async with db.transaction() as work:
        live = await ClientSessionRepository(work.session).live(hash_key(secret))
    if live is None:
        raise Unauthorized("invalid or expired client secret", code="invalid_client_secret")
    if live.model != connection.query_params.get("model", ""):
        raise Unauthorized(
            f"this client secret opens the realtime sessions of model {live.model!r} only",
            code="client_secret_model_mismatch",
        )
    return live.key_hash
