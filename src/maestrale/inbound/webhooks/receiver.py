"""The public receiving path of a webhook: no API key, the signature is the authentication.

In order, each step refusing before the next costs more:
1. the body's size (streamed with a cap: 413) and the webhook's token bucket (429 with
   Retry-After), before any database work; the webhook's settings and opened secret come from
   the process's cache (`Inbox`) when they are there;
2. an unknown or deleted webhook is a 404, an expired one a 410; the signature (constant time)
   and the timestamp's age are checked: 401, nothing runs;
3. the loop depth (`X-Maestrale-Trigger-Depth`, set on the server's own calls made by work
   that a delivery started): past `trigger_max_depth`, a 508, nothing runs;
4. replays: the same signature or event id inside the window is a 409, nothing runs (the
   replay keys' primary key decides, whichever replica sees the retry);
5. in one short transaction, the delivery row and its durable job (`inbound.delivery`, which
   the triggers handle), then the webhook's success status.
Refused deliveries (2 to 4, once the webhook is known) are recorded too, without their body, at
most `inbound_refused_rows_per_minute` per webhook and minute in a process (a flood of bad
signatures cannot fill the database); the others are counted in the log."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import orjson
from fastapi.responses import Response

from maestrale.core.auth.principal import Tenant
from maestrale.core.clock import utcnow
from maestrale.core.crypto import SecretBox
from maestrale.core.errors import (
    AppError,
    BadRequest,
    NotFound,
    PayloadTooLarge,
    TooManyRequests,
    retry_after,
)
from maestrale.core.ids import new_id
from maestrale.core.jobs.queue import JobQueue
from maestrale.core.responses import json_bytes
from maestrale.core.uow import UnitOfWork
from maestrale.inbound.webhooks.inbox import Hook, Inbox
from maestrale.inbound.webhooks.repository import ReplayKeys, WebhookDirectory
from maestrale.inbound.webhooks.service import SECRET
from maestrale.inbound.webhooks.signature import (
    Verifier,
    clean,
    event_id_of,
    field_at,
    verify,
)
from maestrale.inbound.webhooks.tables import Webhook, WebhookDelivery
from maestrale.tracing import TRIGGER_DEPTH_HEADER

log = logging.getLogger("maestrale.inbound")

DELIVERY_JOB = "inbound.delivery"
DEPTH_HEADER = TRIGGER_DEPTH_HEADER.lower()
# Headers never kept with a delivery (credentials of the caller, not the event's).
_DROPPED_HEADERS = frozenset({"authorization", "cookie", "proxy-authorization", "x-api-key"})
MAX_HEADERS_KEPT = 64
MAX_HEADER_VALUE = 2048
MAX_DEPTH_TEXT = 4


class Gone(AppError):
    status_code = 410
    code = "webhook_expired"


class Refused(AppError):
    """A delivery refused once its webhook is known: recorded (within the bound) and answered
    with a JSON body, never raised past the route (its record must commit)."""

    def __init__(self, status: str, message: str, status_code: int) -> None:
        super().__init__(message, code=status, status_code=status_code)
        self.status = status


@dataclass(frozen=True, slots=True)
class ReceiveLimits:
    max_body_bytes: int
    max_depth: int
    replay_window: int


def hook_of(row: Webhook, box: SecretBox, default_window: int) -> Hook:
    """A webhook's receiving settings, its secret opened once for the cache."""
    verifier = None
    if row.secret_sealed is not None:
        verifier = Verifier.build(
            box.open(row.secret_sealed, SECRET),
            algorithm=row.signature_hash_algorithm,
            encoding=row.signature_encoding,
            header=row.signature_header_name or "",
            signature_regex=row.signature_extractor_regex,
            timestamp_header=row.timestamp_header_name,
            timestamp_regex=row.timestamp_extractor_regex,
            payload_pattern=row.signature_payload_pattern,
            validity=row.validity_period_second,
        )
    return Hook(
        id=row.id,
        organization_id=row.organization_id,
        workspace_id=row.workspace_id,
        provider=row.provider,
        verifier=verifier,
        success_status_code=row.success_status_code or 200,
        event_type_path=row.event_type_path,
        event_id_header=row.event_id_header_name,
        expires_at=row.expires_at,
        url_verified=bool(row.url_verified),
        replay_window=row.validity_period_second or default_window,
    )


