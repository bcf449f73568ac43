"""The `state` of an authorization request: the payload the callback needs (which connector,
which scope, the PKCE verifier) sealed with AES-GCM under the server's secret, so it is both
authenticated (a changed or forged state does not open) and confidential (the verifier inside
travels through the user's browser and the authorization server's logs). An expiry inside
bounds how long an abandoned authorization link stays usable."""

from __future__ import annotations

import time
from typing import Any

from maestrale.core.crypto import SecretBox, SecretUnreadable
from maestrale.core.errors import BadRequest

PURPOSE = "connector-oauth-state"
# Far above a real state (a few hundred characters), far below what would cost to decode.
MAX_STATE = 8192


class InvalidState(BadRequest):
    """The callback's `state` was altered, sealed by another server, or has expired."""

    code = "invalid_oauth_state"


def seal_state(
    box: SecretBox, payload: dict[str, Any], ttl_seconds: float, *, purpose: str = PURPOSE
) -> str:
    """`payload` (JSON-serialisable) sealed into a URL-safe state valid for `ttl_seconds`;
    `purpose` keeps one kind of sealed value from being taken for another."""
    if ttl_seconds <= 0:
        raise ValueError("a state needs a positive lifetime")
    return box.seal_json({"exp": time.time() + ttl_seconds, "payload": payload}, purpose)


def open_state(
    box: SecretBox, state: str, *, now: float | None = None, purpose: str = PURPOSE
) -> dict[str, Any]:
    """The payload sealed in `state`; InvalidState when it does not open or has expired."""
    if len(state) > MAX_STATE:  # it comes from the callback's query: anyone can send anything
        raise InvalidState("the authorization state is not valid; start the sign-in again")
    try:
        sealed = box.open_json(state, purpose)
    except (SecretUnreadable, ValueError):
        # ValueError: orjson's decode error, for a value that opened but is not JSON (it cannot
        # happen without the key, but an error here must stay a 400).
        raise InvalidState(
            "the authorization state is not valid; start the sign-in again"
        ) from None
    if (
        not isinstance(sealed, dict)
        or not isinstance(sealed.get("exp"), int | float)
        or not isinstance(sealed.get("payload"), dict)
    ):
        raise InvalidState("the authorization state is not valid; start the sign-in again")
    if (time.time() if now is None else now) >= sealed["exp"]:
        raise InvalidState("the authorization state has expired; start the sign-in again")
    payload: dict[str, Any] = sealed["payload"]
    return payload
