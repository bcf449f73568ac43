"""Accounting of a call: each hook's reservation handed back to it with the real usage and
cost, then the usage row (and, for calls with messages, the chat completion event) buffered for
the Recorder to write in the background: no database write on the request path."""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any, TypeVar

from maestrale.accounting.recorder import Recorder
from maestrale.core.clock import utcnow
from maestrale.engines.specs import ModelSpec
from maestrale.engines.types import Usage
from maestrale.gateway.call import Call, Report

log = logging.getLogger("maestrale.gateway")

E = TypeVar("E")


def cost_of(spec: ModelSpec, usage: Usage) -> float:
    """The price of `usage` on the model `spec`, from the catalog's prices per million tokens."""
    price = spec.price
    return (
        usage.prompt_tokens * price.input_per_million
        + usage.completion_tokens * price.output_per_million
    ) / 1_000_000


async def reconcile(call: Call[E], usage: Usage, cost: float) -> None:
    """Hand each hook's reservation back to that hook, once: a hook that fails is logged and
    does not keep the others from theirs."""
    held, call.reservations = call.reservations, []
    for hook, reservation in held:
        try:
            await hook.after_call(call.info, reservation, usage, cost)
        except Exception:
            log.exception("a call hook failed to reconcile its reservation")


async def account(
    recorder: Recorder,
    call: Call[E],
    status: int,
    report: Report,
    messages: list[dict[str, Any]] | None,
    tools: list[dict[str, Any]] | None,
) -> None:
    """Reconcile the call's reservations and record its usage row, and its chat completion event
    when it has `messages` (buffered; written in the background)."""
    usage = report.usage or Usage()
    cost = cost_of(call.spec, usage)
    if call.reservations:
        await reconcile(call, usage, cost)
    caller, now = call.caller, utcnow()
    latency_ms = (time.perf_counter() - call.started) * 1000
    outputs = report.outputs
    recorder.record(
        {
            "id": str(uuid.uuid4()),
            "organization_id": caller.organization_id,
            "workspace_id": caller.workspace_id,
            "key_id": caller.key_id,
            "user_id": caller.user_id,
            "service_account_id": caller.service_account_id,
            "model": call.model,
            "endpoint": call.endpoint,
            "source": call.source,
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens,
            "cost": cost,
            "audio_seconds": report.audio_seconds,
            "pages": report.pages,
            "latency_ms": latency_ms,
            "status_code": status,
            "correlation_id": call.correlation_id,
            "created_at": now,
        },
        None
        if messages is None
        else {
            "id": str(uuid.uuid4()),
            "organization_id": caller.organization_id,
            "workspace_id": caller.workspace_id,
            "key_id": caller.key_id,
            "service_account_id": caller.service_account_id,
            "correlation_id": call.correlation_id,
            "source": call.source,
            "model": call.model,
            "status_code": status,
            "latency_ms": latency_ms,
            "request_messages": messages,
            "response_messages": outputs or [],
            "enabled_tools": tools or [],
            "nb_input_tokens": usage.prompt_tokens,
            "nb_output_tokens": usage.completion_tokens,
            "nb_messages": len(messages) + len(outputs or []),
            "extra_fields": {**call.extra, "endpoint": call.endpoint},
            "created_at": now,
        },
    )