async def read_capped(chunks: AsyncIterator[bytes], declared: str | None, limit: int) -> bytes:
    """The body, refused with a 413 as soon as it passes `limit` (at once when its declared
    length does)."""
    if declared is not None and (
        not declared.isdigit() or len(declared) > 19 or int(declared) > limit
    ):
        raise PayloadTooLarge(f"a webhook delivery is at most {limit} bytes")
    body = bytearray()
    async for chunk in chunks:
        body += chunk
        if len(body) > limit:
            raise PayloadTooLarge(f"a webhook delivery is at most {limit} bytes")
    return bytes(body)


def kept_headers(headers: Mapping[str, str]) -> dict[str, str]:
    kept: dict[str, str] = {}
    for name, value in headers.items():
        if name in _DROPPED_HEADERS:
            continue
        if len(kept) >= MAX_HEADERS_KEPT:
            break
        kept[clean(name, 128)] = clean(value, MAX_HEADER_VALUE)
    return kept


def depth_of(headers: Mapping[str, str]) -> int:
    raw = headers.get(DEPTH_HEADER)
    if raw is None:
        return 0
    raw = raw.strip()
    if not raw.isascii() or not raw.isdigit() or len(raw) > MAX_DEPTH_TEXT:
        raise BadRequest(
            f"{DEPTH_HEADER} must be a small non-negative integer", code="invalid_trigger_depth"
        )
    return int(raw)


def _json(value: Any, status_code: int) -> Response:
    return json_bytes(orjson.dumps(value), status_code=status_code)


