"""The webhooks of a workspace: create (secrets sealed), list, get, delete, the signing secret
read once, and the deliveries each received. Services flush; the request commits."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import datetime

from maestrale.config.inbound import RECEIVE_PATH
from maestrale.core.clock import utcnow
from maestrale.core.crypto import SecretBox
from maestrale.core.errors import BadRequest, Conflict, NotFound
from maestrale.core.pagination import decode_cursor, encode_cursor
from maestrale.core.uow import AfterCommit
from maestrale.inbound.webhooks.repository import DeliveryRepository, WebhookRepository
from maestrale.inbound.webhooks.schemas import (
    DeliveryOut,
    DeliveryPage,
    SigningSecretOut,
    WebhookCreate,
    WebhookOut,
)
from maestrale.inbound.webhooks.tables import Webhook

# The purposes the sealed columns are bound to (`core.crypto`; `maestrale secrets reseal`).
SECRET = "webhooks.secret_sealed"
ENCRYPTION_KEY = "webhooks.encryption_key_sealed"


def new_webhook_id() -> str:
    """128 random bits: the receiving URL cannot be guessed."""
    return f"wh_{secrets.token_hex(16)}"


def webhook_out(row: Webhook, base_url: str) -> WebhookOut:
    """The SDK's Webhook of a row; its `url` is the receiving URL under `base_url` (this
    server's public base URL)."""
    return WebhookOut(
        id=row.id,
        creator_id=row.creator_id,
        organization_id=row.organization_id,
        workspace_id=row.workspace_id,
        owner_type=row.owner_type,
        provider=row.provider,
        name=row.name,
        url=base_url.rstrip("/") + RECEIVE_PATH.format(webhook_id=row.id),
        http_method="POST",
        url_verified=row.url_verified,
        signature_hash_algorithm=row.signature_hash_algorithm,
        signature_header_name=row.signature_header_name,
        validity_period_second=row.validity_period_second,
        signature_extractor_regex=row.signature_extractor_regex,
        timestamp_extractor_regex=row.timestamp_extractor_regex,
        signature_payload_pattern=row.signature_payload_pattern,
        signature_encoding=row.signature_encoding,
        success_status_code=row.success_status_code,
        event_type_path=row.event_type_path,
        expires_at=row.expires_at,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


class SecretAlreadyRead(Conflict):
    code = "signing_secret_already_read"


class SecretNotReceived(Conflict):
    code = "signing_secret_not_received"


class WebhookService:
    def __init__(
        self,
        webhooks: WebhookRepository,
        deliveries: DeliveryRepository,
        box: SecretBox,
        base_url: str,
        *,
        forget: Callable[[str], None] | None = None,
        on_commit: Callable[[AfterCommit], None] | None = None,
    ) -> None:
        self.webhooks = webhooks
        self.deliveries = deliveries
        self.box = box
        self.base_url = base_url
        # Drops a webhook from this process's receiving cache once its deletion committed.
        self.forget = forget
        self.on_commit = on_commit

    def describe(self, row: Webhook) -> WebhookOut:
        return webhook_out(row, self.base_url)

    async def create(self, body: WebhookCreate, creator_id: str) -> Webhook:
        now = utcnow()
        row = Webhook(
            id=new_webhook_id(),
            creator_id=creator_id,
            owner_type=body.owner_type,
            provider=body.provider,
            name=body.name,
            secret_sealed=self.box.seal(body.secret.encode(), SECRET) if body.secret else None,
            encryption_key_sealed=(
                self.box.seal(body.encryption_key.encode(), ENCRYPTION_KEY)
                if body.encryption_key
                else None
            ),
            url_verified=False,
            signature_hash_algorithm=body.signature_hash_algorithm,
            signature_header_name=body.signature_header_name,
            validity_period_second=body.validity_period_second,
            signature_extractor_regex=body.signature_extractor_regex,
            timestamp_extractor_regex=body.timestamp_extractor_regex,
            signature_payload_pattern=body.signature_payload_pattern,
            signature_encoding=body.signature_encoding,
            success_status_code=body.success_status_code,
            event_type_path=body.event_type_path,
            timestamp_header_name=body.timestamp_header_name,
            event_id_header_name=body.event_id_header_name,
            expires_at=body.expires_at,
            created_at=now,
            updated_at=now,
        )
        return await self.webhooks.add(row)

    async def get(self, webhook_id: str) -> Webhook:
        row = await self.webhooks.get(webhook_id)
        if row is None:
            raise NotFound(f"webhook {webhook_id} not found", param="webhook_id")
        return row

    async def all(self) -> list[Webhook]:
        return await self.webhooks.all()

    async def delete(self, webhook_id: str) -> None:
        """Delete the webhook with its deliveries and replay keys: its URL answers 404 from then
        on, and its triggers no longer fire (they check their webhook before they run)."""
        await self.webhooks.delete(await self.get(webhook_id))
        if self.forget is not None and self.on_commit is not None:
            forget = self.forget
            self.on_commit(lambda: forget(webhook_id))

    async def signing_secret(self, webhook_id: str) -> SigningSecretOut:
        """The signing secret, once: a second read is a 409 (the secret stays sealed; to get a
        new one, create a new webhook). For notion, the verification token it sent; 409 until
        it came."""
        row = await self.get(webhook_id)
        if row.secret_sealed is None:
            raise SecretNotReceived(
                "the provider has not sent its verification token to this webhook yet"
            )
        if row.secret_read_at is not None or not await self.webhooks.mark_secret_read(
            row, utcnow()
        ):
            raise SecretAlreadyRead(
                "the signing secret of this webhook was already read; it is readable once"
            )
        return SigningSecretOut(signing_secret=self.box.open(row.secret_sealed, SECRET).decode())

    async def deliveries_page(
        self, webhook_id: str, cursor: str | None, limit: int
    ) -> DeliveryPage:
        await self.get(webhook_id)
        after = _after(cursor) if cursor else None
        rows = await self.deliveries.page(webhook_id, after, limit + 1)
        more = len(rows) > limit
        rows = rows[:limit]
        last = rows[-1] if more and rows else None
        return DeliveryPage(
            data=[
                DeliveryOut(
                    id=r.id,
                    webhook_id=r.webhook_id,
                    received_at=r.received_at,
                    status=r.status,
                    verified=r.verified,
                    event_type=r.event_type,
                    event_id=r.event_id,
                    depth=r.depth,
                    started=list(r.started or []),
                    dispatched_at=r.dispatched_at,
                )
                for r in rows
            ],
            next_cursor=(
                encode_cursor({"t": last.received_at.isoformat(), "id": last.id}) if last else None
            ),
        )


def _after(cursor: str) -> tuple[datetime, str]:
    value = decode_cursor(cursor)
    try:
        at, id_ = datetime.fromisoformat(str(value["t"])), value["id"]
    except (KeyError, ValueError, TypeError):
        raise BadRequest("invalid cursor", code="invalid_cursor", param="cursor") from None
    if not isinstance(id_, str) or at.tzinfo is None:
        raise BadRequest("invalid cursor", code="invalid_cursor", param="cursor")
    return at, id_
