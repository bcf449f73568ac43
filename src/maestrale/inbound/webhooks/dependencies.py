"""The webhooks' services a handler is given: the workspace's service, and the receiving path's
`Receiver` with the app's `Inbox` (made on first use, kept on the app's state)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from maestrale.config import Settings
from maestrale.config.dependencies import AppSettings
from maestrale.core.app_services import app_services
from maestrale.core.auth.dependencies import CurrentTenant
from maestrale.core.crypto import SecretBox
from maestrale.core.dependencies import Db
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.jobs.worker import Wakeup
from maestrale.core.routing import Work
from maestrale.inbound.webhooks.inbox import Inbox
from maestrale.inbound.webhooks.receiver import ReceiveLimits, Receiver
from maestrale.inbound.webhooks.repository import DeliveryRepository, WebhookRepository
from maestrale.inbound.webhooks.service import WebhookService


def box_of(request: Request) -> SecretBox:
    box: SecretBox = app_services(request).secrets
    return box


def inbox_of(request: Request, settings: Settings) -> Inbox:
    """The app's inbox: one per app (so per process), made on the first delivery."""
    state = request.app.state
    inbox: Inbox | None = getattr(state, "inbound_inbox", None)
    if inbox is None:
        inbox = Inbox(
            rate=settings.inbound_rate_per_second,
            burst=settings.inbound_burst,
            ttl=settings.inbound_cache_ttl_seconds,
            refused_per_minute=settings.inbound_refused_rows_per_minute,
        )
        state.inbound_inbox = inbox
    return inbox


def base_url(request: Request, settings: Settings) -> str:
    """The base of the receiving URLs a provider is given: `public_url` when set, else the URL
    this request came to."""
    return (settings.public_url or str(request.base_url)).rstrip("/")


async def webhook_service(
    request: Request, work: Work, tenant: CurrentTenant, settings: AppSettings
) -> WebhookService:
    inbox = inbox_of(request, settings)
    return WebhookService(
        WebhookRepository(work.session, tenant),
        DeliveryRepository(work.session, tenant),
        box_of(request),
        base_url(request, settings),
        forget=inbox.forget,
        on_commit=work.on_commit,
    )


async def receiver(request: Request, work: Work, db: Db, settings: AppSettings) -> Receiver:
    limits = ReceiveLimits(
        max_body_bytes=settings.inbound_max_body_bytes,
        max_depth=settings.trigger_max_depth,
        replay_window=settings.inbound_replay_window_seconds,
    )
    wakeup: Wakeup = app_services(request).job_wakeup
    inbox = inbox_of(request, settings)
    return Receiver(work, inbox, box_of(request), JobQueue(db), limits, wake=wakeup.ring)


Service = Annotated[WebhookService, Depends(webhook_service)]
ReceiverDep = Annotated[Receiver, Depends(receiver)]
