"""The /v1/webhooks group of mistralai 3.x: inbound webhooks (create, list, get, delete, the
signing secret once), their public receiving URL and, as an extension, their deliveries."""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import Path, Query, Request, Response

from maestrale.core.auth.dependencies import StandardAuth
from maestrale.core.errors import error_responses
from maestrale.core.responses import json_bytes
from maestrale.core.routing import domain_router
from maestrale.inbound.webhooks.dependencies import ReceiverDep, Service
from maestrale.inbound.webhooks.schemas import WebhookCreate

router = domain_router(prefix="/webhooks", tags=["webhooks"])

WEBHOOK_ID = Path(max_length=200)


def _json(value: Any, status_code: int = 200) -> Response:
    return json_bytes(orjson.dumps(value), status_code=status_code)


@router.post(
    "/{webhook_id}/receive",
    responses={
        200: {"description": "accepted (the webhook's success status)"},
        **error_responses((401, 409, 410, 413, 429, 508)),
    },
)
async def receive_delivery(
    request: Request, receiver: ReceiverDep, webhook_id: str = WEBHOOK_ID
) -> Response:
    """The public receiving URL of a webhook, called by its provider: no API key, the
    provider's signature is the authentication. A verified delivery is recorded and handed to
    the job queue, then answered with the webhook's success status; a bad or missing signature
    or a stale timestamp is a 401, a replay (same signature or event id) a 409, a delivery
    caused by work that deliveries started too deep a 508; nothing runs for those. Slack's URL
    check is answered with its challenge; Notion's first call gives its verification token."""
    headers = {name.lower(): value for name, value in request.headers.items()}
    return await receiver.receive(webhook_id, headers, request.stream())


@router.post("", status_code=201, responses={201: {"description": "Webhook"}})
async def create_webhook(
    body: WebhookCreate, service: Service, principal: StandardAuth
) -> Response:
    """Create an inbound webhook. Settings left unset come from the provider's preset (github,
    slack, notion, linear); `custom` takes them from the request. `secret` and
    `encryption_key` are sealed at rest; `url` is where the provider must send deliveries."""
    row = await service.create(body, principal.user_id or principal.key_id)
    return _json(service.describe(row).model_dump(mode="json"), 201)


@router.get("", responses={200: {"description": "list of Webhook"}})
async def list_webhooks(service: Service) -> Response:
    """The workspace's webhooks, oldest first."""
    return _json([service.describe(r).model_dump(mode="json") for r in await service.all()])


@router.get("/{webhook_id}", responses={200: {"description": "Webhook"}})
async def get_webhook(service: Service, webhook_id: str = WEBHOOK_ID) -> Response:
    """One webhook of the workspace."""
    return _json(service.describe(await service.get(webhook_id)).model_dump(mode="json"))


@router.delete("/{webhook_id}", status_code=204)
async def delete_webhook(service: Service, webhook_id: str = WEBHOOK_ID) -> Response:
    """Delete a webhook with its deliveries: its receiving URL answers 404 from then on (on
    other replicas within `inbound_cache_ttl_seconds`), and its triggers no longer fire."""
    await service.delete(webhook_id)
    return Response(status_code=204)


@router.get(
    "/{webhook_id}/signing-secret",
    responses={200: {"description": "WebhookSigningSecret"}, **error_responses((409,))},
)
async def get_signing_secret(service: Service, webhook_id: str = WEBHOOK_ID) -> Response:
    """The webhook's signing secret, readable once: a second read is a 409
    (`signing_secret_already_read`). For a Notion webhook, the verification token Notion sent
    to its URL (409 `signing_secret_not_received` until it came)."""
    return _json((await service.signing_secret(webhook_id)).model_dump())


@router.get("/{webhook_id}/deliveries", responses={200: {"description": "DeliveryPage"}})
async def list_deliveries(
    service: Service,
    webhook_id: str = WEBHOOK_ID,
    cursor: str | None = Query(default=None, max_length=512),
    limit: int = Query(default=50, ge=1, le=200),
) -> Response:
    """Not in the SDK: the deliveries the webhook received, newest first, a cursor page at a
    time: when, verified or not, their status (accepted, url_verification, bad_signature,
    stale, replayed, loop_cut), event type and id, and what each started."""
    page = await service.deliveries_page(webhook_id, cursor, limit)
    return _json(page.model_dump(mode="json"))
