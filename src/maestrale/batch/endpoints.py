"""The endpoints batch lines can call, by path: the capability their model needs and their
executor (see `gateway.executors`). A domain that adds an endpoint batch may call lists it here.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from maestrale.classifiers.executors import (
    CHAT_CLASSIFICATIONS_ENDPOINT,
    CHAT_MODERATIONS_ENDPOINT,
    CLASSIFICATIONS_ENDPOINT,
    MODERATIONS_ENDPOINT,
)
from maestrale.completions.execute import CHAT_ENDPOINT, EMBEDDINGS_ENDPOINT, FIM_ENDPOINT
from maestrale.gateway.executors import Endpoint
from maestrale.gateway.gateway import Gateway
from maestrale.gateway.hooks import Caller

ENDPOINTS: Mapping[str, Endpoint] = MappingProxyType(
    {
        "/v1/chat/completions": CHAT_ENDPOINT,
        "/v1/fim/completions": FIM_ENDPOINT,
        "/v1/embeddings": EMBEDDINGS_ENDPOINT,
        "/v1/moderations": MODERATIONS_ENDPOINT,
        "/v1/chat/moderations": CHAT_MODERATIONS_ENDPOINT,
        "/v1/classifications": CLASSIFICATIONS_ENDPOINT,
        "/v1/chat/classifications": CHAT_CLASSIFICATIONS_ENDPOINT,
    }
)


async def execute(
    gateway: Gateway,
    caller: Caller,
    endpoint: str,
    body: dict[str, Any],
    *,
    correlation_id: str,
    source: str,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Answer one non-streamed request of `endpoint` as the live endpoint would: the response
    body, or the AppError (status and body) the endpoint would have answered."""
    return await ENDPOINTS[endpoint].run(gateway, caller, body, correlation_id, source, extra or {})
