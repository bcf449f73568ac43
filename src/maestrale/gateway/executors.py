"""Executors: one non-streamed call of an endpoint, from its JSON body to its response body,
validated, limited, accounted and answered exactly as the live endpoint would (an AppError for
the status and body it would have answered). Batch lines run them; each domain that serves such
an endpoint defines its executor, and batch lists them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from maestrale.gateway.capabilities import Capability
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller

# (gateway, caller, body, correlation_id, source, extra event fields) → response body.
Executor = Callable[
    [Gateway, Caller, dict[str, Any], str, str, Mapping[str, Any]], Awaitable[dict[str, Any]]
]


@dataclass(frozen=True, slots=True)
class Endpoint:
    """An endpoint that can run without HTTP: the capability its model needs, and its executor."""

    capability: Capability[object]
    run: Executor
