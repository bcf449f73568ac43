"""The hook before every model call: where rate and spend limits are enforced (admin issue).

`before_call` runs after the request is validated and before the engine is called; it may raise
an AppError (429 with Retry-After, a spend-limit error) and may return a reservation that
`after_call` of the same hook reconciles with what the call really used. The gateway keeps one
reservation per hook: with several hooks, each gets its own back, once, after a success, a
failure, or a refusal by a later hook (then with no usage).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from maestrale.engines.specs import ModelSpec
from maestrale.engines.types import Usage


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling, for scoping, accounting and limits."""

    organization_id: str
    workspace_id: str
    key_id: str | None = None
    user_id: str | None = None
    service_account_id: str | None = None  # a service account's key: usage is the account's


@dataclass(frozen=True, slots=True)
class CallInfo:
    caller: Caller
    spec: ModelSpec
    endpoint: str  # a capability's endpoint: chat | fim | embeddings | moderations | ...
    max_tokens_estimate: int  # worst case: estimated prompt tokens + max_tokens


class CallHook(Protocol):
    """Runs around every admitted model call (the limits are one)."""

    async def before_call(self, call: CallInfo) -> object | None:
        """Refuse the call by raising an AppError, or admit it (optionally with a reservation)."""
        ...

    async def after_call(
        self, call: CallInfo, reservation: object | None, usage: Usage, cost: float
    ) -> None:
        """Reconcile this hook's reservation with the call's real usage and cost (also after
        errors); called once for each call this hook admitted."""
        ...
