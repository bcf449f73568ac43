"""What a process keeps in memory for the receiving path, so that a flood costs no database
work: each webhook's token bucket, its settings and opened secret for a few seconds (unknown ids
too), and the count of refused deliveries recorded this minute. Every map is bounded. One
`Inbox` per app (`dependencies.inbox_of`), never module state."""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime

from maestrale.inbound.webhooks.signature import Verifier

# Webhooks whose state a process keeps at most (least recently used dropped first).
MAX_TRACKED = 10_000


@dataclass(frozen=True, slots=True)
class Hook:
    """A webhook's receiving settings, with its secret opened (`verifier` None: no secret yet,
    a Notion webhook waiting for its verification token)."""

    id: str
    organization_id: str
    workspace_id: str
    provider: str
    verifier: Verifier | None
    success_status_code: int
    event_type_path: str | None
    event_id_header: str | None
    expires_at: datetime | None
    url_verified: bool
    replay_window: int


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


@dataclass(slots=True)
class _Refusals:
    minute: int
    recorded: int
    dropped: int


class _Bounded(OrderedDict[str, object]):
    def remember(self, key: str, value: object) -> None:
        self[key] = value
        self.move_to_end(key)
        while len(self) > MAX_TRACKED:
            self.popitem(last=False)


class Inbox:
    def __init__(self, rate: float, burst: int, ttl: float, refused_per_minute: int) -> None:
        self.rate = rate
        self.burst = burst
        self.ttl = ttl
        self.refused_per_minute = refused_per_minute
        self._buckets = _Bounded()
        self._hooks = _Bounded()
        self._refusals = _Bounded()
        self._purged = _Bounded()

    def take(self, webhook_id: str, now: float | None = None) -> float | None:
        """Take a token of the webhook's bucket: None when there was one, else the seconds
        until there is."""
        now = time.monotonic() if now is None else now
        bucket = self._buckets.get(webhook_id)
        if not isinstance(bucket, _Bucket):
            bucket = _Bucket(float(self.burst), now)
        bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.at) * self.rate)
        bucket.at = now
        self._buckets.remember(webhook_id, bucket)
        if bucket.tokens < 1:
            return (1 - bucket.tokens) / self.rate
        bucket.tokens -= 1
        return None

    def cached(self, webhook_id: str) -> tuple[bool, Hook | None]:
        """(found in the cache, the hook or None for an id known not to exist)."""
        entry = self._hooks.get(webhook_id)
        if not isinstance(entry, tuple) or entry[0] < time.monotonic():
            return False, None
        hook: Hook | None = entry[1]
        return True, hook

    def keep(self, webhook_id: str, hook: Hook | None) -> None:
        if self.ttl > 0:
            self._hooks.remember(webhook_id, (time.monotonic() + self.ttl, hook))

    def forget(self, webhook_id: str) -> None:
        self._hooks.pop(webhook_id, None)

    def may_record_refusal(self, webhook_id: str) -> bool:
        """Whether a refused delivery of the webhook is recorded: at most `refused_per_minute`
        a minute; the rest are counted (and reported with the next one recorded)."""
        minute = int(time.time() // 60)
        entry = self._refusals.get(webhook_id)
        if not isinstance(entry, _Refusals) or entry.minute != minute:
            entry = _Refusals(minute, 0, 0)
        self._refusals.remember(webhook_id, entry)
        if entry.recorded >= self.refused_per_minute:
            entry.dropped += 1
            return False
        entry.recorded += 1
        return True

    def dropped(self, webhook_id: str) -> int:
        entry = self._refusals.get(webhook_id)
        return entry.dropped if isinstance(entry, _Refusals) else 0

    def purge_due(self, webhook_id: str, every: float = 60.0) -> bool:
        """Whether the webhook's expired replay keys are due for deletion (once a minute)."""
        now = time.monotonic()
        last = self._purged.get(webhook_id)
        if isinstance(last, float) and now - last < every:
            return False
        self._purged.remember(webhook_id, now)
        return True