def _parsed(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return None


class Receiver:
    """One delivery's path through the checks, in the request's unit of work."""

    def __init__(
        self,
        work: UnitOfWork,
        inbox: Inbox,
        box: SecretBox,
        queue: JobQueue,
        limits: ReceiveLimits,
        *,
        wake: Callable[[], None] | None = None,
    ) -> None:
        self.work = work
        self.inbox = inbox
        self.box = box
        self.queue = queue
        self.limits = limits
        # Rings the process's worker once the delivery's job is committed (no wait for a poll).
        self.wake = wake

    async def hook(self, webhook_id: str) -> Hook:
        found, hook = self.inbox.cached(webhook_id)
        if not found:
            row = await WebhookDirectory(self.work.session).by_id(webhook_id)
            hook = None if row is None else hook_of(row, self.box, self.limits.replay_window)
            self.inbox.keep(webhook_id, hook)
        if hook is None:
            raise NotFound("no webhook receives deliveries at this URL", code="webhook_not_found")
        if hook.expires_at is not None and hook.expires_at <= utcnow():
            raise Gone("this webhook has expired")
        return hook

    async def receive(
        self,
        webhook_id: str,
        headers: Mapping[str, str],
        chunks: AsyncIterator[bytes],
    ) -> Response:
        if (wait := self.inbox.take(webhook_id)) is not None:
            raise TooManyRequests(
                "too many deliveries to this webhook; retry later",
                headers=retry_after(wait),
            )
        limit = self.limits.max_body_bytes
        body = await read_capped(chunks, headers.get("content-length"), limit)
        hook = await self.hook(webhook_id)
        try:
            return await self._checked(hook, headers, body)
        except Refused as refused:
            await self._record_refusal(hook, headers, refused)
            return _json(refused.body(), refused.status_code)

    async def _checked(self, hook: Hook, headers: Mapping[str, str], body: bytes) -> Response:
        parsed = _parsed(body)
        if hook.verifier is None:
            return await self._notion_verification(hook, parsed)
        verdict = verify(hook.verifier, headers, body, time.time())
        if verdict.refusal is not None:
            raise Refused(verdict.refusal, verdict.message, 401)
        depth = depth_of(headers)
        if depth >= self.limits.max_depth:
            raise Refused(
                "loop_cut",
                f"this delivery comes from work {depth} deliveries deep (the limit is"
                f" {self.limits.max_depth}): nothing was started",
                508,
            )
        event_id = event_id_of(hook.event_id_header, headers, parsed)
        now = utcnow()
        expires = now + timedelta(seconds=hook.replay_window)
        keys = ReplayKeys(self.work.session)
        if self.inbox.purge_due(hook.id):
            await keys.purge(hook.id, now)
        claims = [f"s:{hashlib.sha256(verdict.digest).hexdigest()}"]
        if event_id is not None:
            claims.append(f"e:{hashlib.sha256(event_id.encode()).hexdigest()}")
        for key in claims:
            if not await keys.claim(hook.id, key, expires, now):
                # Nothing of this delivery stays: the keys claimed before it are undone.
                await self.work.rollback()
                raise Refused(
                    "replayed", "this delivery was already received: nothing was started", 409
                )
        directory = WebhookDirectory(self.work.session)
        if not hook.url_verified:
            await directory.mark_verified(hook.id)
            self.work.on_commit(lambda: self.inbox.forget(hook.id))
        challenge = self._slack_challenge(hook, parsed)
        delivery = WebhookDelivery(
            id=new_id(),
            webhook_id=hook.id,
            organization_id=hook.organization_id,
            workspace_id=hook.workspace_id,
            received_at=now,
            status="url_verification" if challenge is not None else "accepted",
            verified=True,
            event_type=field_at(hook.event_type_path, headers, parsed),
            event_id=event_id,
            depth=depth,
            body=clean(body.decode("utf-8", "replace"), len(body)),
            headers=kept_headers(headers),
        )
        await directory.add_delivery(delivery)
        if challenge is not None:
            # Slack's URL check: answered with its challenge, starts nothing.
            return _json({"challenge": challenge}, 200)
        tenant = Tenant(hook.organization_id, hook.workspace_id)
        await self.queue.enqueue(
            self.work.session, DELIVERY_JOB, {"delivery_id": delivery.id}, tenant=tenant
        )
        if self.wake is not None:
            self.work.on_commit(self.wake)
        return _json({"status": "accepted", "delivery_id": delivery.id}, hook.success_status_code)

    @staticmethod
    def _slack_challenge(hook: Hook, parsed: Any) -> str | None:
        if hook.provider != "slack" or not isinstance(parsed, dict):
            return None
        if parsed.get("type") != "url_verification":
            return None
        challenge = parsed.get("challenge")
        return clean(challenge, 1024) if isinstance(challenge, str) else None

    async def _notion_verification(self, hook: Hook, parsed: Any) -> Response:
        """A webhook with no secret yet (Notion's): its first POST carries the verification
        token, which is its signing secret from then on (`get_signing_secret` returns it)."""
        token = parsed.get("verification_token") if isinstance(parsed, dict) else None
        if not isinstance(token, str) or not 0 < len(token) <= 4096:
            raise Refused(
                "bad_signature",
                "this webhook has no secret yet: it waits for its verification token",
                401,
            )
        sealed = self.box.seal(token.encode(), SECRET)
        if not await WebhookDirectory(self.work.session).set_secret(hook.id, sealed):
            raise Refused("bad_signature", "this webhook already has its secret", 401)
        self.work.on_commit(lambda: self.inbox.forget(hook.id))
        return _json({"status": "verified"}, 200)

    async def _record_refusal(
        self, hook: Hook, headers: Mapping[str, str], refused: Refused
    ) -> None:
        if not self.inbox.may_record_refusal(hook.id):
            log.warning(
                "webhook %s: delivery refused (%s), not recorded (%d this minute over the limit)",
                hook.id,
                refused.status,
                self.inbox.dropped(hook.id),
            )
            return
        try:
            depth = depth_of(headers)
        except BadRequest:
            depth = 0
        await WebhookDirectory(self.work.session).add_delivery(
            WebhookDelivery(
                id=new_id(),
                webhook_id=hook.id,
                organization_id=hook.organization_id,
                workspace_id=hook.workspace_id,
                received_at=utcnow(),
                status=refused.status,
                # Nothing of a refused delivery counts as verified, whatever step refused it.
                verified=False,
                depth=depth,
                headers=kept_headers(headers),
            )
        )
